// Resolution of `tpbench serve`: the serve keys are taken out of the config and typed here,
// the rest goes to resolve_run_spec, and the point options that a serving run decides for
// itself (phase, batch, context, prompt, steps) are refused by name. vLLM's spellings
// (--max-concurrency, --request-rate, --num-prompts, --random-input-len, --random-output-len,
// --goodput) are renamed to tpbench's keys first, so either spelling gives one config; where
// vLLM's meaning has no tpbench twin (a finite rate capped by a concurrency, a length range)
// the value is refused with one line rather than approximated.
#include "harness/config/serve_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/errors.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/serve_options.h"
#include "layers/tp_model_config.h"

namespace tpb {

TpModelConfig ServeSpec::model_config(int64_t layers, int tp_rank) const {
  TpModelConfig c = run.model_config(layers, tp_rank);
  c.phase = Phase::decode;
  c.batch = 1;
  c.context = 0;
  c.prompt = 1;
  c.lm_head = false;
  return c;
}

namespace {

constexpr int64_t kMaxConcurrency = 1000000000;

// In this order: --request-rate inf reads the concurrency and the request count once renamed.
const std::pair<const char*, const char*> kAliases[] = {
    {"max_concurrency", "concurrency"},
    {"num_prompts", "requests"},
    {"random_input_len", "prompt_len"},
    {"random_output_len", "output_len"},
    {"goodput", "slo"},
    {"request_rate", "rate"},
};

std::string text_of(const nlohmann::json& v, const char* sep = ",") {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {  // a config file's [1, 2], or ["ttft:200", "tpot:50"] joined by spaces
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + text_of(x, sep);
    return s;
  }
  return v.dump();
}

// vLLM's random lengths are fixed with its default --random-range-ratio 0: a whole number.
std::string fixed_length(const std::string& key, const nlohmann::json& v) {
  const std::string s = text_of(v);
  // Up to 18 digits: every such number fits int64_t, so stoll cannot throw out_of_range.
  const bool digits = !s.empty() && s.size() <= 18 &&
                      std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoll(s) < 1)
    throw BadInput(field_name(key) + ": expected a whole number of tokens >= 1 (got '" + s +
                   "'; for a distribution use --prompt-len / --output-len)");
  return s;
}

// vLLM's inf sends every request at t = 0, and --max-concurrency N then keeps N in flight:
// tpbench's closed loop at N. Without a cap all of them are in flight: a closed loop at the
// request count.
void request_rate(nlohmann::json& serve, int64_t default_requests) {
  std::string s = text_of(serve["request_rate"]);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool inf = s.find("inf") != std::string::npos;
  if (inf && s != "inf")
    throw BadInput(
        "--request-rate: inf (all at once) cannot share a list with finite rates "
        "(got '" +
        s + "')");
  if (!inf && serve.contains("concurrency"))
    throw BadInput(
        "--request-rate: a finite rate with --max-concurrency (an open loop capped in "
        "flight) has no tpbench twin; give the rate alone, or inf with the cap");
  if (!inf) {
    serve["rate"] = serve["request_rate"];
  } else if (!serve.contains("concurrency")) {
    serve["concurrency"] =
        serve.contains("requests") ? text_of(serve["requests"]) : std::to_string(default_requests);
  }
  serve.erase("request_rate");
}

std::vector<std::string> vllm_alias_keys() {
  std::vector<std::string> keys;
  for (const auto& [vllm, key] : kAliases) keys.emplace_back(vllm);
  return keys;
}

// Renames the vLLM keys of `serve` in place; BadInput names the vLLM flag when its twin is
// given too, or when the value has no honest tpbench meaning. Returns the (tpbench, vLLM) key
// pairs it renamed, so a later refusal can name the flag as the user spelled it.
std::vector<std::pair<std::string, std::string>> apply_vllm_aliases(nlohmann::json& serve,
                                                                    int64_t default_requests) {
  std::vector<std::pair<std::string, std::string>> renamed;
  for (const auto& [vllm, key] : kAliases) {
    if (!serve.contains(vllm)) continue;
    renamed.emplace_back(key, vllm);
    if (serve.contains(key))
      throw BadInput(field_name(vllm) + ": the same option as " + field_name(key) +
                     " (vLLM's spelling); give one of them");
    const std::string k = vllm;
    if (k == "request_rate") {
      request_rate(serve, default_requests);
      continue;
    }
    nlohmann::json v = serve[k];
    if (k == "random_input_len" || k == "random_output_len") v = fixed_length(k, v);
    if (k == "goodput") v = parse_goodput(text_of(v, " ")).text();  // --slo's canonical text
    serve[key] = v;
    serve.erase(k);
  }
  return renamed;
}

// `e` again, naming the vLLM flag where its message names the tpbench option it was renamed to
// (--max-concurrency 1e308 is refused as --max-concurrency, not as --concurrency).
BadInput as_spelled(const BadInput& e,
                    const std::vector<std::pair<std::string, std::string>>& renamed) {
  const std::string what = e.what();
  for (const auto& [key, vllm] : renamed) {
    const std::string name = field_name(key) + ":";
    if (what.rfind(name, 0) == 0) return BadInput(field_name(vllm) + what.substr(name.size() - 1));
  }
  return e;
}

// Options of `run` that a serving run decides itself, with what to use instead.
const std::pair<const char*, const char*> kRefused[] = {
    {"phase", "a serving step mixes decode and prefill"},
    {"batch", "use --concurrency or --max-batch"},
    {"context", "contexts come from the requests (--prompt-len, --output-len)"},
    {"prompt", "use --prompt-len"},
    {"steps", "a serving run steps until its requests are done (--requests)"},
    {"cuda_graph", "a serving step changes shape every step"},
};

// A load list: "1,2,4", "1..64:x2" (integers), or decimals "0.5,1,2.5" for rates.
std::vector<double> load_values(const nlohmann::json& v, const std::string& field) {
  std::vector<double> out;
  for (const std::string& s : axis_values(v, field, false)) {
    const auto items =
        s.find("..") != std::string::npos ? expand_int_axis(s, field) : std::vector<int64_t>{};
    if (!items.empty()) {
      for (int64_t x : items) out.push_back(static_cast<double>(x));
      continue;
    }
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !std::isfinite(x))
      throw BadInput(field + ": expected a number or a list of numbers (got '" + s + "')");
    if (x <= 0) throw BadInput(field + ": must be > 0 (got " + s + ")");
    out.push_back(x);
  }
  if (out.empty()) throw BadInput(field + ": empty");
  return out;
}

