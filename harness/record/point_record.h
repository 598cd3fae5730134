// A measured point as plain data (docs/ARCHITECTURE.md, "Results contract"): the driver builds it,
// results_json.h maps it to and from JSON, and the printers read its members.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/nullable.h"
#include "harness/analysis/stats.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {

enum class PointStatus { ok, oom, skipped, error };

// `tpbench serve`: the load and the scheduler of a serving point (results/SCHEMA.md, "serve").
struct ServeParamsRecord {
  std::string load;  // "concurrency" (closed loop) | "rate" (open loop)
  double x = 0;      // the load's value
  std::optional<int64_t> concurrency;
  std::optional<double> rate;
  double burstiness = 1;
  int64_t requests = 0, warmup_requests = 0;
  std::string prompt_len, output_len, trace, scheduler;
  int64_t chunk = 0, max_batch = 0, max_step_tokens = 0;
  int64_t kv_capacity_tokens = 0, block_tokens = 0;
  double host_overhead_us = 0;
  bool lm_head = true;
  std::string slo;
  std::string clock = "virtual";  // arrivals on a clock advanced by each measured step
};

// What identifies the point: the swept axes and the resolved run shape.
struct PointParams {
  std::string phase;
  int64_t batch = 0, context = 0, prompt = 0, tp = 0;
  std::string dtype, backend, collective, topology;
  // The element types (1.16.0, base/dtype.h DTypes): present, all four, when they are not all
  // `dtype` (fp8 weights run bf16 activations and all-reduces; --kv-dtype), so points of one
  // dtype throughout keep their identity (sweep --resume).
  std::optional<std::string> weight_dtype, activation_dtype, kv_dtype, allreduce_dtype;
  // --mpi-mode with --collective mpi; absent for nccl and in results older than 1.2.0 (which
  // were all measured nonblocking).
  std::optional<std::string> mpi_mode;
  std::vector<std::string> inject;  // the --inject texts as given
  std::string model;
  int64_t layers = 0, steps = 0, warmup = 0;
  std::string tp_groups;
  // run/sweep --lm-head true: each step ended with the LM head and sampling (1.5.0); absent
  // when off, so earlier points keep their identity (sweep --resume). Serve: serve.lm_head.
  std::optional<bool> lm_head;
  // --stamps (1.9.0): "collectives" or "ops", on the backends that stamp (cpu, cuda); absent on
  // the model backend and in earlier results, whose points were all stamped per op.
  std::optional<std::string> stamps;
  std::optional<ServeParamsRecord> serve;  // serve points only
};

struct MemoryRecord {
  double need_bytes = 0, have_bytes = 0;
};

struct StepTimeRecord {
  double p50 = 0, p95 = 0, p99 = 0, mean = 0, min = 0, max = 0;
  int64_t n = 0;
};

struct PeaksRecord {
  double flops = 0, bw = 0;
  std::string source;
};

// Spread of the per-rank figures, so an imbalance shows without reading ranks[].
struct AcrossRanksRecord {
  MinMeanMax busy_fraction, useful_fraction, occupancy_sampled, host_gap_fraction, mbu, mfu,
      compute_s, wait_s, transfer_s;
};

// Serve: which parts of the late steps made the p99 ITL tail (harness/analysis/itl_attribution.h).
struct ItlSharesRecord {
  double prefill = 0, imbalance = 0, host = 0, transfer = 0, bandwidth = 0;
  std::optional<double> jitter;  // absent before 1.5.0 (it was inside bandwidth)
};
// (1.22.0) A late gap's every part, in seconds: the tail's six, and the time before its step.
struct GapPartsRecord {
  double prefill = 0, imbalance = 0, host = 0, transfer = 0, bandwidth = 0, jitter = 0,
         between_steps = 0;
};
// (1.22.0) A prompt row of a late gap's step: `tokens` of request `request`'s prompt, `cached`
// of it already in the cache (a chunk that continues it).
struct PrefillRowRecord {
  int64_t request = -1, tokens = 0, cached = 0;
};
// (1.21.0) One of the longest inter-token gaps and its largest part (analysis/itl_attribution.h).
struct LateTokenRecord {
  int64_t request = -1, token = 0, step = 0, tokens = 0;
  double gap_s = 0;
  std::string part;
  double part_s = 0;
  std::optional<int64_t> rank;            // with part imbalance: the step's late rank
  std::optional<GapPartsRecord> parts_s;  // absent before 1.22.0
  std::optional<std::vector<PrefillRowRecord>> prefilled;  // the same
  std::optional<int64_t> prefill_requests;                 // the same
  // The steps between its two tokens that did not serve the request, and the request's
  // preemptions (1.22.0)
  std::optional<int64_t> skipped_steps, preemptions;
};

