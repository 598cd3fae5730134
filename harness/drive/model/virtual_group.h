// One TP group of virtual ranks stepped together (--backend model): each rank keeps its own
// clock, compute ops take their modelled seconds, and an all-reduce ends for every member at
// the last arrival plus the fabric's time. `run` (a fixed batch, every step alike) and `serve`
// (each step its own mixed batch) both step a group through this class, so a virtual rank's
// timeline is built one way. --inject changes a rank's segments as the real injector does
// (harness/drive/injector.cc).
#pragma once
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/virtual_hang.h"
#include "layers/cost_model.h"

namespace tpb {

// One op's modelled seconds at the profile's clock (`s`), and for a compute op the two sides
// of its roofline over the efficiency fraction, so a rank at another SM clock (--inject
// sm_clock) can stretch the FLOP side alone: s = max(flop_s, byte_s).
struct PricedOp {
  Op op = Op::count;
  double s = 0;
  double flop_s = 0, byte_s = 0;
  double fixed_s = 0;  // the profile's fixed cost per kernel x the op's kernels (in s)
  double kernels = 0;  // launches the host issues for the op (a collective: one)
  // What priced it under an engine with tables (engine_pricing.h): the table ("gemm.bf16",
  // "all_reduce.custom_graph", "elementwise", "roofline", ...) and where the query lay in it;
  // both empty when the hardware profile priced it.
  std::string table, coverage;
};

// Kernels per layer of each op (tail ops: per step), from the CUDA backend's launch plan.
using KernelCounts = std::array<double, static_cast<std::size_t>(Op::count)>;

// The kernels CudaDevice launches for query `q` (layers/cuda/plan): fused as TpModel runs a
// step without per-op stamps; the step's end (final_norm, lm_head, sample) one kernel each.
// A shape the CUDA kernels refuse (the launch plan throws) counts one kernel per compute op.
KernelCounts model_kernel_counts(const RunSpec& spec, const CostQuery& q);

// The point's all-reduce algorithm: --algo, where `auto` is NCCL's choice alone under an
// engine without a custom all-reduce (EngineProfile::custom_allreduce).
ModelAlgo point_algo(const RunSpec& spec);

// One step's ops, in the real step's order: the layer's ops (run for every layer) and the
// step's end (final_norm, lm_head, sample, sample_gather; once).
struct StepOpPlan {
  std::vector<PricedOp> layer, tail;
  double host_s = 0;  // the engine's host work before the step's first kernel, per step kind
};

// The ops of a step whose costs are `cost`, priced for a group of shape `g`: compute at
// roofline / the profile's efficiency at (phase, tp, tokens), collectives by the fabric.
// `tokens` is the step's new tokens (decode: the batch), as calibrate's grid counts them.
// Without an efficiency table for the op, the profile's achievable fractions (layers/profile/
// achievable.h) stand in for it; every compute op adds its kernels x the per-kernel cost.
// Under an engine with measured tables (RunSpec::engine_tables) they price the ops instead
// (engine_pricing.h), the attention by `rows`, the step's sequences (null: the spec's
// fixed batch).
StepOpPlan step_op_plan(const RunSpec& spec, const StepCost& cost, Phase phase, int64_t tokens,
                        const Peaks& peaks, const Fabric& fabric, ModelGroup g,
                        const KernelCounts& kernels = KernelCounts{},
                        const StepBatch* rows = nullptr);

// --inject mem_contend on a virtual rank: the byte side of its compute ops x this (a hog
// taking an equal share of the rank's memory bandwidth). An assumption, said in the results.
inline constexpr double kHogShare = 2.0;

class VirtualGroup {
 public:
  // `members`: the world ranks of the group, in group-rank order (kept by reference).
  VirtualGroup(const RunSpec& spec, const std::vector<int>& members);

  // Step `s`: the inject's host delay and jitter, `layers` layers of `plan.layer`, then
  // `plan.tail`, each rank starting from its own clock; an Op::step record bounds it.
  void step(int s, int64_t layers, const StepOpPlan& plan);

  // Every rank's clock moved to at least `t` (the group waits for its host between steps).
  void advance_to(double t);
  double latest_clock() const;

  // Members stopped by --inject hang_at_step whom no collective of the group noticed (every
  // member stopped: a group of one); a member that a peer waits for ends the job at that
  // collective instead (throw_group_hang).
  std::vector<HungRank> unnoticed_hangs() const {
    return hung_.size() == members_.size() ? hung_ : std::vector<HungRank>{};
  }

  // The segments so far, by member (rank and group rank set, group left to the caller); moved
  // out, so the group keeps stepping on empty traces.
  std::vector<RankTrace> take_traces();

 private:
  void seg(std::size_t m, Op op, int layer, int step, double dur, bool coll = false);
  void slow_down(int layer, int step);
  double noisy(std::size_t m, double dur);
  void run_ops(const std::vector<PricedOp>& ops, int layer, int step);
  void collective(const PricedOp& p, int layer, int step);
  void issue(std::size_t m, double kernels);
  bool stopped(std::size_t m) const { return stopped_[m] != 0; }

  const RunSpec& spec_;
  const std::vector<int>& members_;
  std::vector<double> t_;
  // The engine's issue clock per member (--engine): an op starts no earlier than the host has
  // issued its kernels; never ahead of t_ with the built-in engine, which issues for free.
  std::vector<double> host_;
  std::vector<double> block_;  // compute since the rank's last collective (or step start)
  std::vector<InjectSpec> inj_;
  std::vector<double> flop_stretch_;  // profile clock / the rank's --inject sm_clock (1: none)
  std::vector<double> byte_stretch_;  // kHogShare under --inject mem_contend (1: none)
  std::vector<std::mt19937_64> rng_;
  std::vector<std::mt19937_64> noise_;
  std::vector<RankTrace> traces_;
  // --inject hang_at_step: each member's place on the board (kept only when a member hangs).
  bool watch_ = false;
  std::vector<BoardPosition> pos_;
  std::vector<char> stopped_;
  std::vector<HungRank> hung_;
};

}  // namespace tpb
