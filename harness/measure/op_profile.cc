#include "harness/measure/op_profile.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>

#include "base/errors.h"
#include "base/mpi_check.h"
#include "harness/config/backend_traits.h"
#include "harness/config/options/point_options.h"
#include "harness/measure/op_fractions.h"
#include "layers/model_shape.h"

namespace tpb {

namespace {

struct GridPoint {
  const char* phase;
  int tp;
  int64_t batch, prompt;
};

std::vector<GridPoint> grid(const OpProfileSpec& s, const ModelShape& shape) {
  std::vector<int> tps = {1};
  if (s.tp > 1 && shape.n_heads % s.tp == 0) tps.push_back(s.tp);
  std::vector<GridPoint> g;
  for (int tp : tps) {
    for (int64_t b : {1, 4, 16, 64}) g.push_back({"decode", tp, b, 0});
    for (int64_t p : backend_traits(s.backend).profile_prompts) g.push_back({"prefill", tp, 1, p});
  }
  return g;
}

RunSpec grid_spec(const OpProfileSpec& s, const GridPoint& p, int world) {
  nlohmann::json cfg = {{opt::backend.key, s.backend},
                        {opt::collective.key, s.collective},
                        {opt::model.key, s.model},
                        {opt::config_dir.key, s.config_dir},
                        {opt::dtype.key, dtype_name(s.dtype)},
                        {opt::phase.key, p.phase},
                        {opt::batch.key, p.batch},
                        {opt::tp.key, p.tp},
                        {opt::blas_threads.key, s.blas_threads},
                        {opt::collective_timeout.key, s.collective_timeout_s},
                        {opt::trace_steps.key, 0}};
  if (p.prompt > 0) {
    cfg[opt::prompt.key] = p.prompt;
    cfg[opt::steps.key] = 4;
    cfg[opt::warmup.key] = 1;
  } else {
    cfg[opt::context.key] = s.context;
    cfg[opt::steps.key] = 20;
    cfg[opt::warmup.key] = 3;
  }
  return resolve_run_spec(cfg, world, s.config_dir);
}

OpProfilePointRecord grid_record(const PointRecord& r, const GridPoint& g, const OpProfileSpec& s,
                                 int rep, const Peaks& peaks) {
  OpProfilePointRecord rec;
  rec.repeat = rep;
  rec.phase = g.phase;
  rec.tp = g.tp;
  rec.batch = g.batch;
  rec.prompt = g.prompt;
  rec.context = g.prompt > 0 ? 0 : s.context;
  rec.status = r.status;
  if (r.status == PointStatus::ok && r.metrics) {
    // The fastest repeat will stand for the shape (fastest_repeats): this VM's memory
    // bandwidth drops by up to a third for seconds at a time, and a repeat in such a spell is
    // the machine, not the op.
    rec.step_p50_s = r.metrics->step_time_s.p50;
    rec.step_mean_s = r.metrics->step_time_s.mean;
    rec.ops = op_fractions(r, peaks);
  } else {
    rec.reason = r.reason;
  }
  return rec;
}

}  // namespace

std::vector<OpProfilePointRecord> measure_op_profile(const World& w, const OpProfileSpec& s,
                                                     const std::map<std::string, double>& flops,
                                                     double bw, const GridPointRunner& run_point) {
  const ModelShape shape = load_model(s.model, s.config_dir);
  MPI_Comm dup = MPI_COMM_NULL;
  TPB_MPI_CHECK(MPI_Comm_dup(w.comm, &dup));
  CommHandle outcome_comm(dup);
  std::vector<OpProfilePointRecord> prof;
  const std::vector<GridPoint> points = grid(s, shape);
  for (int rep = 0; rep < s.repeats; ++rep) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const GridPoint& g = points[i];
      const RunSpec spec = grid_spec(s, g, w.size);
      const auto f = flops.find(dtype_name(spec.dtype));
      if (f == flops.end())
        throw BadInput("calibrate: no calibrated peak for " + std::string(dtype_name(spec.dtype)));
      const Peaks peaks{f->second, bw, "tpbench calibrate (this run)"};
      const std::optional<PointRecord> point = run_point(spec, peaks, outcome_comm.get());
      if (w.rank != 0 || !point) continue;
      prof.push_back(grid_record(*point, g, s, rep, peaks));
    }
  }
  return prof;
}

}  // namespace tpb