struct ItlAttributionRecord {
  std::string tail;
  double threshold_s = 0;
  int64_t samples = 0;
  double excess_s = 0;
  ItlSharesRecord shares;
  double decode_step_p50_s = 0, prefill_step_p50_s = 0;
  std::string method;
  std::optional<std::vector<LateTokenRecord>> worst;  // absent before 1.21.0
};

// Where a point's idle (host_gap_fraction) falls, and what the idle inside its steps is on
// this device: "host_work" (the CPU backend: the harness between ops), "kernel_boundaries"
// (a CUDA-graph replay, or eager launches whose records show the launches queued ahead),
// "launches" (eager launches whose records show the device waiting for them),
// "launches_or_kernel_boundaries" (eager launches without launch records) or "unattributed".
// launches_fraction and kernel_boundaries_fraction split the gaps before ops whose launch was
// recorded (CUPTI's API records on CUDA) at the launch call's return.
struct IdleSplitRecord {
  double in_steps_fraction = 0, between_steps_fraction = 0;
  std::string in_steps_cause, basis;
  std::optional<double> launches_fraction, kernel_boundaries_fraction;  // 1.18.0; see above
};

struct MetricsRecord {
  StepTimeRecord step_time_s;
  double tokens_per_s = 0;
  double mbu = 0, mfu = 0, mbu_compute = 0, mfu_compute = 0, mfu_ceiling = 0;
  std::optional<double> mfu_ceiling_ops;  // absent in results written before it existed
  double intensity = 0, ridge = 0, roofline_fraction = 0;
  double busy_fraction = 0, useful_fraction = 0, occupancy_sampled = 0, host_gap_fraction = 0;
  std::optional<IdleSplitRecord> idle_split;  // absent in results written before it existed
  PeaksRecord peaks;
  AcrossRanksRecord across_ranks;
  // Serve points: vLLM's benchmark metrics, on the virtual clock (results/SCHEMA.md, "serve").
  // The distributions and the goodput are serve's own types (harness/serve/serve_metrics.h).
  std::optional<LatencyStats> ttft_s, ttft_admitted_s, tpot_s, itl_s, e2el_s;
  std::optional<LatencyStats> queue_s, decode_s;  // absent before 1.22.0
  std::optional<double> output_tokens_per_s, total_tokens_per_s, request_throughput;
  std::optional<Goodput> goodput;
  std::optional<CostPerMtok> cost_per_mtok;  // 1.25.0, with a price only (serve_metrics.h)
  std::optional<ItlAttributionRecord> itl_attribution;
};

struct CostRecord {
  std::string scope;
  double flops = 0, bytes_read = 0, bytes_written = 0, weight_bytes = 0, kv_read_bytes = 0,
         kv_write_bytes = 0, activation_bytes = 0, comm_bytes = 0;
  int64_t collectives_per_step = 0;
  double tokens = 0;
};

struct OpRecord {
  std::string op;
  double time_s_per_step = 0, share_of_step = 0;
  // The op's cost-model work per step; absent when the cost model does not list the op.
  std::optional<double> bytes_per_step, flops_per_step, achieved_bw, mbu;
  // --backend model under an engine with measured tables (1.24.0): the table that priced the
  // op ("gemm.bf16", "decode_attention.bf16", "all_reduce.custom_graph", "elementwise", "in
  // attention", "roofline", "fabric") and where its queries lay (exact, interpolated,
  // extrapolated; rule, fused, roofline, fabric: no measured row), the worst over the steps.
  std::optional<std::string> priced_by, table_coverage;
};

// What priced each op of a modelled point under an engine with tables: op name -> the table
// and the worst coverage over its steps (harness/drive/model/engine_pricing.h fills it).
struct OpPricing {
  std::string table, coverage;
};
using OpPricingMap = std::map<std::string, OpPricing>;

