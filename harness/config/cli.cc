// CLI11 front end. Options are collected as strings and typed later by ConfigFields, so a
// value has one parser whether it came from a file, a flag or --set. Each option is declared
// once (options/): its flags, the type and default --help shows, and its key in the config.
#include "harness/config/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/config_loader.h"
#include "base/did_you_mean.h"
#include "base/errors.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/calibrate_options.h"
#include "harness/config/options/coll_options.h"
#include "harness/config/options/results_options.h"
#include "harness/config/options/serve_options.h"

namespace tpb {

namespace {

// Where CLI11 stores what it parses, one field per kind of option, before it becomes config.
struct CliValues {
  std::map<std::string, std::string> values;  // by config key
  // The declared options each verb registered, so given_options reads back what it took.
  std::map<std::string, std::vector<const OptionDef*>> taken;
  std::vector<std::string> injects, sets, positional;
  std::vector<std::string> from_aiconfigurator;  // calibrate: SYSTEM ENGINE VERSION
  std::vector<std::string> goodput;  // serve: vLLM's --goodput KEY:MS ... (space-separated)
  std::string config_file, resume, compare_out;  // compare_out: --out of compare and report
  std::string from, format;                      // format: export's --format
  long long from_point = -1;
  bool no_plots = false, check = false, inplace = false, baseline = false, cuda_graph = false,
       eager = false;
  bool json = false, quiet = false;
  bool save_result = false;  // serve: vLLM's --save-result
};

void add_config_options(CLI::App* sub, CliValues& v) {
  sub->add_flag("-q,--quiet", v.quiet, "no progress lines (they go to stderr) (default false)");
  sub->add_option("--config", v.config_file, "JSON config file (default: none)")->type_name("FILE");
  sub->add_option("--set", v.sets, "override any config key: key=value (repeatable)")
      ->type_name("KEY=VALUE");
}

// The help line of a declared option: its text, then its default.
std::string help_of(const OptionDef& o) {
  const std::string d = option_default_text(o);
  return d.empty() ? std::string(o.help) : std::string(o.help) + " " + d;
}

// Registers `o` on `sub` with its type and default shown, into the string slot of its key.
void add_declared(CLI::App* sub, CliValues& v, const OptionDef& o) {
  const std::string flags = *o.flags ? std::string(o.flags) : field_name(o.key);
  sub->add_option(flags, v.values[o.key], help_of(o))->type_name(option_type_name(o));
  v.taken[sub->get_name()].push_back(&o);
}

template <std::size_t N>
void add_declared(CLI::App* sub, CliValues& v, const OptionDef* const (&defs)[N]) {
  for (const OptionDef* o : defs) add_declared(sub, v, *o);
}

// The flags of a point: --check and --cuda-graph (true when given), and the repeatable --inject.
void add_point_flags(CLI::App* sub, CliValues& v, const std::string& inject_help) {
  sub->add_option(field_name(opt::inject.key), v.injects,
                  inject_help + " " + option_default_text(opt::inject))
      ->type_name(option_type_name(opt::inject));
  sub->add_flag(field_name(opt::check.key), v.check, help_of(opt::check));
}

void add_run_and_sweep(CLI::App& app, CliValues& v) {
  CLI::App* run = app.add_subcommand("run", "run one benchmark point");
  add_declared(run, v, opt::kPointOptions);
  add_point_flags(run, v, opt::inject.help);
  run->add_flag(field_name(opt::cuda_graph.key), v.cuda_graph, help_of(opt::cuda_graph));
  run->add_option("--from", v.from,
                  "rerun a recorded point: its RESULTS directory or results.json (default: none)")
      ->type_name("RESULTS");
  run->add_option("--point", v.from_point, "index of the point in --from (default 0)")
      ->type_name("INT");
  add_config_options(run, v);
  CLI::App* sweep = app.add_subcommand(
      "sweep", "run a grid of points: any axis takes a list (1,2,4) or a range (1..256:x2)");
  add_declared(sweep, v, opt::kPointOptions);
  add_point_flags(sweep, v,
                  "imbalance alternatives, ';'-separated, 'none' = clean, e.g. "
                  "\"none;rank=1:slowdown=1.3\" (repeatable: flags combine)");
  sweep->add_flag(field_name(opt::cuda_graph.key), v.cuda_graph, help_of(opt::cuda_graph));
  sweep
      ->add_option("--resume", v.resume,
                   "continue the sweep whose --out is DIR (skips done points) (default: none)")
      ->type_name("DIR");
  add_config_options(sweep, v);
}

void add_collectives(CLI::App& app, CliValues& v) {
  CLI::App* coll = app.add_subcommand("collectives", "message-size sweep, nccl-tests style");
  add_declared(coll, v, opt::kCollectiveOptions);
  coll->add_flag(field_name(opt::inplace.key), v.inplace, help_of(opt::inplace));
  coll->add_flag(field_name(opt::baseline.key), v.baseline, help_of(opt::baseline));
  coll->add_flag(field_name(opt::eager.key), v.eager, help_of(opt::eager));
  add_config_options(coll, v);
}

bool is_not_serve(const OptionDef& o) {
  for (const char* k : opt::kNotServe)
    if (std::string(o.key) == k) return true;
  return false;
}

void add_serve(CLI::App& app, CliValues& v) {
  CLI::App* serve = app.add_subcommand(
      "serve", "request-level serving on real TP steps: TTFT, TPOT, ITL, the throughput curve");
  for (const OptionDef* o : opt::kPointOptions)
    if (!is_not_serve(*o)) add_declared(serve, v, o == &opt::lm_head ? opt::serve_lm_head : *o);
  add_declared(serve, v, opt::kServeOptions);
  add_point_flags(serve, v, opt::inject.help);
  serve
      ->add_option("--resume", v.resume,
                   "continue the serve run whose --out is DIR (skips the loads it finished) "
                   "(default: none)")
      ->type_name("DIR");
  serve
      ->add_option(
          "--goodput", v.goodput,
          "vLLM's spelling of --slo: ttft:MS tpot:MS e2el:MS (space-separated) (default: none)")
      ->type_name("KEY:MS ...")
      ->expected(1, -1);
  serve->add_flag("--save-result", v.save_result,
                  "also write vLLM's result JSON per load (vLLM's keys, ms) (default false)");
  add_config_options(serve, v);
}

// The results folders a verb over results takes, at least `min` (at most `max`; -1: any).
void add_results(CLI::App* sub, CliValues& v, int min, int max, const char* what) {
  sub->add_option("results", v.positional, what)->required()->expected(min, max)->type_name("DIR");
}

// compare, diagnose and export: verbs over results directories.
void add_readers(CLI::App& app, CliValues& v) {
  const char* dirs = "results directories or results.json files";
  CLI::App* compare = app.add_subcommand("compare", "side-by-side table of results directories");
  add_results(compare, v, 2, -1, dirs);
  compare->add_option("--out", v.compare_out, "also write DIR/compare.json (default: none)")
      ->type_name("DIR");
  CLI::App* diagnose =
      app.add_subcommand("diagnose", "verdicts in the article's debugging order for results");
  add_results(diagnose, v, 1, -1, dirs);
  diagnose->add_flag("--json", v.json,
                     "print the verdicts as JSON, each with its stable code (default false)");
  CLI::App* exp = app.add_subcommand(
      "export", "print the points' and ranks' metrics for dashboards (Prometheus text) or as CSV");
  add_results(exp, v, 1, -1, dirs);
  exp->add_option("--format", v.format, help_of(opt::format))
      ->type_name(option_type_name(opt::format));
}

// whatif and report: verbs that write or replay from results directories.
void add_writers(CLI::App& app, CliValues& v) {
  CLI::App* whatif = app.add_subcommand(
      "whatif", "what fixing each cause would buy: the run's steps replayed without it");
  add_results(whatif, v, 1, 1, "a run, sweep or serve results directory");
  whatif->add_flag("--json", v.json,
                   "print the counterfactuals as one JSON document (default false)");
  add_declared(whatif, v, opt::kWhatifOptions);
  CLI::App* report = app.add_subcommand("report", "report.md and plots from results");
  add_results(report, v, 1, -1, "results directories or results.json files");
  report
      ->add_option("--out", v.compare_out,
                   "write DIR/report.md and DIR/plots (default: the first results directory)")
      ->type_name("DIR");
  report->add_flag("--no-plots", v.no_plots, "skip the matplotlib plots (default false)");
  add_declared(report, v, opt::report_trace);
}

// calibrate: a subset of the point options plus its own.
void add_calibrate(CLI::App& app, CliValues& v) {
  CLI::App* calibrate =
      app.add_subcommand("calibrate",
                         "measure peaks, GEMM FLOP/s by shape and the all-reduce curve; write a "
                         "hardware profile");
  add_declared(calibrate, v, opt::kCalibratePointOptions);
  add_declared(calibrate, v, opt::kCalibrateOptions);
  calibrate
      ->add_option("--from", v.from,
                   "rebuild DIR/hardware.json from a recorded calibration.json, or write "
                   "DIR/topology.json from an nccl-tests all_reduce_perf output (its text or "
                   "-J JSON); measures nothing (no device needed) (default: none)")
      ->type_name("FILE");
  calibrate
      ->add_option("--from-aiconfigurator", v.from_aiconfigurator,
                   "convert the installed AIConfigurator's measured kernel tables (e.g. h200_sxm "
                   "vllm 0.24.0) into DIR/ENGINE/HARDWARE.json (DIR: --out, else the config "
                   "dir's engine_tables/) with results/aiconfigurator_import.py; measures nothing "
                   "(default: none)")
      ->expected(3)
      ->type_name("SYSTEM ENGINE VERSION");
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

// The declared options the verb was given, by config key, as strings (ConfigFields types
// them); vLLM's --goodput and --save-result besides.
void given_options(CLI::App* sub, const std::string& verb, const CliValues& v,
                   nlohmann::json& config) {
  const auto taken = v.taken.find(verb);
  if (taken != v.taken.end())
    for (const OptionDef* o : taken->second) {
      // The first long name: CLI11 finds an option by any one of its names.
      const std::string flags = *o->flags ? std::string(o->flags) : field_name(o->key);
      const std::size_t at = flags.find("--");
      if (sub->count(flags.substr(at, flags.find(',', at) - at)) > 0)
        config[o->key] = v.values.at(o->key);
    }
  if (verb == "serve") {
    std::string goodput;
    for (const std::string& g : v.goodput) goodput += (goodput.empty() ? "" : " ") + g;
    if (!v.goodput.empty()) config["goodput"] = goodput;
    if (v.save_result) config["save_result"] = true;
  }
}

void given_flags(const CliValues& v, nlohmann::json& config) {
  if (!v.injects.empty()) config["inject"] = v.injects;
  if (v.check) config["check"] = true;
  if (v.cuda_graph) config["cuda_graph"] = true;
  if (!v.resume.empty()) config["resume"] = v.resume;
  if (v.inplace) config["inplace"] = true;
  if (v.baseline) config["baseline"] = true;
  if (v.eager) config["eager"] = true;
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
  r.from_aiconfigurator = v.from_aiconfigurator;
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
  add_readers(app, v);
  add_writers(app, v);
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
