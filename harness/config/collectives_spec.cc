// Validation of `tpbench collectives` options.
#include "harness/config/collectives_spec.h"

#include <algorithm>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_fields.h"

namespace tpb {

namespace {

int64_t size_field(ConfigFields& f, const nlohmann::json& cfg, const std::string& key,
                   const std::string& def) {
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

}  // namespace

CollectivesSpec resolve_coll_spec(const nlohmann::json& cfg, int world,
                                  const std::string& default_config_dir) {
  ConfigFields f(cfg);
  CollectivesSpec s;
  s.config_dir = f.str("config_dir", default_config_dir);
  const BackendChoice bc = choose_backend(f);
  s.backend = bc.backend;
  s.collective = bc.collective;
  const BackendTraits& bt = backend_traits(s.backend);
  const ModelWorld mw =
      resolve_model_world(f, s.backend, world, f.str("topology", "default"), s.config_dir, 0);
  if (bt.virtual_ranks) {
    if (mw.world < 2) throw BadInput("--world: a collective needs at least 2 ranks (got 1)");
    if (mw.noise_cv > 0)
      throw BadInput("--model-noise: modelled for run and sweep only, not for collectives");
    world = s.world = mw.world;
    s.algo = mw.algo;
    s.gpus_per_node = mw.gpus_per_node;
  }
  s.mpi_mode = parse_mpi_mode(f.choice("mpi_mode", "blocking", mpi_mode_names()), "--mpi-mode");
  s.kind = parse_coll_kind(f.str("kind", "all_reduce"), "--kind");
  s.op = f.choice("op", "sum", {"sum", "max", "min"});
  s.dtype = parse_dtype_or_nccl(f.str("dtype", "float"), "--dtype");
  s.inplace = f.boolean("inplace", false);
  s.baseline = f.boolean("baseline", false);
  s.root = static_cast<int>(f.integer("root", 0, 0, world - 1));
  const int64_t lo = size_field(f, cfg, "minbytes", "8");
  const int64_t hi = size_field(f, cfg, "maxbytes", "32M");
  const int64_t step = size_field(f, cfg, "stepbytes", "0");
  const int64_t factor = f.integer("stepfactor", 2, 1, 1 << 20);
  s.warmup = static_cast<int>(f.integer("warmup_iters", 5, 0, 1000000));
  s.iters = static_cast<int>(f.integer("iters", 20, 1, 10000000));
  s.timeout_s = f.duration("collective_timeout", 600.0, "s", 0.1, 86400.0);
  s.sync_rounds = static_cast<int>(f.integer("sync_rounds", 32, 1, 100000));
  s.topology = f.str("topology", "default");
  if (bt.virtual_ranks && s.topology == "default") s.topology = "nvlink4";
  s.out = f.str("out", "");
  s.average = static_cast<int>(f.integer("average", 1, 0, 3));
  s.output_file = f.str("output_file", "");
  f.reject_unknown();

  // The direct MPI path (host buffers) runs every kind, op and placement. Elsewhere the
  // measurement goes through the Collective interface, which is the TP layer's in-place sum
  // all-reduce and nothing else.
  const bool direct_mpi = s.collective == "mpi" && !bt.device_memory;
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
  if (bt.virtual_ranks) {
    // What the fabric cannot run (nvls without NVLink SHARP, a group across nodes on a
    // one-node preset) is refused here, before any output, not at the first size.
    const Fabric fabric = load_fabric(s.topology, s.config_dir);
    const int nodes = s.world > s.gpus_per_node ? s.world / s.gpus_per_node : 1;
    model_collective(fabric, s.kind, s.sizes.front(), {s.world, nodes},
                     parse_model_algo(s.algo, "--algo"));
  }
  return s;
}

nlohmann::ordered_json coll_spec_to_json(const CollectivesSpec& s) {
  // The resolved spec in the config fields' names (sizes: the list that -b/-e/-f made).
  nlohmann::ordered_json j{{"kind", coll_kind_name(s.kind)},
                           {"op", s.op},
                           {"dtype", dtype_name(s.dtype)},
                           {"collective", s.collective},
                           {"mpi_mode", mpi_mode_name(s.mpi_mode)},
                           {"backend", s.backend},
                           {"topology", s.topology},
                           {"inplace", s.inplace},
                           {"halves", s.halves},
                           {"average", s.average},
                           {"output_file", s.output_file},
                           {"baseline", s.baseline},
                           {"root", s.root},
                           {"sizes", s.sizes},
                           {"warmup_iters", s.warmup},
                           {"iters", s.iters},
                           {"collective_timeout", s.timeout_s},
                           {"sync_rounds", s.sync_rounds},
                           {"out", s.out},
                           {"config_dir", s.config_dir}};
  if (backend_traits(s.backend).virtual_ranks)
    echo_model_world(j, {s.world, s.algo, s.gpus_per_node});
  return j;
}

}  // namespace tpb
