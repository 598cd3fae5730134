// Validation of `tpbench collectives` options.
#include "harness/config/collectives_spec.h"

#include <algorithm>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/custom_allreduce.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/coll_options.h"

namespace tpb {

namespace {

int64_t size_field(ConfigFields& f, const nlohmann::json& cfg, const OptionDef& o) {
  const std::string key = o.key, def = o.def;
  f.mark_known(key);
  if (!cfg.contains(key) || cfg.at(key).is_null()) return parse_size_suffix(def, field_name(key));
  const auto& v = cfg.at(key);
  return parse_size_suffix(v.is_string() ? v.get<std::string>() : v.dump(), field_name(key));
}

// nccl-tests' sweep: from lo to hi, adding `step` bytes when given, else multiplying by `factor`.
std::vector<int64_t> size_list(int64_t lo, int64_t hi, int64_t step, int64_t factor) {
  std::vector<int64_t> sizes;
  for (int64_t b = lo; b <= hi;) {
    sizes.push_back(b);
    if (sizes.size() > kMaxAxisValues)
      throw BadInput("--stepbytes: more than " + std::to_string(kMaxAxisValues) + " sizes");
    if (lo == hi) break;
    b = step > 0 ? b + step : b * factor;
  }
  return sizes;
}

// What the fabric cannot run (nvls without NVLink SHARP, a group across nodes on a one-node
// preset, an eager call without the preset's eager_copy) is refused here, before any output,
// not at the size that meets it.
void check_model_sizes(const CollectivesSpec& s) {
  const Fabric fabric = load_fabric(s.topology, s.config_dir);
  const int nodes = s.world > s.gpus_per_node ? s.world / s.gpus_per_node : 1;
  for (int64_t b : s.sizes) {
    const ModelTime t =
        model_collective(fabric, s.kind, b, {s.world, nodes}, parse_model_algo(s.algo, "--algo"));
    if (s.eager) eager_call(fabric, t, b);
  }
}

}  // namespace

CollectivesSpec resolve_coll_spec(const nlohmann::json& cfg, int world,
                                  const std::string& default_config_dir) {
  ConfigFields f(cfg);
  CollectivesSpec s;
  const BackendChoice bc = choose_backend(f, default_config_dir);
  s.config_dir = bc.config_dir;
  s.backend = bc.backend;
  s.collective = bc.collective;
  s.mpi_mode = bc.mpi_mode;
  const BackendTraits& bt = backend_traits(s.backend);
  const ModelWorld mw =
      resolve_model_world(f, s.backend, world, f.str(opt::topology), s.config_dir, 0);
  if (bt.virtual_ranks) {
    if (mw.world < 2) throw BadInput("--world: a collective needs at least 2 ranks (got 1)");
    if (mw.noise_cv > 0)
      throw BadInput("--model-noise: modelled for run and sweep only, not for collectives");
    world = s.world = mw.world;
    s.algo = mw.algo;
    s.gpus_per_node = mw.gpus_per_node;
  }
  s.kind = parse_coll_kind(f.str(opt::kind), "--kind");
  s.op = f.choice(opt::op);
  s.dtype = parse_dtype_or_nccl(f.str(opt::coll_dtype), "--dtype");
  s.inplace = f.boolean(opt::inplace);
  s.baseline = f.boolean(opt::baseline);
  s.eager = f.boolean(opt::eager);
  if (s.eager && !bt.virtual_ranks)
    throw BadInput("--eager: models an eager custom all-reduce call; --backend model only");
  s.root = static_cast<int>(f.integer(opt::root.key, 0, 0, world - 1));
  const int64_t lo = size_field(f, cfg, opt::minbytes);
  const int64_t hi = size_field(f, cfg, opt::maxbytes);
  const int64_t step = size_field(f, cfg, opt::stepbytes);
  const int64_t factor = f.integer(opt::stepfactor);
  s.warmup = static_cast<int>(f.integer(opt::warmup_iters));
  s.iters = static_cast<int>(f.integer(opt::iters));
  s.timeout_s = f.duration(opt::collective_timeout);
  s.sync_rounds = static_cast<int>(f.integer(opt::sync_rounds));
  s.topology = f.str(opt::topology);
  if (bt.virtual_ranks && s.topology == "default") s.topology = "nvlink4";
  s.out = f.str(opt::coll_out);
  s.average = static_cast<int>(f.integer(opt::average));
  s.output_file = f.str(opt::output_file);
  f.reject_unknown();

  // The direct MPI path (host buffers) runs every kind, op and placement. Elsewhere the
  // measurement goes through the Collective interface, which is the TP layer's in-place sum
  // all-reduce and nothing else.
  const bool direct_mpi = collective_traits(s.collective).host_calls && !bt.device_memory;
  if (direct_mpi && s.dtype != DType::fp32)
    throw BadInput(std::string("--dtype: --collective mpi on host buffers is fp32 only (got ") +
                   dtype_name(s.dtype) + ")");
  if (bt.virtual_ranks && s.baseline)
    throw BadInput("--baseline: the plain loop is MPI on host buffers only");
  // The model prices every kind and op by its bytes alone.
  if (!direct_mpi && !bt.virtual_ranks) {
    if (s.kind != CollKind::all_reduce || s.op != "sum")
      throw BadInput("--kind/--op: --collective " + s.collective + " on --backend " + s.backend +
                     " measures the TP all_reduce with sum only");
    s.inplace = true;  // the interface reduces in place
    if (s.baseline) throw BadInput("--baseline: the plain loop is MPI on host buffers only");
  }
  if (coll_kind_info(s.kind).buffers == CollBuffers::one_buffer) s.inplace = true;
  // nccl-tests runs out-of-place, then in-place; a path that cannot place apart runs in-place.
  s.halves = s.inplace ? std::vector<bool>{true} : std::vector<bool>{false, true};
  if (lo < 1 || hi < lo)
    throw BadInput("--minbytes/--maxbytes: need 1 <= minbytes <= maxbytes (got " +
                   std::to_string(lo) + ", " + std::to_string(hi) + ")");
  if (hi > (int64_t{1} << 34)) throw BadInput("--maxbytes: at most 16G");
  if (step == 0 && factor < 2 && lo < hi)
    throw BadInput("--stepfactor: must be >= 2 when minbytes < maxbytes (or give --stepbytes)");
  s.sizes = size_list(lo, hi, step, factor);
  if (bt.virtual_ranks) check_model_sizes(s);
  return s;
}

nlohmann::ordered_json coll_spec_to_json(const CollectivesSpec& s) {
  // The resolved spec in the config fields' names (sizes: the list that -b/-e/-f made).
  nlohmann::ordered_json j{{opt::kind.key, coll_kind_name(s.kind)},
                           {opt::op.key, s.op},
                           {opt::coll_dtype.key, dtype_name(s.dtype)},
                           {opt::collective.key, s.collective},
                           {opt::mpi_mode.key, mpi_mode_name(s.mpi_mode)},
                           {opt::backend.key, s.backend},
                           {opt::topology.key, s.topology},
                           {opt::inplace.key, s.inplace},
                           {"halves", s.halves},
                           {opt::average.key, s.average},
                           {opt::output_file.key, s.output_file},
                           {opt::baseline.key, s.baseline},
                           {opt::eager.key, s.eager},
                           {opt::root.key, s.root},
                           {"sizes", s.sizes},
                           {opt::warmup_iters.key, s.warmup},
                           {opt::iters.key, s.iters},
                           {opt::collective_timeout.key, s.timeout_s},
                           {opt::sync_rounds.key, s.sync_rounds},
                           {opt::coll_out.key, s.out},
                           {opt::config_dir.key, s.config_dir}};
  if (backend_traits(s.backend).virtual_ranks)
    echo_model_world(j, {s.world, s.algo, s.gpus_per_node});
  return j;
}

}  // namespace tpb
