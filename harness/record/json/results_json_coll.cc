// The collectives run's records, the results' context and diagnose's verdicts, mapped by the
// visitor of results_json_visit.h (field lists in schema order, one line per field).
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "base/errors.h"
#include "harness/record/json/json_number.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_json_visit.h"

namespace tpb {

namespace {

template <class V, Is<CollParamsRecord> R>
void fields(V& v, R& r) {
  v("kind", r.kind);
  v("op", r.op);
  v("dtype", r.dtype);
  v("bytes", r.bytes);
  v("count", r.count);
  v("ranks", r.ranks);
  v("inplace", r.inplace);
  v("root", r.root);
  v("collective", r.collective);
  v("backend", r.backend);
  v("topology", r.topology);
  v("iters", r.iters);
  v("warmup_iters", r.warmup_iters);
  v("average", r.average);
  v("mpi_mode", r.mpi_mode);
  v("model", r.model);
}

template <class V, Is<CollModelRecord> R>
void fields(V& v, R& r) {
  v("algo_asked", r.algo_asked);
  v("algo", r.algo);
  v("protocol", r.protocol);
  v("nodes", r.nodes);
  v("gpus_per_node", r.gpus_per_node);
  v("latency_s", r.latency_s);
  v("algbw_GBps", r.algbw_GBps);
  v("source", r.source);
}

template <class V, Is<CollOverRanksRecord> R>
void fields(V& v, R& r) {
  v("rank0", r.rank0);
  v("avg", r.avg);
  v("min", r.min);
  v("max", r.max);
}

template <class V, Is<CollTimeRecord> R>
void fields(V& v, R& r) {
  v("mean", r.mean);
  v("p50", r.p50);
  v("p99", r.p99);
  v("min", r.min);
  v("max", r.max);
  v("iter_mean", r.iter_mean);
  v("n", r.n);
  v("over_ranks", r.over_ranks);
}

// The keys name the metrics they define.
template <class V, Is<CollDefinitionsRecord> R>
void fields(V& v, R& r) {
  v("time_s.mean", r.time_mean);
  v("time_s.p50/p99", r.time_percentiles);
  v("algbw_GBps", r.algbw);
  v("busbw_GBps", r.busbw);
}

template <class V, Is<CollBaselineRecord> R>
void fields(V& v, R& r) {
  v("time_s", r.time_s);
  v("ratio", r.ratio);
  v("what", r.what);
}

template <class V, Is<CollMetricsRecord> R>
void fields(V& v, R& r) {
  v("time_s", r.time_s);
  v("algbw_GBps", r.algbw_GBps);
  v("busbw_GBps", r.busbw_GBps);
  v("busbw_factor", r.busbw_factor);
  v("wrong", r.wrong);
  v("definitions", r.definitions);
  v("baseline", r.baseline);
}

template <class V, Is<CollCollectivesRecord> R>
void fields(V& v, R& r) {
  v("count", r.count);
  v("skew_s", r.skew_s);
  v("wait_fraction", r.wait_fraction);
  v("wait_s_total", r.wait_s_total);
  v("transfer_s_total", r.transfer_s_total);
}

template <class V, Is<CollLagRecord> R>
void fields(V& v, R& r) {
  v("mean", r.mean);
  v("p50", r.p50);
  v("p95", r.p95);
  v("max", r.max);
}

template <class V, Is<CollRankRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("host", r.host);
  v("arrival_lag_s", r.arrival_lag_s);
  v("wait_s", r.wait_s);
  v("transfer_s", r.transfer_s);
  v("arrived_last", r.arrived_last);
  v("clock_condition_violations", r.clock_condition_violations);
  v("time_s", r.time_s);
  v("wrong", r.wrong);
}

template <class V, Is<CollStragglerRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("arrived_last_share", r.arrived_last_share);
}

template <class V, Is<CollClockSyncRecord> R>
void fields(V& v, R& r) {
  clock_sync_fields(v, r);
}

template <class V, Is<CollSamplesRecord> R>
void fields(V& v, R& r) {
  v("iter_time_s", r.iter_time_s);
  v("skew_s", r.skew_s);
}

template <class V, Is<CollPointRecord> R>
void fields(V& v, R& r) {
  v("params", r.params);
  v("status", r.status);
  v("reason", r.reason);
  v("metrics", r.metrics);
  v("collectives", r.collectives);
  v("ranks", r.ranks);
  v("straggler", r.straggler);
  v("clock_sync", r.clock_sync);
  v("samples", r.samples);
}

template <class V, Is<CollSummaryRecord> R>
void fields(V& v, R& r) {
  v("sizes", r.sizes);
  v("wrong_total", r.wrong_total);
  v("avg_busbw_GBps", r.avg_busbw_GBps);
}

template <class V, Is<VersionsRecord> R>
void fields(V& v, R& r) {
  v("tpbench", r.tpbench);
  v("git_sha", r.git_sha);
  v("mpi", r.mpi);
  v("blas", r.blas);
  v("compiler", r.compiler);
  v("backends", r.backends);
}

