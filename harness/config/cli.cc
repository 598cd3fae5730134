// CLI11 front end. Options are collected as strings and typed later by ConfigFields, so a
// value has one parser whether it came from a file, a flag or --set.
#include "harness/config/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/config_loader.h"
#include "base/did_you_mean.h"
#include "base/errors.h"
#include "harness/config/config_fields.h"

namespace tpb {

namespace {

struct OptionDef {
  const char* key;  // config key; the flag is --key with '_' -> '-'
  const char* help;
};

// Point options shared by run (and the sweep verbs that extend it).
const OptionDef kPointOptions[] = {
    {"backend", "cpu | cuda | model (virtual ranks: run, sweep and collectives so far)"},
    {"collective", "mpi | nccl | model"},
    {"world", "model: virtual ranks (default: --tp, else one node of the preset)"},
    {"algo", "model: ring | tree | nvls | auto (NCCL's choice: the fastest)"},
    {"gpus_per_node", "model: ranks per node (default: the preset's)"},
    {"model_noise", "model: SEED:CV, seeded noise on every compute segment (default off)"},
    {"mpi_mode", "blocking | nonblocking: how --collective mpi waits (default blocking)"},
    {"model", "model name (configs/models) or JSON file"},
    {"hardware", "hardware name (configs/hardware) or JSON file"},
    {"phase", "decode | prefill"},
    {"batch", "sequences per step"},
    {"context", "decode: cached tokens per sequence"},
    {"prompt", "prefill: tokens per sequence"},
    {"layers",
     "layers to run: N, or auto (the model's, reduced to what fits); default the model's"},
    {"dtype", "fp32 | bf16 | fp16 | fp8"},
    {"tp", "tensor-parallel degree (default: world size)"},
    {"steps", "measured steps"},
    {"warmup", "warm-up steps (excluded)"},
    {"topology", "interconnect preset"},
    {"tp_groups", "contiguous | strided"},
    {"out", "output directory"},
    {"seed", "seed of weights, cache and inputs"},
    {"occupancy_window",
     "sampling window of occupancy_sampled: a time, bare numbers in s (NVML-like: 1/6)"},
    {"collective_timeout",
     "time before a collective or barrier is declared hung: 10min, 90s; bare numbers in s (default "
     "600)"},
    {"memory_budget", "per-rank memory budget, e.g. 8G (default: the device's)"},
    {"blas_threads", "BLAS threads per rank (cpu)"},
    {"sync_rounds", "ping-pong rounds per clock sync"},
    {"trace_steps", "measured steps in the point's Chrome/Perfetto trace (0: no trace)"},
    {"stamps",
     "collectives | ops: device stamps at step and collective edges only, per-op times from "
     "the backend's own record (default), or a stamp around every op"},
    {"lm_head",
     "true | false: end each step with the final norm, the vocab-parallel LM head and greedy "
     "sampling (run, sweep: false; serve: true)"},
    {"config_dir", "directory holding models/ and hardware/"},
};

// `tpbench collectives` options, nccl-tests' spellings first. Sizes keep their suffixes
// (1K, 4M) as strings; harness/measure/collectives_measure.cc reads them.
struct CollOptionDef {
  const char* key;
  const char* flags;
  const char* help;
};
const CollOptionDef kCollectiveOptions[] = {
    {"minbytes", "-b,--minbytes", "smallest message, bytes (K/M/G suffixes: powers of 1024)"},
    {"maxbytes", "-e,--maxbytes", "largest message, bytes"},
    {"stepfactor", "-f,--stepfactor", "multiply the size by this each step"},
    {"stepbytes", "-i,--stepbytes", "add this many bytes each step (instead of -f)"},
    {"warmup_iters", "-w,--warmup_iters,--warmup-iters", "untimed iterations per size"},
    {"iters", "-n,--iters", "timed iterations per size"},
    {"op", "-o,--op", "sum | max | min"},
    {"dtype", "-d,--datatype,--dtype",
     "nccl-tests' names float | half | bfloat16 (or fp32 | fp16 | bf16); mpi on host buffers: "
     "float only"},
    {"average", "-a,--average",
     "time over ranks, as nccl-tests: 0 rank 0's, 1 mean (default), 2 min, 3 max"},
    {"output_file", "-J,--output_file,--output-file",
     "also write nccl-tests' JSON (version 2) to this file (rank 0)"},
    {"kind", "--kind", "all_reduce | reduce_scatter | all_gather | broadcast | reduce"},
    {"root", "-r,--root", "root rank of broadcast and reduce"},
    {"collective", "--collective", "mpi | nccl | model"},
    {"mpi_mode", "--mpi-mode",
     "blocking | nonblocking: how --collective mpi waits (default blocking)"},
    {"backend", "--backend", "cpu | cuda (where the buffers live) | model (virtual ranks)"},
    {"world", "--world", "model: virtual ranks (default: one node of the preset)"},
    {"algo", "--algo", "model: ring | tree | nvls | auto (NCCL's choice: the fastest)"},
    {"gpus_per_node", "--gpus-per-node", "model: ranks per node (default: the preset's)"},
    {"topology", "--topology", "interconnect preset (configs/topologies)"},
    {"out", "--out", "output directory"},
    {"collective_timeout", "--collective-timeout",
     "time before a collective is hung: 10min, 90s; bare numbers in s (default 600)"},
    {"sync_rounds", "--sync-rounds", "ping-pong rounds per clock sync"},
    {"config_dir", "--config-dir", "directory holding topologies/"},
};

// `tpbench serve`'s own options (harness/config/serve_spec.h reads them). It also takes the
// point options except the ones a serving run decides itself (kNotServe).
const OptionDef kServeOptions[] = {
    {"concurrency", "closed loop: requests in flight; a list (1,2,4 or 1..64:x2) sweeps it"},
    {"rate", "open loop: requests/s (Poisson, or gamma with --burstiness); a list sweeps it"},
    {"burstiness", "gamma shape of the arrival gaps (1 = Poisson, as vLLM)"},
    {"requests", "measured requests per point"},
    {"warmup_requests", "requests run first and left out of the metrics"},
    {"prompt_len", "N | uniform:A..B | normal:MEAN,SD | mix:64@0.9,1024@0.1"},
    {"output_len", "N | uniform:A..B | normal:MEAN,SD | mix:64@0.9,1024@0.1"},
    {"trace", "JSONL requests (arrival_s, prompt_len, output_len), instead of the above"},
    {"scheduler", "continuous (iteration-level, Orca) | static (a batch runs to its longest)"},
    {"chunk", "chunked prefill: token budget per step (Sarathi-Serve's stall-free order)"},
    {"max_batch", "sequences per step (default: the concurrency, or 64 open loop)"},
    {"max_step_tokens", "without --chunk: tokens per step at most, prompts whole (default 8192)"},
    {"kv_budget", "KV cache capacity in tokens (default: what the memory budget leaves)"},
    {"block_tokens", "KV cache block size in tokens (paged cache; default 16)"},
    {"host_overhead",
     "host work per step: 2ms, 500us; bare numbers in us (tokenisation, sampling logic, ...)"},
    {"slo",
     "goodput SLOs in ms: ttft=MS,tpot=MS,itl_p95=MS,e2el=MS (a request counts if it "
     "meets every one given)"},
    // vLLM's `vllm bench serve` spellings (harness/config/vllm_aliases.h); --goodput and
    // --save-result are added by add_serve (a list and a flag).
    {"max_concurrency", "vLLM's spelling of --concurrency"},
    {"request_rate",
     "vLLM's spelling of --rate; inf: every request at once (a closed loop at "
     "--max-concurrency, or at the request count)"},
    {"num_prompts", "vLLM's spelling of --requests"},
    {"random_input_len", "vLLM's spelling of a fixed --prompt-len N"},
    {"random_output_len", "vLLM's spelling of a fixed --output-len N"},
    {"result_dir", "with --save-result: the folder of vLLM's result files (default: --out)"},
    {"result_filename",
     "with --save-result: the file name (default vLLM's pattern; several loads add -point-K)"},
};
const char* const kNotServe[] = {"phase", "batch", "context", "prompt", "steps"};

// `tpbench calibrate`'s own options (it also takes some of kPointOptions).
const OptionDef kCalibrateOptions[] = {
    {"name", "profile name (default: calibrated-HOST)"},
    {"max_bytes", "largest all-reduce of the curve, e.g. 64M"},
    {"reps", "repetitions per measurement (best is kept)"},
    {"op_profile",
     "true (default) | false (on | off also do): time every op of the real layer step at a grid of "
     "shapes, for the model backend's efficiency table"},
    {"op_repeats", "repeats of the op profile's grid (the fastest is kept; default 3)"},
};

// Where CLI11 stores what it parses, one field per kind of option, before it becomes config.
struct CliValues {
  std::map<std::string, std::string> values;  // by config key
  std::vector<std::string> injects, sets, positional;
  std::vector<std::string> goodput;  // serve: vLLM's --goodput KEY:MS ... (space-separated)
  std::string config_file, resume, compare_out;  // compare_out: --out of compare and report
  std::string from, format;                      // format: export's --format
  long long from_point = -1;
  bool no_plots = false, check = false, inplace = false, baseline = false, cuda_graph = false;
  bool json = false, quiet = false;
  bool save_result = false;  // serve: vLLM's --save-result
};

void add_config_options(CLI::App* sub, CliValues& v) {
  sub->add_flag("-q,--quiet", v.quiet, "no progress lines (they go to stderr)");
  sub->add_option("--config", v.config_file, "JSON config file");
  sub->add_option("--set", v.sets, "override any config key: key=value (repeatable)");
}

void add_point_options(CLI::App* sub, CliValues& v, const char* inject_help) {
  for (const auto& o : kPointOptions) sub->add_option(field_name(o.key), v.values[o.key], o.help);
  sub->add_option("--inject", v.injects, inject_help);
  sub->add_flag("--check", v.check, "verify TP output against an unsharded reference");
  sub->add_flag("--cuda-graph", v.cuda_graph, "capture one step in a CUDA graph and replay it");
  add_config_options(sub, v);
}

void add_run_and_sweep(CLI::App& app, CliValues& v) {
  CLI::App* run = app.add_subcommand("run", "run one benchmark point");
  add_point_options(run, v, "imbalance spec rank=R:key=value (repeatable)");
  run->add_option("--from", v.from,
                  "rerun a recorded point: its RESULTS directory or results.json");
  run->add_option("--point", v.from_point, "index of the point in --from (default 0)");
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run a grid of points: any axis takes a list (1,2,4) or a range (1..256:x2)");
  add_point_options(sweep, v,
                    "imbalance alternatives, ';'-separated, 'none' = clean, e.g. "
                    "\"none;rank=1:slowdown=1.3\" (repeatable: flags combine)");
  sweep->add_option("--resume", v.resume,
                    "continue the sweep whose --out is DIR (skips done points)");
}

void add_collectives(CLI::App& app, CliValues& v) {
  CLI::App* coll = app.add_subcommand("collectives", "message-size sweep, nccl-tests style");
  for (const auto& o : kCollectiveOptions) coll->add_option(o.flags, v.values[o.key], o.help);
  coll->add_flag("--inplace", v.inplace,
                 "the in-place half only (default: out-of-place, then in-place, as nccl-tests)");
  coll->add_flag("--baseline", v.baseline,
                 "also time a plain blocking MPI collective loop per size (mpi only)");
  add_config_options(coll, v);
}

void add_serve(CLI::App& app, CliValues& v) {
  CLI::App* serve = app.add_subcommand(
      "serve", "request-level serving on real TP steps: TTFT, TPOT, ITL, the throughput curve");
  for (const auto& o : kPointOptions) {
    bool skip = false;
    for (const char* k : kNotServe) skip = skip || std::string(o.key) == k;
    if (!skip) serve->add_option(field_name(o.key), v.values[o.key], o.help);
  }
  for (const auto& o : kServeOptions) serve->add_option(field_name(o.key), v.values[o.key], o.help);
  serve->add_option("--inject", v.injects, "imbalance spec rank=R:key=value (repeatable)");
  serve->add_flag("--check", v.check, "verify a mixed step against an unsharded reference");
  serve->add_option("--resume", v.resume,
                    "continue the serve run whose --out is DIR (skips the loads it finished)");
  serve
      ->add_option("--goodput", v.goodput,
                   "vLLM's spelling of --slo: ttft:MS tpot:MS e2el:MS (space-separated)")
      ->expected(1, -1);
  serve->add_flag("--save-result", v.save_result,
                  "also write vLLM's result JSON per load (vLLM's keys, ms)");
  add_config_options(serve, v);
}

// compare, diagnose, whatif, report and export: verbs over results directories.
void add_results_verbs(CLI::App& app, CliValues& v) {
  CLI::App* compare = app.add_subcommand("compare", "side-by-side table of results directories");
  compare->add_option("results", v.positional, "results directories or results.json files")
      ->required()
      ->expected(2, -1);
  compare->add_option("--out", v.compare_out, "also write DIR/compare.json");

  CLI::App* diagnose =
      app.add_subcommand("diagnose", "verdicts in the article's debugging order for results");
  diagnose->add_option("results", v.positional, "results directories or results.json files")
      ->required()
      ->expected(1, -1);
  diagnose->add_flag("--json", v.json, "print the verdicts as JSON, each with its stable code");

  CLI::App* whatif = app.add_subcommand(
      "whatif", "what fixing each cause would buy: the run's steps replayed without it");
  whatif->add_option("results", v.positional, "a run or sweep results directory")
      ->required()
      ->expected(1);
  whatif->add_flag("--json", v.json, "print the counterfactuals as one JSON document");
  whatif->add_option("--chunk", v.values["chunk"],
                     "serve points: chunked_prefill's token budget per step (default 512)");
  whatif->add_option("--kv-budget", v.values["kv_budget"],
                     "serve points: kv_budget's cache in tokens (default: every running "
                     "sequence at its longest)");
  whatif->add_option("--topology", v.values["topology"],
                     "run points: topology's interconnect, a preset of configs/topologies or a "
                     "file (not replayed unless given)");
  whatif->add_option("--config-dir", v.values["config_dir"],
                     "directory holding topologies/ (default: the installed configs)");

  CLI::App* report = app.add_subcommand("report", "report.md and plots from results");
  report->add_option("results", v.positional, "results directories or results.json files")
      ->required()
      ->expected(1, -1);
  report->add_option("--out", v.compare_out,
                     "write DIR/report.md and DIR/plots (default: the "
                     "first results directory)");
  report->add_flag("--no-plots", v.no_plots, "skip the matplotlib plots");
  report->add_option("--trace", v.values["trace"],
                     "merged: also write DIR/trace-merged.json, every point's trace in one (a "
                     "process per point and rank)");

  CLI::App* exp = app.add_subcommand(
      "export", "print the points' and ranks' metrics for dashboards (Prometheus text) or as CSV");
  exp->add_option("results", v.positional, "results directories or results.json files")
      ->required()
      ->expected(1, -1);
  exp->add_option("--format", v.format, "openmetrics (default: the Prometheus text format) or csv");
}

// calibrate: a subset of the point options plus its own.
void add_calibrate(CLI::App& app, CliValues& v) {
  CLI::App* calibrate =
      app.add_subcommand("calibrate",
                         "measure peaks, GEMM FLOP/s by shape and the all-reduce curve; write a "
                         "hardware profile");
  for (const char* key : {"backend", "collective", "model", "dtype", "tp", "context", "out",
                          "blas_threads", "collective_timeout", "config_dir"})
    for (const auto& o : kPointOptions)
      if (std::string(o.key) == key)
        calibrate->add_option(field_name(o.key), v.values[o.key], o.help);
  for (const auto& o : kCalibrateOptions)
    calibrate->add_option(field_name(o.key), v.values[o.key], o.help);
  calibrate->add_option("--from", v.from,
                        "rebuild DIR/hardware.json from a recorded calibration.json; measures "
                        "nothing (no device needed)");
  add_config_options(calibrate, v);
}

// The long names of every option `sub` takes, as "--name".
std::vector<std::string> long_names(const CLI::App* sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub->get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

// CLI11's "The following arguments were not expected: B A" lists them last first; the first
// flag among them, with the nearest option of the verb when one is near.
std::string unknown_flag_line(const CLI::App& app, const std::string& what) {
  const std::size_t colon = what.find(": ");
  std::vector<std::string> args;
  std::istringstream in(colon == std::string::npos ? "" : what.substr(colon + 2));
  for (std::string a; in >> a;) args.insert(args.begin(), a);
  const auto flag =
      std::find_if(args.begin(), args.end(), [](const std::string& a) { return a[0] == '-'; });
  const std::vector<CLI::App*> subs = app.get_subcommands();
  if (flag == args.end() || subs.empty()) return "command line: " + what;
  const std::string name = flag->substr(0, flag->find('='));
  const std::string near = nearest_name(name, long_names(subs.front()));
  return name + ": unknown option for " + subs.front()->get_name() +
         (near.empty() ? "" : " (did you mean " + near + "?)") + "; tpbench " +
         subs.front()->get_name() + " --help lists them";
}

// False when help was asked for: its text is in `help` (main prints it on rank 0 alone).
// Parse errors become BadInput.
bool parse_args(CLI::App& app, int argc, char** argv, std::string& help) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    help = app.help();
    return false;
  } catch (const CLI::CallForAllHelp& e) {
    help = app.help("", CLI::AppFormatMode::All);
    return false;
  } catch (const CLI::ExtrasError& e) {
    throw BadInput(unknown_flag_line(app, e.what()));
  } catch (const CLI::ParseError& e) {
    // CLI11 says "A subcommand is required" for `tpbench fly`; name the word and the verbs.
    std::string verbs;
    for (const CLI::App* sub : app.get_subcommands({}))
      verbs += (verbs.empty() ? "" : ", ") + sub->get_name();
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty())
      throw BadInput(std::string("verb: unknown verb '") + argv[1] + "' (verbs: " + verbs + ")");
    if (argc < 2) throw BadInput("verb: missing (verbs: " + verbs + ")");
    throw BadInput(std::string("command line: ") + e.what());
  }
  return true;
}

