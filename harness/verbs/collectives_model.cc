// `tpbench collectives --backend model`: the same sweep, table and results as a measured run,
// with every virtual rank's iterations made from NCCL's tuning model on the preset's fabric.
// The ranks enter together (nothing here makes one late), so skew and wait are zero and the
// point's figures are the model's; params.model says what it chose.
#include <iostream>
#include <optional>

#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "harness/backends/registry.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/json/nccl_tests_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/report/collectives_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

DeviceCaps model_caps(const Fabric& f) {
  DeviceCaps c;
  c.backend = "model";
  c.name = "modelled: " + f.name;
  c.dtypes = {DType::fp32, DType::bf16, DType::fp16};
  c.device_memory = true;
  return c;
}

// Every virtual rank's stamps for one size: `iters` back-to-back calls of the modelled time.
std::vector<CollRankResult> virtual_ranks(const CollectivesSpec& s, const ModelTime& t) {
  CollRankResult r;
  for (int i = 0; i < s.iters; ++i)
    r.iters.push_back({i * t.time_s, (i + 1) * t.time_s, i, 0, Op::allreduce_attn, 1});
  r.loop_s = t.time_s;
  return std::vector<CollRankResult>(static_cast<std::size_t>(s.world), r);
}

CollModelRecord model_record(const CollectivesSpec& s, const ModelTime& t, int nodes) {
  return {s.algo,
          model_algo_name(t.algo),
          model_proto_name(t.proto),
          nodes,
          s.gpus_per_node,
          t.latency_s,
          t.algbw_GBps,
          "NCCL's tuning model (src/graph/tuning.cc, 2.19 line) on the preset's link figures; "
          "time = latency + bytes / algbw, the fastest protocol for the algorithm"};
}

}  // namespace

int verb_model_collectives(const CliResult& cli, const World& w, const CollectivesSpec& s) {
  const Fabric fabric = load_fabric(s.topology, s.config_dir);
  const int nodes = s.world > s.gpus_per_node ? s.world / s.gpus_per_node : 1;
  std::vector<std::string> built = built_backends();
  built.push_back("model");
  RunContextRecord context = collect_context(w, cli.argv, model_caps(fabric), built);
  context.fabric = nlohmann::ordered_json{{fabric.name, fabric.preset}};
  std::optional<ResultsWriter> writer;
  if (!s.out.empty()) {
    writer.emplace(s.out, to_json(context), coll_spec_to_json(s));
    report_archive(*writer);
  }
  std::vector<std::string> hosts;
  for (int r = 0; r < s.world; ++r) hosts.push_back("node" + std::to_string(r / s.gpus_per_node));
  std::cout << coll_table_header(s, s.world) << std::flush;
  std::vector<CollPointRecord> points;
  const std::string start_time = nccl_tests_time_now();
  int64_t last_bytes = -1;
  for (int64_t size : s.sizes) {
    const CollCounts c = coll_counts(s.kind, size, s.dtype, s.world);
    if (c.bytes == 0 || c.bytes == last_bytes) continue;
    last_bytes = c.bytes;
    const ModelTime t = model_collective(fabric, s.kind, c.bytes, {s.world, nodes},
                                         parse_model_algo(s.algo, "--algo"));
    CollPointRecord p = coll_point(s, c, virtual_ranks(s, t), hosts);
    p.params.model = model_record(s, t, nodes);
    p.clock_sync.method = "none: the virtual ranks share the model's clock";
    points.push_back(std::move(p));
    std::cout << coll_table_row(coll_size_rows(points).back(), false) << std::flush;
    if (writer) writer->add_record(points.back());
  }
  finish_coll_sweep(s.out, points, writer ? &*writer : nullptr);
  write_nccl_tests_file(s, cli, s.world, start_time, points);
  return 0;
}

}  // namespace tpb
