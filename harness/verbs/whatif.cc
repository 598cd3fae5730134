// `tpbench whatif DIR [--json] [--chunk N] [--kv-budget TOKENS] [--topology NAME]`: what fixing
// each cause would buy on a measured run, sweep or serve, replayed from the point traces or through
// the serve scheduler (record/whatif_builder.h). Writes the results' whatif section, then prints
// the ranked table, or with --json the section itself.
#include <filesystem>
#include <iostream>

#include "base/errors.h"
#include "harness/config/config_dir.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"
#include "harness/record/whatif/whatif_builder.h"
#include "harness/record/whatif/whatif_json.h"
#include "harness/report/whatif_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// A positive count (tokens, sequences) given as `key` (0 when not given); BadInput naming `flag`
// otherwise.
int64_t tokens_option(const nlohmann::json& config, const char* key, const char* flag) {
  if (!config.contains(key)) return 0;
  const std::string text =
      config[key].is_string() ? config[key].get<std::string>() : config[key].dump();
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1)
    throw BadInput(std::string("whatif: ") + flag + " must be a positive whole number, got '" +
                   text + "'");
  return v;
}

// (1.25.0) A priced serve point's fixes at the same GPUs and price: each counterfactual's cost
// per million output tokens over its own output tokens/s, the measured one the point's.
void price_counterfactuals(const nlohmann::ordered_json& doc, WhatifRecord& rec) {
  const auto& points = doc.at(points_section());
  for (Counterfactual& c : rec.counterfactuals) {
    if (c.point < 0 || static_cast<std::size_t>(c.point) >= points.size()) continue;
    const auto p = try_point_from_json(points[static_cast<std::size_t>(c.point)]);
    if (!p || !p->metrics || !p->metrics->cost_per_mtok || !p->params.serve) continue;
    const CostPerMtok& k = *p->metrics->cost_per_mtok;
    if (c.measured.tokens_per_s) c.measured.cost_per_mtok_usd = k.output_usd;
    if (c.figures.tokens_per_s)
      c.figures.cost_per_mtok_usd =
          usd_per_mtok(k.gpus, k.usd_per_gpu_hour, *c.figures.tokens_per_s);
  }
}

}  // namespace

int verb_whatif(const CliResult& cli, const World& w) {
  nlohmann::ordered_json doc;
  WhatifRecord rec;
  std::string file;
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "json" && it.key() != "chunk" && it.key() != "kv_budget" &&
          it.key() != "max_batch" && it.key() != "topology" && it.key() != "config_dir")
        throw BadInput("whatif: option '" + it.key() + "' does not apply");
    WhatifOptions opt{tokens_option(cli.config, "chunk", "--chunk"),
                      tokens_option(cli.config, "kv_budget", "--kv-budget"),
                      tokens_option(cli.config, "max_batch", "--max-batch"),
                      cli.config.value("topology", ""), ""};
    if (!opt.topology.empty()) opt.config_dir = config_dir_for(cli.config);
    if (cli.positional.size() != 1) throw BadInput("whatif: give one RESULTS directory");
    doc = load_results(cli.positional[0], "whatif");
    file = results_file_of(cli.positional[0]);
    const std::string dir = std::filesystem::path(file).parent_path().string();
    rec = build_whatif(doc, dir.empty() ? "." : dir, opt);
    price_counterfactuals(doc, rec);
  });
  if (w.rank != 0) return 0;
  doc[whatif_section()] = to_json(rec);
  write_file_atomic(
      file, doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  if (cli.config.value("json", false)) {
    std::cout << to_json(rec).dump(2) << "\n";
    return 0;
  }
  std::cout << "what fixing it buys (" << file
            << ", replayed from the point traces; serve points through their scheduler)\n"
            << whatif_table_md(rec);
  return 0;
}

}  // namespace tpb