nlohmann::json split_serve_keys(const nlohmann::json& cfg, nlohmann::json& serve) {
  nlohmann::json run = nlohmann::json::object();
  std::vector<std::string> keys = serve_keys();
  for (const std::string& k : vllm_alias_keys()) keys.push_back(k);
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) != keys.end())
      serve[it.key()] = it.value();
    else
      run[it.key()] = it.value();
  }
  for (const auto& [key, why] : kRefused)
    if (run.contains(key))
      throw BadInput(field_name(key) + ": not a serve option (" + std::string(why) + ")");
  return run;
}

void read_load(ConfigFields& f, ServeSpec& s) {
  const bool rate = f.has(opt::rate.key), conc = f.has(opt::concurrency.key);
  if (rate && conc) throw BadInput("--rate: give --rate or --concurrency, not both");
  s.axis = rate ? "rate" : "concurrency";
  s.loads = load_values(rate ? f.raw("rate") : (conc ? f.raw("concurrency") : nlohmann::json(8)),
                        rate ? "--rate" : "--concurrency");
  f.mark_known(s.axis);
  if (!rate)
    for (double c : s.loads) {
      if (c != std::floor(c))
        throw BadInput("--concurrency: must be a whole number (got " + std::to_string(c) + ")");
      // Past 2^53 a double no longer holds every whole number, and past 2^63 the cast to the
      // scheduler's int64_t is undefined; no engine keeps more requests in flight than this.
      if (c > kMaxConcurrency)
        throw BadInput("--concurrency: at most " + std::to_string(kMaxConcurrency) +
                       " requests in flight (got " + fmt::format("{:g}", c) + ")");
    }
  s.load.burstiness = f.number(opt::burstiness);
  s.load.requests = f.integer(opt::requests, kDefaultServeRequests);
  s.load.warmup_requests = f.integer(opt::warmup_requests);
  s.load.prompt = parse_length_dist(f.str(opt::prompt_len), "--prompt-len");
  s.load.output = parse_length_dist(f.str(opt::output_len), "--output-len");
  s.load.trace_file = f.str(opt::trace);
}

void read_scheduler(ConfigFields& f, ServeSpec& s) {
  s.scheduler = f.choice(opt::scheduler) == "static" ? SchedulerKind::static_batch
                                                     : SchedulerKind::continuous;
  s.chunk = f.integer(opt::chunk, 0);
  if (f.has(opt::chunk.key) && s.chunk == 0)
    throw BadInput("--chunk: must be >= 1 (leave it out for whole prompts)");
  if (s.chunk > 0 && s.scheduler == SchedulerKind::static_batch)
    throw BadInput("--chunk: needs --scheduler continuous");
  if (s.chunk > 0 && f.has(opt::max_step_tokens.key))
    throw BadInput("--max-step-tokens: with --chunk the chunk is the step's token budget");
  s.max_batch = f.integer(opt::max_batch, 0);
  s.max_step_tokens = f.integer(opt::max_step_tokens, 0);
  s.kv_budget_tokens = f.integer(opt::kv_budget, 0);
  s.block_tokens = f.integer(opt::block_tokens);
  s.host_overhead_s = f.duration(opt::host_overhead) * 1e-6;
  s.lm_head = f.boolean(opt::serve_lm_head);
  const std::string slo = f.str(opt::slo);
  if (!slo.empty()) s.slo = parse_slo(slo);
  s.prices = parse_prices(f.str(opt::price));
  s.resume = f.str("resume", "");
}

