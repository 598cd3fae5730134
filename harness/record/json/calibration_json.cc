// Each record lists its fields once (results_json_visit.h); the writer walks that list, and so
// does a reader of its own that keeps the path it is at, because a calibration.json read back
// (`calibrate --from`) may come from another machine or version and a bad field is named by it.
#include "harness/record/json/calibration_json.h"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>
#include <type_traits>

#include "base/errors.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_json_visit.h"
#include "harness/record/json/results_writer.h"

namespace tpb {

namespace {

constexpr const char* kSchemaKey = "schema";
constexpr const char* kSchema = "tpbench.calibration";
constexpr const char* kVersionKey = "schema_version";
constexpr int kVersion = 1;
constexpr const char* kContextKey = "context";  // the results' context block (results_json.h)

template <class V, Is<CalibrationModelRecord> R>
void fields(V& v, R& r) {
  v("name", r.name);
  v("tp", r.tp);
}

template <class V, Is<DeviceOpsPeakRecord> R>
void fields(V& v, R& r) {
  v("add_GBps", r.add_GBps);
  v("gemm_GFLOPs", r.gemm_GFLOPs);
  v("stream_bytes", r.stream_bytes);
  v("gemm_dim", r.gemm_dim);
}

template <class V, Is<CpuProbePeakRecord> R>
void fields(V& v, R& r) {
  v("read_GBps", r.read_GBps);
  v("axpy_GBps", r.axpy_GBps);
  v("sgemm_GFLOPs", r.sgemm_GFLOPs);
}

template <class V, Is<CalibrationPeaksRecord> R>
void fields(V& v, R& r) {
  v("device_ops", r.device_ops);
  v("cpu_probe", r.cpu_probe);
}

template <class V, Is<GemmShapeRecord> R>
void fields(V& v, R& r) {
  v("op", r.op);
  v("m", r.m);
  v("n", r.n);
  v("k", r.k);
  v("dtype", r.dtype);
  v("time_s", r.time_s);
  v("GFLOPs", r.gflops);
  v("GBps", r.gbps);
  v("of_peak_flops", r.of_peak_flops);
  v("of_peak_bw", r.of_peak_bw);
}

template <class V, Is<AllReducePointRecord> R>
void fields(V& v, R& r) {
  v("bytes", r.bytes);
  v("time_s", r.time_s);
  v("algbw_GBps", r.algbw_GBps);
  v("busbw_GBps", r.busbw_GBps);
}

template <class V, Is<AllReduceRecord> R>
void fields(V& v, R& r) {
  v("collective", r.collective);
  v("ranks", r.ranks);
  v("points", r.points);
  v("wrong", r.wrong);
  v("alpha_s", r.alpha_s);
  v("algbw_GBps", r.algbw_GBps);
  v("busbw_GBps", r.busbw_GBps);
  v("fit", r.fit);
}

template <class V, Is<OpTimeRecord> R>
void fields(V& v, R& r) {
  v("op", r.op);
  v("time_s_per_step", r.time_s_per_step);
  v("roofline_s", r.roofline_s);
  v("fraction", r.fraction);
}

template <class V, Is<OpProfilePointRecord> R>
void fields(V& v, R& r) {
  v("repeat", r.repeat);
  v("phase", r.phase);
  v("tp", r.tp);
  v("batch", r.batch);
  v("prompt", r.prompt);
  v("context", r.context);
  v("status", r.status);
  v("step_p50_s", r.step_p50_s);
  v("step_mean_s", r.step_mean_s);
  v("ops", r.ops);
  v("reason", r.reason);
}

template <class V, Is<HardwareProfileRecord> R>
void fields(V& v, R& r) {
  v("name", r.name);
  v("peak_flops", r.peak_flops);
  v("peak_bw", r.peak_bw);
  v("memory_bytes", r.memory_bytes);
  v("llc_bytes", r.llc_bytes);
  v("link_bw", r.link_bw);
  v("source", r.source);
  v("measure_at_startup", r.measure_at_startup);
  v("efficiency", r.efficiency);
  v("achievable", r.achievable);
}

// After the file's header (schema, schema_version, context), written and read apart.
template <class V, Is<CalibrationRecord> R>
void fields(V& v, R& r) {
  v("model", r.model);
  v("dtype", r.dtype);
  v("peaks", r.peaks);
  v("gemm_shapes", r.gemm_shapes);
  v("all_reduce", r.all_reduce);
  v("op_profile", r.op_profile);
  v("hardware", r.hardware);
}

template <class V, Is<MeasuredFabricRecord> R>
void fields(V& v, R& r) {
  v("collective", r.collective);
  v("ranks", r.ranks);
  v("all_reduce", r.all_reduce);
  v("source", r.source);
}

template <class V, Is<TopologyModelRecord> R>
void fields(V& v, R& r) {
  v("gpus_per_node", r.gpus_per_node);
  v("measured", r.measured);
}

template <class V, Is<MeasuredTopologyRecord> R>
void fields(V& v, R& r) {
  v("name", r.name);
  v("description", r.description);
  v("model", r.model);
}

[[noreturn]] void bad_field(const std::string& where, const std::string& path, const char* want) {
  throw BadInput(fmt::format("{}: calibration field '{}' is missing or not {}", where, path, want));
}

template <class T>
const char* wanted() {
  if constexpr (Record<T> || IsMap<T>::value || std::is_same_v<T, RunContextRecord>)
    return "an object";
  else if constexpr (IsVector<T>::value)
    return "a list";
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, PointStatus>)
    return "a string";
  else if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_same_v<T, oj>)
    return "JSON";
  else
    return "a number";
}

