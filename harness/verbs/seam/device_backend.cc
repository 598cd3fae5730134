// Measured ranks on a Device: the drivers of harness/drive and harness/measure, unchanged, with
// the device made once per verb.
#include "harness/verbs/seam/device_backend.h"

#include <cstring>

#include "base/errors.h"
#include "collectives/topology_presets.h"
#include "harness/backends/registry.h"
#include "harness/drive/peak_resolver.h"
#include "harness/drive/point_runner.h"
#include "harness/drive/sweep_point.h"
#include "harness/measure/collectives_measure.h"
#include "harness/mpi/agreement.h"
#include "harness/record/coll_point_builder.h"

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

class DeviceBackend final : public VerbBackend {
 public:
  explicit DeviceBackend(std::unique_ptr<Device> dev) : dev_(std::move(dev)) {}

  DeviceCaps caps(const RunSpec&) const override { return dev_->caps(); }
  DeviceCaps serve_caps(const ServeSpec&) const override { return dev_->caps(); }
  DeviceCaps collectives_caps(const CollectivesSpec&) const override { return dev_->caps(); }

  void adopt(RunSpec& spec) const override {
    spec.hardware_note = adopt_device_hardware(spec, dev_->caps());
  }
  std::string unsupported_reason(const RunSpec& spec) const override {
    return tpb::unsupported_reason(spec, *dev_);
  }
  void accept(const CollectivesSpec& s) const override {
    for (DType t : dev_->caps().dtypes)
      if (t == s.dtype) return;
    throw BadInput(std::string("--dtype: the ") + s.backend + " backend has no " +
                   dtype_name(s.dtype));
  }

  Peaks peaks(const RunSpec& spec, const World& w) override {
    return resolve_peaks(spec, w, *dev_);
  }

  void describe(RunContextRecord& c, const std::string& topology, const std::string& collective,
                const std::string& config_dir) const override {
    c.topology = topology_context(topology, collective, config_dir);
  }
  // The device, memory budget and BLAS threads are not axes: the first point speaks for all.
  void describe_sweep(RunContextRecord& c, const std::vector<RunSpec>& specs) const override {
    describe(c, specs[0].topology, specs[0].collective, specs[0].config_dir);
  }

  std::optional<PointOutcome> run_point(const RunSpec& spec, const World& w,
                                        const Peaks& peaks) override {
    return tpb::run_point(spec, w, *dev_, peaks);
  }
  std::optional<PointOutcome> sweep_point(const RunSpec& spec, const World& w, const Peaks& peaks,
                                          MPI_Comm outcome_comm) override {
    return run_sweep_point(spec, w, *dev_, peaks, outcome_comm);
  }
  ServeResult serve_load(const ServeSpec& spec, std::size_t load_index, const World& w,
                         const Peaks&) override {
    return run_serve_point(spec, load_index, w, *dev_);
  }

  int collectives_ranks(const CollectivesSpec&, const World& w) const override { return w.size; }
  std::vector<std::string> collectives_start(const CollectivesSpec& s, const World& w) override {
    std::vector<std::string> hosts = gather_strings(w.comm, w.host, 0);
    coll_ = make_measured_collective(s, w, *dev_);
    return hosts;
  }
  std::vector<CollPointRecord> collectives_size(const CollectivesSpec& s, const CollCounts& c,
                                                const World& w,
                                                const std::vector<std::string>& hosts) override {
    std::vector<CollPointRecord> points;
    for (bool inplace : s.halves) {
      // The measurement and the record read the half from the spec's `inplace`.
      CollectivesSpec half = s;
      half.inplace = inplace;
      const CollRankResult mine = measure_collective(half, c, w, *dev_, coll_.get());
      const auto all = gather_results(w, mine);
      if (w.rank == 0) points.push_back(coll_point(half, c, all, hosts));
    }
    return points;
  }

 private:
  std::unique_ptr<Device> dev_;
  std::unique_ptr<Collective> coll_;  // collectives_start's; null on the direct MPI path
};

}  // namespace

std::unique_ptr<VerbBackend> open_device_backend(const DeviceOptions& o) {
  return std::make_unique<DeviceBackend>(make_device(o));
}

}  // namespace tpb
