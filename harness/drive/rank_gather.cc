// Ranks run the same binary on the same kind of machine, so a trivially copyable struct of
// fixed-width fields reads back on rank 0 as it was written.
#include "harness/drive/rank_gather.h"

#include <cstring>
#include <type_traits>

#include "harness/mpi/world.h"

namespace tpb {

namespace {

// The fixed numeric part of a RankSample.
struct RankFixed {
  int64_t rank = 0, group = 0, group_rank = 0, node = 0;
  int64_t is_verifier = 0, passed = 0, tokens_checked = 0, tokens_match = 0;
  double max_abs_err = 0, tolerance = 0;
  VerifySample verify;
  MemoryRecord memory;
  RankClockRecord clock;
  int64_t has_host_thread = 0;
  HostThreadRecord host_thread;
  int64_t has_mem_contend = 0, mem_contend_buffer_bytes = 0;
  double mem_contend_bytes_moved = 0, mem_contend_GBps = 0;
};
static_assert(std::is_trivially_copyable_v<RankFixed>);

RankFixed fixed_part(const RankSample& s) {
  const RankRecord& r = s.rank;
  RankFixed f;
  f.rank = r.rank;
  f.group = r.group;
  f.group_rank = r.group_rank;
  f.node = r.node.value_or(0);
  f.is_verifier = s.is_verifier;
  f.passed = s.passed;
  f.tokens_checked = s.tokens_match.has_value();
  f.tokens_match = s.tokens_match.value_or(false);
  f.max_abs_err = s.max_abs_err;
  f.tolerance = s.tolerance;
  f.verify = s.verify;
  f.memory = r.memory;
  f.clock = r.clock;
  f.has_host_thread = r.host_thread.has_value();
  if (r.host_thread) f.host_thread = *r.host_thread;
  f.has_mem_contend = r.mem_contend.has_value();
  if (r.mem_contend) {
    f.mem_contend_buffer_bytes = r.mem_contend->buffer_bytes;
    f.mem_contend_bytes_moved = r.mem_contend->bytes_moved;
    f.mem_contend_GBps = r.mem_contend->GBps;
  }
  return f;
}

RankSample from_fixed(const RankFixed& f) {
  RankSample s;
  RankRecord& r = s.rank;
  r.rank = f.rank;
  r.group = f.group;
  r.group_rank = f.group_rank;
  r.node = f.node;
  s.is_verifier = f.is_verifier != 0;
  s.passed = f.passed != 0;
  if (f.tokens_checked) s.tokens_match = f.tokens_match != 0;
  s.max_abs_err = f.max_abs_err;
  s.tolerance = f.tolerance;
  s.verify = f.verify;
  r.memory = f.memory;
  r.clock = f.clock;
  if (f.has_host_thread) r.host_thread = f.host_thread;
  if (f.has_mem_contend)
    r.mem_contend = MemContendRecord{"", f.mem_contend_buffer_bytes, f.mem_contend_bytes_moved,
                                     f.mem_contend_GBps};
  return s;
}

}  // namespace

std::vector<RankSample> gather_rank_samples(MPI_Comm comm, const RankSample& mine, int root) {
  const RankFixed f = fixed_part(mine);
  const auto fixed = gather_bytes(comm, &f, sizeof f, root);
  const RankRecord& r = mine.rank;
  const auto hosts = gather_strings(comm, r.host, root);
  const auto devices = gather_strings(comm, r.device, root);
  const auto wheres = gather_strings(comm, r.mem_contend ? r.mem_contend->where : "", root);
  // The inject and telemetry blocks are open-ended JSON (telemetry differs by device), so
  // they travel as their JSON text; nlohmann prints doubles round-trip exact.
  const auto injects = gather_strings(comm, r.inject.dump(), root);
  const auto telemetry = gather_strings(comm, r.telemetry.dump(), root);
  const auto choices = gather_strings(
      comm, r.kernel_choices ? nlohmann::ordered_json(*r.kernel_choices).dump() : "", root);
  std::vector<RankSample> out;
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    RankFixed g;
    std::memcpy(&g, fixed[i].data(), sizeof g);
    RankSample s = from_fixed(g);
    s.rank.host = hosts[i];
    s.rank.device = devices[i];
    if (s.rank.mem_contend) s.rank.mem_contend->where = wheres[i];
    s.rank.inject = nlohmann::ordered_json::parse(injects[i]);
    s.rank.telemetry = nlohmann::ordered_json::parse(telemetry[i]);
    if (!choices[i].empty())
      s.rank.kernel_choices =
          nlohmann::ordered_json::parse(choices[i]).get<std::vector<std::string>>();
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<RankTrace> gather_rank_traces(MPI_Comm comm, const std::vector<SegmentRecord>& mine,
                                          const std::vector<RankSample>& samples, int root) {
  const auto bytes = gather_bytes(comm, mine.data(), mine.size() * sizeof(SegmentRecord), root);
  std::vector<RankTrace> traces;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    RankTrace t;
    t.rank = static_cast<int>(i);
    t.group = static_cast<int>(samples[i].rank.group);
    t.group_rank = static_cast<int>(samples[i].rank.group_rank);
    t.segs.resize(bytes[i].size() / sizeof(SegmentRecord));
    std::memcpy(t.segs.data(), bytes[i].data(), t.segs.size() * sizeof(SegmentRecord));
    traces.push_back(std::move(t));
  }
  return traces;
}

}  // namespace tpb