// Reads each field of a record at `path` ("" at the top), naming the first one that is absent or
// of the wrong kind by its whole path; fields the record does not know are passed over.
struct PathReader {
  const oj& j;
  std::string path;
  const std::string& where;

  std::string at(const std::string& key) const { return path.empty() ? key : path + "." + key; }

  template <class T>
  void operator()(const char* k, T& x) const {
    if (!j.contains(k)) bad_field(where, at(k), wanted<T>());
    decode(j[k], x, at(k));
  }
  template <class T>
  void operator()(const char* k, std::optional<T>& x) const {
    x.reset();
    if (j.contains(k)) decode(j[k], x.emplace(), at(k));
  }

  // The context is the results' record (results_json.h), whose fields this file does not list:
  // a context that does not read is held against an empty one as the results writer writes it,
  // and the first key that one has and `got` lacks, or holds as another kind of value, is named
  // (a value the writer leaves null, an opaque block, may be anything; a number may be null).
  void context_mismatch(const oj& want, const oj& got, const std::string& p) const {
    for (const auto& [k, w] : want.items()) {
      const std::string at = p + "." + k;
      const oj* g = got.contains(k) ? &got[k] : nullptr;
      if (w.is_null() || (g && w.is_number() && (g->is_number() || g->is_null()))) continue;
      if (g && w.is_object() && g->is_object()) {
        context_mismatch(w, *g, at);
        continue;
      }
      if (g && w.type() == g->type()) continue;
      bad_field(where, at,
                w.is_object()    ? "an object"
                : w.is_array()   ? "a list"
                : w.is_string()  ? "a string"
                : w.is_boolean() ? "true or false"
                                 : "a number");
    }
  }

  template <class T>
  void decode(const oj& in, T& x, const std::string& p) const {
    const auto bad = [&] { bad_field(where, p, wanted<T>()); };
    if constexpr (Record<T>) {
      if (!in.is_object()) bad();
      const PathReader inner{in, p, where};
      fields(inner, x);
    } else if constexpr (IsVector<T>::value) {
      if (!in.is_array()) bad();
      x.clear();
      for (std::size_t i = 0; i < in.size(); ++i)
        decode(in[i], x.emplace_back(), fmt::format("{}[{}]", p, i));
    } else if constexpr (IsMap<T>::value) {
      if (!in.is_object()) bad();
      x.clear();
      for (const auto& [k, e] : in.items()) decode(e, x[k], p + "." + k);
    } else if constexpr (std::is_same_v<T, RunContextRecord>) {
      if (!in.is_object()) bad();
      try {
        x = context_from_json(in);
      } catch (const BadInput& e) {
        context_mismatch(to_json(RunContextRecord{}), in, p);
        throw BadInput(fmt::format("{}: calibration field '{}' is not a run's context ({})", where,
                                   p, e.what()));
      }
    } else if constexpr (std::is_same_v<T, PointStatus>) {
      if (!in.is_string()) bad();
      try {
        x = point_status_from_name(in.get<std::string>());
      } catch (const BadInput&) {
        bad_field(where, p, "ok, oom, skipped or error");
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!in.is_string()) bad();
      x = in.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!in.is_boolean()) bad();
      x = in.get<bool>();
    } else if constexpr (std::is_same_v<T, oj>) {
      x = in;
    } else {
      static_assert(std::is_arithmetic_v<T>, "a calibration field of a kind PathReader lacks");
      if (!in.is_number()) bad();
      if constexpr (std::is_integral_v<T>) {
        // A count read from a float would be cut to a whole number (1e-300 to 0), and one past
        // the type's range would wrap: both are refused by name.
        if (!in.is_number_integer() ||
            (in.is_number_unsigned() &&
             in.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())))
          bad_field(where, p, "a whole number in range");
      }
      x = in.get<T>();
    }
  }
};

