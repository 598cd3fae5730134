// `tpbench collectives`: a message-size sweep in nccl-tests' shape (-b/-e/-f, -w, -n), with
// per-iteration percentiles, per-rank arrival skew and wait, and the same results family as
// `run` when --out is given.
#include <iostream>
#include <memory>
#include <optional>

#include "base/mpi_check.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/mpi/agreement.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/json/nccl_tests_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/report/collectives_table.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// Rank 0 (every rank collects the context): the results folder when --out is given, the
// oversubscription warning and the table header.
std::optional<ResultsWriter> open_results(const CliResult& cli, const World& w,
                                          const CollectivesSpec& s, const VerbBackend& backend) {
  auto context =
      collect_context(w, cli.argv, backend.collectives_caps(s), context_backends(s.backend));
  std::optional<ResultsWriter> writer;
  if (w.rank != 0) return writer;
  backend.describe(context, s.topology, s.collective, s.config_dir);
  if (!s.out.empty()) {
    writer.emplace(s.out, to_json(context), coll_spec_to_json(s));
    report_archive(*writer);
  }
  if (context.oversubscribed)
    std::cerr << "warning: " << context.ranks_per_core
              << " ranks per core: timings are time-sliced\n";
  std::cout << coll_table_header(s, backend.collectives_ranks(s, w)) << std::flush;
  return writer;
}

}  // namespace

void write_nccl_tests_file(const CollectivesSpec& s, const CliResult& cli, int ranks,
                           const std::string& start_time,
                           const std::vector<CollPointRecord>& points) {
  if (s.output_file.empty()) return;
  const NcclTestsRun run{cli.argv, start_time, nccl_tests_time_now(), ranks};
  write_nccl_tests_json(s.output_file, nccl_tests_json(s, run, points, coll_summary(points)));
  std::cout << "# nccl-tests JSON: " << s.output_file << "\n" << std::flush;
}

int verb_collectives(const CliResult& cli, const World& w) {
  CollectivesSpec s;
  std::unique_ptr<VerbBackend> backend;
  agree(w.comm, [&] {
    s = resolve_coll_spec(cli.config, w.size, config_dir_for(cli.config));
    if (w.rank == 0 && !s.out.empty()) ensure_writable_dir(s.out);
    // Refused before the sweep, on every rank together, not after it on rank 0 alone.
    if (w.rank == 0 && !s.output_file.empty()) check_nccl_tests_path(s.output_file);
    backend = builtin_seams().open(device_options(s, w));
    backend->accept(s);
  });
  std::optional<ResultsWriter> writer = open_results(cli, w, s, *backend);
  const int ranks = backend->collectives_ranks(s, w);
  const std::vector<std::string> hosts = backend->collectives_start(s, w);
  std::vector<CollPointRecord> points;
  const std::string start_time = nccl_tests_time_now();
  int64_t last_bytes = -1;
  for (int64_t size : s.sizes) {
    const CollCounts c = coll_counts(s.kind, size, s.dtype, ranks);
    // Sizes below one element per rank, or rounding onto the previous size, add nothing.
    if (c.bytes == 0 || c.bytes == last_bytes) continue;
    last_bytes = c.bytes;
    for (CollPointRecord& p : backend->collectives_size(s, c, w, hosts)) {
      points.push_back(std::move(p));
      if (writer) writer->add_record(points.back());
    }
    if (w.rank == 0)
      std::cout << coll_table_row(coll_size_rows(points).back(), s.baseline) << std::flush;
  }
  int64_t wrong = w.rank == 0 ? finish_coll_sweep(s.out, points, writer ? &*writer : nullptr) : 0;
  if (w.rank == 0) write_nccl_tests_file(s, cli, ranks, start_time, points);
  // A wrong value is a failed run, as in nccl-tests: every rank exits with the same code.
  TPB_MPI_CHECK(MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, w.comm));
  return wrong == 0 ? 0 : static_cast<int>(ExitCode::internal);
}

}  // namespace tpb
