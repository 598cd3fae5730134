// `tpbench collectives`: a message-size sweep in nccl-tests' shape (-b/-e/-f, -w, -n), with
// per-iteration percentiles, per-rank arrival skew and wait, and the same results family as
// `run` when --out is given.
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>

#include "base/mpi_check.h"
#include "collectives/topology_presets.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/measure/collectives_measure.h"
#include "harness/mpi/agreement.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/json/nccl_tests_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/report/collectives_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// Every rank's result for one size, on rank 0 (empty elsewhere).
std::vector<CollRankResult> gather_results(const World& w, const CollRankResult& mine) {
  const double scalars[6] = {mine.loop_s,   mine.baseline_s,    static_cast<double>(mine.wrong),
                             mine.offset_s, mine.uncertainty_s, mine.drift_ppm};
  auto recs = gather_bytes(w.comm, mine.iters.data(), mine.iters.size() * sizeof(SegmentRecord), 0);
  auto vals = gather_bytes(w.comm, scalars, sizeof(scalars), 0);
  std::vector<CollRankResult> all;
  for (std::size_t r = 0; r < recs.size(); ++r) {
    CollRankResult x;
    x.iters.resize(recs[r].size() / sizeof(SegmentRecord));
    std::memcpy(x.iters.data(), recs[r].data(), recs[r].size());
    double v[6];
    std::memcpy(v, vals[r].data(), sizeof(v));
    x.loop_s = v[0], x.baseline_s = v[1], x.wrong = static_cast<int64_t>(v[2]);
    x.offset_s = v[3], x.uncertainty_s = v[4], x.drift_ppm = v[5];
    all.push_back(std::move(x));
  }
  return all;
}

// Rank 0 (every rank collects the context): the results folder when --out is given, the
// oversubscription warning and the table header.
std::optional<ResultsWriter> open_results(const CliResult& cli, const World& w,
                                          const CollectivesSpec& s, const Device& dev) {
  auto context = collect_context(w, cli.argv, dev.caps(), built_backends());
  std::optional<ResultsWriter> writer;
  if (w.rank != 0) return writer;
  context.topology = topology_context(s.topology, s.collective, s.config_dir);
  if (!s.out.empty()) {
    writer.emplace(s.out, to_json(context), coll_spec_to_json(s));
    report_archive(*writer);
  }
  if (context.oversubscribed)
    std::cerr << "warning: " << context.ranks_per_core
              << " ranks per core: timings are time-sliced\n";
  std::cout << coll_table_header(s, w.size) << std::flush;
  return writer;
}

}  // namespace

void write_nccl_tests_file(const CollectivesSpec& s, const CliResult& cli, int ranks,
                           const std::string& start_time,
                           const std::vector<CollPointRecord>& points) {
  if (s.output_file.empty()) return;
  const NcclTestsRun run{cli.argv, start_time, nccl_tests_time_now(), ranks};
  write_nccl_tests_json(s.output_file, nccl_tests_json(s, run, points, coll_summary(points)));
  std::cout << "# nccl-tests JSON: " << s.output_file << "\n" << std::flush;
}

int verb_collectives(const CliResult& cli, const World& w) {
  CollectivesSpec s;
  std::unique_ptr<Device> dev;
  agree(w.comm, [&] {
    s = resolve_coll_spec(cli.config, w.size, config_dir_for(cli.config));
    if (w.rank == 0 && !s.out.empty()) ensure_writable_dir(s.out);
    // Refused before the sweep, on every rank together, not after it on rank 0 alone.
    if (w.rank == 0 && !s.output_file.empty()) check_nccl_tests_path(s.output_file);
    if (s.collective == "model") return;  // virtual ranks: no device
    DeviceOptions o;
    o.backend = s.backend;
    o.local_rank = w.local_rank;
    o.local_size = w.local_size;
    dev = make_device(o);
    bool ok = false;
    for (DType t : dev->caps().dtypes) ok = ok || t == s.dtype;
    if (!ok)
      throw BadInput(std::string("--dtype: the ") + s.backend + " backend has no " +
                     dtype_name(s.dtype));
  });
  if (s.collective == "model") return verb_model_collectives(cli, w, s);
  std::optional<ResultsWriter> writer = open_results(cli, w, s, *dev);
  std::vector<std::string> hosts = gather_strings(w.comm, w.host, 0);
  auto coll = make_measured_collective(s, w, *dev);
  std::vector<CollPointRecord> points;
  const std::string start_time = nccl_tests_time_now();
  int64_t last_bytes = -1;
  for (int64_t size : s.sizes) {
    const CollCounts c = coll_counts(s.kind, size, s.dtype, w.size);
    // Sizes below one element per rank, or rounding onto the previous size, add nothing.
    if (c.bytes == 0 || c.bytes == last_bytes) continue;
    last_bytes = c.bytes;
    for (bool inplace : s.halves) {
      // The measurement and the record read the half from the spec's `inplace`.
      CollectivesSpec half = s;
      half.inplace = inplace;
      const CollRankResult mine = measure_collective(half, c, w, *dev, coll.get());
      const auto all = gather_results(w, mine);
      if (w.rank != 0) continue;
      points.push_back(coll_point(half, c, all, hosts));
      if (writer) writer->add_record(points.back());
    }
    if (w.rank == 0)
      std::cout << coll_table_row(coll_size_rows(points).back(), s.baseline) << std::flush;
  }
  int64_t wrong = w.rank == 0 ? finish_coll_sweep(s.out, points, writer ? &*writer : nullptr) : 0;
  if (w.rank == 0) write_nccl_tests_file(s, cli, w.size, start_time, points);
  // A wrong value is a failed run, as in nccl-tests: every rank exits with the same code.
  TPB_MPI_CHECK(MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, w.comm));
  return wrong == 0 ? 0 : static_cast<int>(ExitCode::internal);
}

}  // namespace tpb