// An op profile point's shape as the launch plan and the cost model take it: a group of one or
// more, a batch of one or more, no negative length, a phase they know (a point read from another
// machine's file reaches the plan's divisions as it is).
void check_op_profile(const CalibrationRecord& r, const std::string& where) {
  for (std::size_t i = 0; i < r.op_profile.size(); ++i) {
    const OpProfilePointRecord& p = r.op_profile[i];
    const auto at = [&](const char* k) { return fmt::format("op_profile[{}].{}", i, k); };
    if (p.phase != "decode" && p.phase != "prefill")
      bad_field(where, at("phase"), "decode or prefill");
    if (p.tp < 1) bad_field(where, at("tp"), "a group of 1 or more");
    if (p.batch < 1) bad_field(where, at("batch"), "a batch of 1 or more");
    if (p.prompt < 0) bad_field(where, at("prompt"), "a length of 0 or more");
    if (p.context < 0) bad_field(where, at("context"), "a length of 0 or more");
    if (p.phase == "prefill" && p.prompt < 1)
      bad_field(where, at("prompt"), "a prompt of 1 or more");
  }
}

std::string dump(const oj& j) {
  return j.dump(2) + "\n";
}

}  // namespace

oj to_json(const CalibrationRecord& r) {
  oj j;
  j[kSchemaKey] = kSchema;
  j[kVersionKey] = kVersion;
  j[kContextKey] = to_json(r.context);
  Writer w{j};
  fields(w, r);
  return j;
}

oj to_json(const HardwareProfileRecord& r) {
  return Writer::encode(r);
}

oj to_json(const MeasuredTopologyRecord& r) {
  return Writer::encode(r);
}

oj fabric_section_json(const MeasuredTopologyRecord& r) {
  return Writer::encode(r.model);
}

CalibrationRecord calibration_from_json(const oj& j, const std::string& where) {
  if (!j.is_object() || !j.contains(kSchemaKey) || j[kSchemaKey] != kSchema)
    throw BadInput(
        fmt::format("{}: not a calibration.json (its schema is not {})", where, kSchema));
  CalibrationRecord r;
  const PathReader read{j, "", where};
  read(kContextKey, r.context);
  fields(read, r);
  check_op_profile(r, where);
  return r;
}

std::string calibration_path(const std::string& dir) {
  return dir + "/calibration.json";
}
std::string hardware_profile_path(const std::string& dir) {
  return dir + "/hardware.json";
}
std::string topology_path(const std::string& dir) {
  return dir + "/topology.json";
}

void write_calibration(const std::string& dir, const CalibrationRecord& r,
                       const std::optional<MeasuredTopologyRecord>& topology) {
  if (!r.hardware) throw std::logic_error("write_calibration: the record has no profile");
  write_file_atomic(calibration_path(dir), dump(to_json(r)));
  write_hardware_profile(dir, *r.hardware);
  if (topology) write_measured_topology(dir, *topology);
}

void write_measured_topology(const std::string& dir, const MeasuredTopologyRecord& t) {
  write_file_atomic(topology_path(dir), dump(to_json(t)));
}

void write_hardware_profile(const std::string& dir, const HardwareProfileRecord& hw) {
  write_file_atomic(hardware_profile_path(dir), dump(to_json(hw)));
}

}  // namespace tpb