void read_vllm_save(ConfigFields& f, ServeSpec& s) {
  s.vllm.on = f.boolean("save_result", false);
  s.vllm.dir = f.str(opt::result_dir);
  s.vllm.filename = f.str(opt::result_filename);
  for (const char* k : {"result_dir", "result_filename"})
    if (!s.vllm.on && f.has(k)) throw BadInput(field_name(k) + ": needs --save-result");
  if (s.vllm.filename.find('/') != std::string::npos)
    throw BadInput("--result-filename: a file name; the folder is --result-dir");
}

}  // namespace

std::vector<std::string> serve_keys() {
  // The declared serve options but vLLM's spellings (renamed first), and what serve reads
  // itself of the rest: its own LM head default, --resume and --save-result.
  std::vector<std::string> keys;
  const std::vector<std::string> aliases = vllm_alias_keys();
  for (const OptionDef* o : opt::kServeOptions)
    if (std::find(aliases.begin(), aliases.end(), o->key) == aliases.end()) keys.push_back(o->key);
  for (const char* k : {opt::serve_lm_head.key, "resume", "save_result"}) keys.push_back(k);
  return keys;
}

ServeSpec resolve_serve_spec(const nlohmann::json& cfg, int world,
                             const std::string& default_config_dir) {
  nlohmann::json serve = nlohmann::json::object();
  nlohmann::json run = split_serve_keys(cfg, serve);
  // --resume DIR: the results go back into DIR.
  if (serve.contains("resume")) {
    const std::string dir = serve["resume"].is_string() ? serve["resume"].get<std::string>() : "";
    if (dir.empty()) throw BadInput("--resume: expected a directory");
    if (run.contains("out") && run["out"] != dir)
      throw BadInput("--resume: results go back into " + dir +
                     "; drop --out or make it the same directory");
    run["out"] = dir;
  }
  if (!run.contains("warmup")) run["warmup"] = 2;
  ServeSpec s;
  s.run = resolve_run_spec(run, world, default_config_dir);
  const int ranks = backend_traits(s.run.backend).virtual_ranks ? s.run.world : world;
  if (s.run.tp != ranks)
    throw BadInput("--tp: serve runs one TP group, so tp must equal the ranks (" +
                   std::to_string(ranks) + "; got " + std::to_string(s.run.tp) + ")");
  const auto renamed = apply_vllm_aliases(serve, kDefaultServeRequests);
  ConfigFields f(serve);
  try {
    read_load(f, s);
    read_scheduler(f, s);
    read_vllm_save(f, s);
  } catch (const BadInput& e) {
    throw as_spelled(e, renamed);
  }
  s.load.seed = s.run.seed;
  f.reject_unknown();
  if (!s.load.trace_file.empty()) read_trace(s.load.trace_file);  // bad lines fail here
  return s;
}

void resolve_serve_price(ServeSpec& s) {
  std::optional<GpuPrice> profile;
  if (const auto& p = s.run.hw.price_per_hour)
    profile =
        GpuPrice{s.run.hw.name, p->usd, "hardware profile " + s.run.hw.name + ": " + p->source};
  s.price = price_for(s.prices, s.run.hw.name, profile);
}

LoadSpec ServeSpec::load_at(std::size_t i) const {
  LoadSpec l = load;
  l.rate = axis == "rate" ? loads.at(i) : 0;
  l.concurrency = axis == "concurrency" ? static_cast<int64_t>(loads.at(i)) : 0;
  return l;
}

SchedulerConfig ServeSpec::scheduler_at(std::size_t i) const {
  SchedulerConfig c;
  c.kind = scheduler;
  c.chunk = chunk;
  const LoadSpec l = load_at(i);
  c.concurrency = l.concurrency;
  c.max_running = max_batch > 0 ? max_batch : (l.concurrency > 0 ? l.concurrency : 64);
  c.block_tokens = block_tokens;
  // The step's token limit without a chunk: vLLM's max_num_batched_tokens, 8192 by default.
  c.max_step_tokens = chunk > 0 ? 0 : (max_step_tokens > 0 ? max_step_tokens : 8192);
  return c;
}

nlohmann::ordered_json serve_spec_to_json(const ServeSpec& s) {
  nlohmann::ordered_json j;
  j[s.axis] = s.loads;
  j[opt::burstiness.key] = s.load.burstiness;
  j[opt::requests.key] = s.load.requests;
  j[opt::warmup_requests.key] = s.load.warmup_requests;
  j[opt::prompt_len.key] = s.load.prompt.text();
  j[opt::output_len.key] = s.load.output.text();
  j[opt::trace.key] = s.load.trace_file;
  j[opt::scheduler.key] = scheduler_name(s.scheduler);
  j[opt::chunk.key] = s.chunk;
  j[opt::max_batch.key] = s.max_batch;
  j[opt::max_step_tokens.key] = s.max_step_tokens;
  j[opt::kv_budget.key] = s.kv_budget_tokens;
  j[opt::block_tokens.key] = s.block_tokens;
  j[opt::host_overhead.key] = s.host_overhead_s * 1e6;  // in the flag's bare unit
  j[opt::serve_lm_head.key] = s.lm_head;
  j[opt::slo.key] = s.slo.text();
  if (!s.prices.empty()) j[opt::price.key] = prices_text(s.prices);  // absent: no --price
  return j;
}

}  // namespace tpb