// The options the verb was given, by config key, as strings (ConfigFields types them).
void given_options(CLI::App* sub, const std::string& verb, const CliValues& v,
                   nlohmann::json& config) {
  for (const auto& o : kPointOptions)
    if (sub->get_option_no_throw(field_name(o.key)) && sub->count(field_name(o.key)) > 0)
      config[o.key] = v.values.at(o.key);
  if (verb == "serve") {
    for (const auto& o : kServeOptions)
      if (sub->count(field_name(o.key)) > 0) config[o.key] = v.values.at(o.key);
    std::string goodput;
    for (const std::string& g : v.goodput) goodput += (goodput.empty() ? "" : " ") + g;
    if (!v.goodput.empty()) config["goodput"] = goodput;
    if (v.save_result) config["save_result"] = true;
  }
  if (verb == "report" && sub->count("--trace") > 0) config["trace"] = v.values.at("trace");
  if (verb == "whatif")
    for (const char* key : {"chunk", "kv_budget", "topology", "config_dir"})
      if (sub->count(field_name(key)) > 0) config[key] = v.values.at(key);
  if (verb == "calibrate")
    for (const auto& o : kCalibrateOptions)
      if (sub->count(field_name(o.key)) > 0) config[o.key] = v.values.at(o.key);
  if (verb == "collectives")
    for (const auto& o : kCollectiveOptions) {
      // The first long name: CLI11 finds an option by any one of its names.
      const std::string flags(o.flags);
      const std::size_t at = flags.find("--");
      if (sub->count(flags.substr(at, flags.find(',', at) - at)) > 0)
        config[o.key] = v.values.at(o.key);
    }
}

