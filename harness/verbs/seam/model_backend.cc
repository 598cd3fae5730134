// Virtual ranks: every verb's results as a measured run writes them, from the model. A
// collectives size is every virtual rank's stamps from NCCL's tuning model; the ranks enter
// together (nothing here makes one late), so skew and wait are zero and the point's figures
// are the model's; params.model says what it chose.
#include "harness/verbs/seam/model_backend.h"

#include "collectives/model/collective_model.h"
#include "collectives/model/custom_allreduce.h"
#include "collectives/model/fabric.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_serve.h"
#include "harness/mpi/agreement.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/point_builder.h"

namespace tpb {

namespace {

// Every virtual rank's stamps for one size: `iters` back-to-back calls of the modelled time.
std::vector<CollRankResult> virtual_ranks(const CollectivesSpec& s, const ModelTime& t) {
  CollRankResult r;
  for (int i = 0; i < s.iters; ++i)
    r.iters.push_back({i * t.time_s, (i + 1) * t.time_s, i, 0, Op::allreduce_attn, 1});
  r.loop_s = t.time_s;
  return std::vector<CollRankResult>(static_cast<std::size_t>(s.world), r);
}

int model_nodes(const CollectivesSpec& s) {
  return s.world > s.gpus_per_node ? s.world / s.gpus_per_node : 1;
}

// What priced the size, for params.model.source: the custom all-reduce (called eagerly, its
// copy into the registered buffer first) or NCCL's tuning model.
std::string model_source(const CollectivesSpec& s, const Fabric& f, const ModelTime& t) {
  if (t.proto != ModelProto::p2p)
    return std::string("NCCL's tuning model (src/graph/tuning.cc, NCCL ") + f.nccl->version +
           ") on the preset's link figures; time = latency + bytes / algbw, the fastest protocol "
           "for the algorithm";
  const std::string custom =
      "the serving engines' custom all-reduce over NVLink P2P (vLLM's one-shot or two-shot "
      "kernel, dispatched as vLLM does) on the preset's custom_allreduce figures";
  const std::string eager =
      ", called eagerly: the copy into the registered buffer comes first (eager_copy: its fixed "
      "part in the latency, its bytes read and written at its HBM rate in algbw)";
  return custom + (s.eager ? eager : "") + "; time = latency + bytes / algbw";
}

CollModelRecord model_record(const CollectivesSpec& s, const Fabric& f, const ModelTime& t) {
  return {s.algo,         model_algo_name(t.algo), model_proto_name(t.proto),
          model_nodes(s), s.gpus_per_node,         t.latency_s,
          t.algbw_GBps,   model_source(s, f, t)};
}

Fabric fabric_of(const RunSpec& spec) {
  return load_fabric(spec.topology, spec.config_dir);
}

class ModelBackend final : public VerbBackend {
 public:
  DeviceCaps caps(const RunSpec& spec) const override {
    return model_device_caps(spec, fabric_of(spec));
  }
  DeviceCaps serve_caps(const ServeSpec& spec) const override {
    return model_device_caps(spec.run, fabric_of(spec.run), {true, spec.lm_head});
  }
  DeviceCaps collectives_caps(const CollectivesSpec& s) const override {
    DeviceCaps c;
    c.backend = s.backend;
    c.name = "modelled: " + load_fabric(s.topology, s.config_dir).name;
    c.dtypes = {DType::fp32, DType::bf16, DType::fp16};
    c.device_memory = true;
    return c;
  }

  void adopt(RunSpec&) const override {}  // the hardware profile is the device
  std::string unsupported_reason(const RunSpec&) const override { return ""; }
  void accept(const CollectivesSpec&) const override {}  // the model prices every dtype by bytes

  Peaks peaks(const RunSpec& spec, const World&) override { return model_peaks(spec); }

  void describe(RunContextRecord& c, const std::string& topology, const std::string&,
                const std::string& config_dir) const override {
    const Fabric f = load_fabric(topology, config_dir);
    c.fabric = nlohmann::ordered_json{{f.name, f.preset}};
  }
  // --topology is an axis here: every point's fabric, by the name the point gave.
  void describe_sweep(RunContextRecord& c, const std::vector<RunSpec>& specs) const override {
    c.fabric = nlohmann::ordered_json::object();
    for (const RunSpec& p : specs) (*c.fabric)[p.topology] = fabric_of(p).preset;
  }

  std::optional<PointOutcome> run_point(const RunSpec& spec, const World&,
                                        const Peaks& peaks) override {
    return run_model_point(spec, peaks, fabric_of(spec));
  }
  // A failure is the point's, as run_sweep_point makes it.
  std::optional<PointOutcome> sweep_point(const RunSpec& spec, const World& w, const Peaks& peaks,
                                          MPI_Comm) override {
    try {
      return run_point(spec, w, peaks);
    } catch (const AgreedError& e) {
      if (e.code() == ExitCode::collective_timeout) throw;  // a hung rank ends the job
      return PointOutcome{error_point(spec, e.what()), {}};
    } catch (const std::exception& e) {
      return PointOutcome{error_point(spec, e.what()), {}};
    }
  }
  ServeResult serve_load(const ServeSpec& spec, std::size_t load_index, const World&,
                         const Peaks& peaks) override {
    return run_model_serve_point(spec, load_index, peaks, fabric_of(spec.run));
  }

  int collectives_ranks(const CollectivesSpec& s, const World&) const override { return s.world; }
  std::vector<std::string> collectives_start(const CollectivesSpec& s, const World&) override {
    fabric_ = load_fabric(s.topology, s.config_dir);
    std::vector<std::string> hosts;
    for (int r = 0; r < s.world; ++r) hosts.push_back("node" + std::to_string(r / s.gpus_per_node));
    return hosts;
  }
  std::vector<CollPointRecord> collectives_size(const CollectivesSpec& s, const CollCounts& c,
                                                const World&,
                                                const std::vector<std::string>& hosts) override {
    ModelTime t = model_collective(*fabric_, s.kind, c.bytes, {s.world, model_nodes(s)},
                                   parse_model_algo(s.algo, "--algo"));
    if (s.eager) t = eager_call(*fabric_, t, c.bytes);
    CollPointRecord p = coll_point(s, c, virtual_ranks(s, t), hosts);
    p.params.model = model_record(s, *fabric_, t);
    p.clock_sync.method = "none: the virtual ranks share the model's clock";
    return {std::move(p)};
  }

 private:
  std::optional<Fabric> fabric_;  // collectives_start's
};

}  // namespace

std::unique_ptr<VerbBackend> open_model_backend(const DeviceOptions&) {
  return std::make_unique<ModelBackend>();
}

}  // namespace tpb