template <class V, Is<AttentionLibrariesRecord> R>
void fields(V& v, R& r) {
  v("native", r.native);
  v("cudnn_compiled", r.cudnn_compiled);
  v("cudnn_frontend_version", r.cudnn_frontend_version);
  v("cudnn_runtime_version", r.cudnn_runtime_version);
  v("cudnn_runtime_note", r.cudnn_runtime_note);
}

template <class V, Is<DeviceContextRecord> R>
void fields(V& v, R& r) {
  v("backend", r.backend);
  v("name", r.name);
  v("device_timer", r.device_timer);
  v("timer_resolution_s", r.timer_resolution_s);
  v("memory_bytes", r.memory_bytes);
  v("llc_bytes", r.llc_bytes);
  v("llc_source", r.llc_source);
}

template <class V, Is<RankDeviceRecord> R>
void fields(V& v, R& r) {
  v("device_index", r.device_index);
  v("pci_bus_id", r.pci_bus_id);
  v("cuda_visible_devices", r.cuda_visible_devices);
  v("numa_node", r.numa_node);
  v("cpu_set", r.cpu_set);
  v("picked_from", r.picked_from);
  v("before_mpi_init", r.before_mpi_init);
  v("shared", r.shared);
  v("nccl_transports", r.nccl_transports);
  v("reasons", r.reasons);
}

template <class V, Is<ContextRankRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("host", r.host);
  v("local_rank", r.local_rank);
  v("placement", r.placement);
  v("cpus_online", r.cpus_online);
  v("local_size", r.local_size);
  v("node", r.node);
  v("device_binding", r.device_binding);
}

template <class V, Is<HostRanksRecord> R>
void fields(V& v, R& r) {
  v("host", r.host);
  v("node", r.node);
  v("ranks", r.ranks);
}

template <class V, Is<TopologyContext> R>
void fields(V& v, R& r) {
  v("preset", r.choice.preset);
  v("text", r.choice.text);
  v("family", r.choice.family);
  v("description", r.choice.description);
  v("launcher_env", r.choice.launcher_env);
  v("process_env", r.choice.process_env);
  v("env_seen", r.env_seen);
  v("detected_preset", r.detected_preset);
  v("gpu_topology_matrix", r.gpu_topology_matrix);
}

template <class V, Is<PeaksUsedRecord> R>
void fields(V& v, R& r) {
  v("dtype", r.dtype);
  v("hardware", r.hardware);
  v("flops", r.flops);
  v("bw", r.bw);
  v("source", r.source);
}

template <class V, Is<RunContextRecord> R>
void fields(V& v, R& r) {
  v("date", r.date);
  v("argv", r.argv);
  v("versions", r.versions);
  v("hosts", r.hosts);
  v("world_size", r.world_size);
  v("ranks_per_core", r.ranks_per_core);
  v("oversubscribed", r.oversubscribed);
  v("device", r.device);
  v("llc_bytes", r.llc_bytes);
  v("env", r.env);
  v("ranks", r.ranks);
  v("topology", r.topology);
  v("peaks", r.peaks);
  v("host_ranks", r.host_ranks);
  v("links", r.links);
  v("fabric", r.fabric);
  v("mpi_thread_level", r.mpi_thread_level);
}

template <class V, Is<Verdict> R>
void fields(V& v, R& r) {
  v("order", r.order);
  v("topic", r.topic);
  v("level", r.level);
  v("text", r.text);
  v("code", r.code);
}

template <class V, Is<PointDiagnosis> R>
void fields(V& v, R& r) {
  v("point", r.point);
  v("params", r.params);
  v("status", r.status);
  v("verdicts", r.verdicts);
}

}  // namespace

TPB_RECORD_JSON(CollPointRecord, coll_point_from_json, "collectives point")
TPB_RECORD_JSON(CollSummaryRecord, coll_summary_from_json, "collectives summary")
TPB_RECORD_JSON(RunContextRecord, context_from_json, "context")
TPB_RECORD_JSON(std::vector<Verdict>, verdicts_from_json, "diagnosis")

std::optional<CollPointRecord> try_coll_point_from_json(const oj& j) {
  return try_read_record<CollPointRecord>(j, "collectives point");
}
// Written only: a collectives point's params are read back inside the point, and the versions
// are what `tpbench info` prints.
oj to_json(const CollParamsRecord& p) {
  return Writer::encode(p);
}
oj to_json(const VersionsRecord& v) {
  return Writer::encode(v);
}
oj to_json(const AttentionLibrariesRecord& a) {
  return Writer::encode(a);
}
// The curve as the results hold it (to_json's null memory_wall), so a file's curve reads as it
// was written.
oj to_json(const std::vector<FileDiagnosis>& files) {
  oj out = oj::array();
  for (const FileDiagnosis& f : files) {
    out.push_back({{"file", f.file},
                   {"points", Writer::encode(f.points)},
                   {"across_points", Writer::encode(f.across_points)}});
    if (f.curve) out.back()["curve"] = to_json(*f.curve);
  }
  return {{"files", out}};
}
const char* coll_summary_section() {
  return "collectives_summary";
}

}  // namespace tpb
