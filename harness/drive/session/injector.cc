// Injection mechanics. Extra compute is real spinning on the rank's execution resource,
// never a sleep: a sleeping rank frees its core, which a slow GPU does not do.
#include "harness/drive/session/injector.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Injector::Injector(const InjectSpec& spec, Device& dev, Timeline& tl, uint64_t seed)
    : spec_(spec),
      dev_(dev),
      tl_(tl),
      rng_(seed ^ (0x51edULL + static_cast<uint64_t>(spec.rank))),
      // Host-computed ops are synchronous, so a block's stamps are final when it returns.
      live_(dev.caps().host_compute && !dev.caps().device_timer) {
  marks_.reserve(2 * (kOpsPerLayer + 2));
}

double Injector::block_compute_s() {
  const std::size_t end = tl_.size();
  std::size_t begin = end;
  while (begin > 0) {
    const Op op = tl_.op_at(begin - 1);
    if (op_is_collective(op) || op == Op::injected || op == Op::step) break;
    --begin;
  }
  if (begin == end) return 0;
  marks_.resize(2 * (end - begin));
  // Live only on the host, where an op's activity record and its stamp are the same clock
  // reads in the same slots. A still-open run (Op::compute) around the ops is not theirs.
  dev_.collect_marks(2 * begin, marks_.size(), marks_.data());
  int64_t ns = 0;
  for (std::size_t i = 0; i < marks_.size(); i += 2)
    if (tl_.op_at(begin + i / 2) != Op::compute) ns += marks_[i + 1] - marks_[i];
  return static_cast<double>(ns) * 1e-9;
}

bool Injector::slowed(Op op, Op carried, int step) const {
  return step >= 0 && spec_.slow_op != Op::count &&
         (op == spec_.slow_op || carried == spec_.slow_op);
}

// The slowed op's warm-up median, or, where its backend fused it into a neighbour and it has no
// stamp of its own, that of the stamp that carries it (the pair is slowed as one).
void Injector::calibrate_slow_op(const std::vector<SegmentRecord>& warmup) {
  if (spec_.slow_op == Op::count) return;
  for (const Op op : {spec_.slow_op, fused_into(spec_.slow_op)}) {
    std::vector<double> t;
    for (const SegmentRecord& r : warmup)
      if (r.op == op) t.push_back(r.t1 - r.t0);
    if (t.empty()) continue;
    op_extra_s_ = (spec_.slow_op_factor - 1.0) * percentile(t, 50);
    return;
  }
}

void Injector::calibrate(const std::vector<SegmentRecord>& warmup) {
  calibrate_slow_op(warmup);
  if (spec_.slowdown == 1.0) return;
  // Sum compute per (step, layer, block); block 0 ends at the attention all-reduce.
  std::vector<double> per_block[2];
  double acc[2] = {0, 0};
  int cur_step = 0, cur_layer = -1;
  auto flush = [&] {
    for (int b = 0; b < 2; ++b)
      if (acc[b] > 0) per_block[b].push_back(acc[b]);
    acc[0] = acc[1] = 0;
  };
  for (std::size_t k = 0; k < warmup.size(); ++k) {
    const SegmentRecord& r = warmup[k];
    if (r.op == Op::step || r.collective) continue;
    if (r.step != cur_step || r.layer != cur_layer) {
      flush();
      cur_step = r.step;
      cur_layer = r.layer;
    }
    // Block 0: the attention half up to its all-reduce; block 1: everything else in the layer.
    // A run of ops stamped as one (--stamps collectives) is block 0 when that all-reduce ends it.
    int block = r.op <= Op::o_proj ? 0 : 1;
    if (r.op == Op::compute)
      block = k + 1 < warmup.size() && warmup[k + 1].op == Op::allreduce_attn ? 0 : 1;
    acc[block] += r.t1 - r.t0;
  }
  flush();
  for (int b = 0; b < 2; ++b)
    extra_[b] = per_block[b].empty() ? 0.0 : (spec_.slowdown - 1.0) * percentile(per_block[b], 50);
}

void Injector::before_step(int step) {
  if (step < 0) return;  // warm-up steps stay clean: they calibrate the slowdown
  if (spec_.hang_at_step >= 0 && step >= spec_.hang_at_step) {
    // A hung rank: alive, silent, never reaching the next collective. The peers' collective
    // timeout must end the job.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (spec_.host_delay_us > 0) {
    // Host work with no device work in flight: spin without a segment, so it shows up as
    // host gap, as Python or sampling overhead would.
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double, std::micro>(spec_.host_delay_us);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  if (spec_.jitter_p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < spec_.jitter_p) {
    Scoped s(tl_, Op::injected, 0, step);
    dev_.busy_work(spec_.jitter_us * 1e-6);
  }
}

void Injector::after_block(int layer, int block, int step) {
  if (step < 0 || spec_.slowdown == 1.0) return;
  if (!live_) {
    if (extra_[block] <= 0) return;
    Scoped s(tl_, Op::injected, layer, step);
    dev_.busy_work(extra_[block]);
    return;
  }
  // Wall time this block owes, plus what earlier spins over- or undershot: a spin that was
  // descheduled across its deadline ends late, and the next one is shortened by as much, so
  // the injected total tracks (F - 1) x the measured compute over the point.
  owed_s_ += (spec_.slowdown - 1.0) * block_compute_s();
  if (owed_s_ <= 0) return;
  const double t0 = wall_s();
  {
    Scoped s(tl_, Op::injected, layer, step);
    dev_.busy_work(owed_s_);
  }
  owed_s_ -= wall_s() - t0;
}

void Injector::op_begin(Op op, Op carried, int, int step) {
  if (live_ && slowed(op, carried, step)) op_t0_ = wall_s();
}

void Injector::op_end(Op op, Op carried, int, int step) {
  if (!slowed(op, carried, step)) return;
  if (!live_) {
    if (op_extra_s_ > 0) dev_.busy_work(op_extra_s_);
    return;
  }
  // As after_block's spins: an overshoot is taken off the next one.
  const double t0 = wall_s();
  op_owed_s_ += (spec_.slow_op_factor - 1.0) * (t0 - op_t0_);
  if (op_owed_s_ <= 0) return;
  dev_.busy_work(op_owed_s_);
  op_owed_s_ -= wall_s() - t0;
}

}  // namespace tpb