void given_flags(const CliValues& v, nlohmann::json& config) {
  if (!v.injects.empty()) config["inject"] = v.injects;
  if (v.check) config["check"] = true;
  if (v.cuda_graph) config["cuda_graph"] = true;
  if (!v.resume.empty()) config["resume"] = v.resume;
  if (v.inplace) config["inplace"] = true;
  if (v.baseline) config["baseline"] = true;
  if (!v.compare_out.empty()) config["out"] = v.compare_out;
  if (v.no_plots) config["no_plots"] = true;
  if (v.json) config["json"] = true;
  if (!v.format.empty()) config["format"] = v.format;
}

void apply_sets(const std::vector<std::string>& sets, nlohmann::json& config) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw BadInput("--set: expected key=value (got '" + s + "')");
    const std::string key = s.substr(0, eq), val = s.substr(eq + 1);
    // A JSON value if it parses (numbers, lists, true), otherwise the plain string.
    config[key] = nlohmann::json::accept(val) ? nlohmann::json::parse(val) : nlohmann::json(val);
  }
}

// The verb's result: options, then flags, --from, --set, and the --config file's keys last
// (a file never overrides the command line).
void fill_result(CLI::App* sub, const CliValues& v, CliResult& r) {
  r.verb = sub->get_name();
  r.quiet = v.quiet;
  given_options(sub, r.verb, v, r.config);
  given_flags(v, r.config);
  r.positional = v.positional;
  if (!v.from.empty()) {
    r.from = v.from;
    r.from_point = v.from_point < 0 ? 0 : v.from_point;
  } else if (v.from_point >= 0) {
    throw BadInput("--point: needs --from RESULTS");
  }
  apply_sets(v.sets, r.config);
  if (!v.config_file.empty()) merge_config_file(v.config_file, r.config);
}

}  // namespace

void merge_config_file(const std::string& path, nlohmann::json& config) {
  const nlohmann::json j = read_json_file(path, "--config");
  if (!j.is_object()) throw BadInput("--config: '" + path + "' must hold a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!config.contains(it.key())) config[it.key()] = it.value();
}

CliResult parse_cli(int argc, char** argv) {
  CliResult r;
  for (int i = 0; i < argc; ++i) r.argv.emplace_back(argv[i]);
  CLI::App app{"tpbench: tensor-parallel inference benchmark harness"};
  app.require_subcommand(1);
  CliValues v;
  add_run_and_sweep(app, v);
  add_collectives(app, v);
  add_serve(app, v);
  add_results_verbs(app, v);
  add_calibrate(app, v);
  app.add_subcommand("info", "print backends, collectives and versions as JSON");
  if (argc == 2 && std::string(argv[1]) == "--version") {
    r.help = r.version = true;
    return r;
  }
  if (!parse_args(app, argc, argv, r.help_text)) {
    r.help = true;
    return r;
  }
  for (CLI::App* sub : app.get_subcommands()) fill_result(sub, v, r);
  return r;
}

}  // namespace tpb