struct SkewRecord {
  double p50 = 0, p95 = 0, max = 0;
};

struct CollectivesRecord {
  int64_t count = 0;
  SkewRecord skew_s;
  double wait_fraction = 0, transfer_s_total = 0, wait_s_total = 0;
  // The skew's clock uncertainty (the worst pair of ranks' offset and stamp conversion errors)
  // and the multi-rank instances whose arrival order lies within it (analysis.h).
  std::optional<double> skew_uncertainty_s;
  std::optional<int64_t> unresolved_arrivals;
};

// What the --inject mem_contend bandwidth hog moved during the measured steps.
struct MemContendRecord {
  std::string where;
  int64_t buffer_bytes = 0;
  double bytes_moved = 0, GBps = 0;
};

// The rank's own thread over the measured steps: time off a core means time-slicing.
struct HostThreadRecord {
  double wall_s = 0, cpu_s = 0, descheduled_fraction = 0;
  int64_t involuntary_switches = 0;
};

struct RankClockRecord {
  double offset_start_s = 0, offset_end_s = 0, uncertainty_s = 0, drift_ppm = 0;
  // The rank's device stamps against its host clock (Device::mark_uncertainty_s): half the
  // widest calibration bracket of the point plus the timer's step; 0 for host-clock stamps.
  std::optional<double> device_uncertainty_s;
};

struct RankRecord {
  int64_t rank = 0;
  std::string host, device;
  std::optional<int64_t> node;  // world rank of its host's first rank (MPI_COMM_TYPE_SHARED)
  int64_t group = 0, group_rank = 0;
  // From the analysis of the gathered timelines.
  double wall_s = 0, compute_s = 0, wait_s = 0, transfer_s = 0;
  // The injected share of compute_s (1.6.0), on a rank whose --inject adds work (slowdown,
  // jitter) only: what compute_s would be on its own is compute_s - injected_s.
  std::optional<double> injected_s;
  double busy_fraction = 0, useful_fraction = 0, host_gap_fraction = 0, occupancy_sampled = 0;
  double step_time_p50_s = 0;
  double mbu = 0, mfu = 0, mbu_compute = 0, mfu_compute = 0;
  int64_t arrived_last = 0, collectives = 0, clock_condition_violations = 0;
  std::optional<double> caused_wait_s;  // 1.20.0: the others' wait where it entered last
  // What the rank measured about itself.
  nlohmann::ordered_json inject;  // the rank's parsed --inject (config's inject_to_json)
  std::optional<MemContendRecord> mem_contend;
  std::optional<HostThreadRecord> host_thread;
  MemoryRecord memory;
  RankClockRecord clock;
  // Device-specific and open-ended (NVML fields, sampling, clock locks): kept as the telemetry
  // code wrote it rather than typed here, so a new counter needs no change to the record.
  nlohmann::ordered_json telemetry;
  // What the rank's backend chose at run time (Device::kernel_choices; 1.10.0), where it chose.
  std::optional<std::vector<std::string>> kernel_choices;
};

// Why the straggler is late (harness/analysis/straggler_cause.h; 1.14.0): where its extra time
// per step falls against its group's, and its own counters against theirs.
struct StragglerCauseRecord {
  int64_t rank = -1;  // the rank analysed: straggler.costliest_rank
  std::string kind, text;
  double compute_excess_s = 0, outside_ops_excess_s = 0;
  std::optional<double> memory_bound_ratio, flop_bound_ratio;
  std::optional<std::string> top_op;
  double top_op_share = 0;
  std::vector<std::string> evidence;
};

struct StragglerRecord {
  // null where no rank's late arrivals lead by more than the clock uncertainty (`reason`).
  Nullable<int64_t> rank;
  double arrived_last_share = 0, excess_compute_fraction = 0;
  std::string median;  // which median "excess" is measured against
  // (1.20.0) The share of its group's wait spent in the collectives it entered last, and the
  // rank with the largest such share: where the group's waiting comes from.
  std::optional<double> caused_wait_share, costliest_share;
  std::optional<int64_t> costliest_rank;
  std::optional<StragglerCauseRecord> cause;
  // The named rank's median lead over the next arrival where it entered last, compared with
  // collectives.skew_uncertainty_s; `reason` says why no rank is named.
  std::optional<double> lead_s;
  std::optional<std::string> reason;
};

struct ClockSyncRecord {
  std::string method;
  double max_offset_s = 0, max_uncertainty_s = 0, drift_ppm = 0;
  int64_t clock_condition_violations = 0;
  std::vector<double> offsets_s;  // per rank, at the start
};

// run --check at TP > 1 (1.12.0): the sharded step against the unsharded tp = 1 step on the
// same device, a check of the split and the all-reduce beside the host reference's.
struct ShardedCheckRecord {
  double max_abs_err = 0, tolerance = 0;
  bool passed = false;
  std::optional<bool> tokens_match;  // with --lm-head
};

struct VerificationRecord {
  double max_abs_err = 0, tolerance = 0;
  bool passed = false;
  std::string reference;
  std::optional<bool> tokens_match;  // run --lm-head: every sampled id equal (1.5.0)
  // run --check against the host fp64 layer stack (1.12.0); absent for serve --check.
  std::optional<double> max_abs_ref;
  std::optional<std::string> tolerance_rule;
  std::optional<int64_t> tokens_near_tie;                  // with --lm-head
  std::optional<ShardedCheckRecord> sharded_vs_unsharded;  // TP > 1
};

struct SamplesRecord {
  std::vector<double> step_time_s, skew_s;  // raw, so percentiles can be recomputed
};

// A serving point's run: how many steps and requests, what the queue and the KV cache did, and
// where the per-step and per-request logs are.
struct ServeRunRecord {
  int64_t steps = 0, requests_completed = 0, requests_rejected = 0, preemptions = 0;
  double duration_s = 0;
  int64_t max_running = 0, max_waiting = 0;
  int64_t kv_capacity_tokens = 0, kv_peak_tokens = 0;
  int64_t kv_full_steps = 0;  // steps planned with the cache full and requests waiting
  int64_t prefill_steps = 0;  // steps with any prefill tokens
  double busy_s = 0;          // sum of the steps' durations (the virtual clock without idle gaps)
  double host_gap_s = 0;      // sum over steps of the group's host gap (max over ranks)
  std::string steps_file, requests_file;
  int64_t token_times_limit = 0;  // token times kept per request in the requests log
  // Sums over the completed measured requests (vLLM's totals); absent before 1.13.0.
  std::optional<int64_t> input_tokens, output_tokens;
};

// Which hosts each TP group spans: a group over several hosts puts its collectives on the
// links between them.
struct TpGroupHostsRecord {
  int64_t group = 0;
  std::vector<int64_t> ranks;
  std::vector<std::string> hosts;
};
struct TpPlacementRecord {
  int64_t hosts = 1;
  bool crosses_hosts = false;  // some TP group spans more than one host
  std::vector<TpGroupHostsRecord> groups;
};

// One point. Only params, status and reason are always there: an oom point adds memory, an ok
// point the measured blocks; a block that was not written stays std::nullopt.
struct PointRecord {
  PointParams params;
  PointStatus status = PointStatus::ok;
  std::string reason;
  std::optional<MemoryRecord> memory;  // oom: what the plan needed and had
  std::optional<MetricsRecord> metrics;
  std::optional<CostRecord> cost;
  std::optional<std::vector<OpRecord>> ops;
  std::optional<CollectivesRecord> collectives;
  std::optional<std::vector<RankRecord>> ranks;
  std::optional<StragglerRecord> straggler;
  std::optional<ClockSyncRecord> clock_sync;
  std::optional<VerificationRecord> verification;  // with --check only
  std::optional<std::vector<std::string>> warnings;
  std::optional<SamplesRecord> samples;
  std::optional<std::string> trace;       // the trace's name inside the results folder
  std::optional<bool> memory_exhaustion;  // a sweep's first point that did not fit
  std::optional<ServeRunRecord> serve;    // serve points only
  std::optional<TpPlacementRecord> tp_placement;
};

// A point as the driver hands it over: the record and, when the spec asks for one, its trace
// document, which the results writer stores under the record's `trace` name.
struct PointOutcome {
  PointRecord record;
  std::optional<nlohmann::ordered_json> trace;
};

const char* point_status_name(PointStatus s);

}  // namespace tpb
