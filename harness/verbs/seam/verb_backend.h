// The one seam between the verbs and a backend: everything in which cpu, cuda and model differ
// for run, sweep, serve and collectives (what the device is, its peaks, how a point, a serve
// load and a collectives size run, where the results say it ran). A verb opens one through the
// registry (seam_registry.h) and never asks for a backend's name.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collectives/kinds/coll_kind.h"
#include "harness/analysis/peaks.h"
#include "harness/config/collectives_spec.h"
#include "harness/config/run_spec.h"
#include "harness/config/serve_spec.h"
#include "harness/drive/serve/serve_runner.h"
#include "harness/mpi/world.h"
#include "harness/record/coll_point_record.h"
#include "harness/record/point_record.h"
#include "harness/record/run_context.h"
#include "layers/device.h"

namespace tpb {

// One level of virtual interface (docs/STYLE.md): the measured ranks on a Device and the
// model's virtual ranks are its two implementations. Calls marked "collective" are made by
// every rank of the world together.
class VerbBackend {
 public:
  virtual ~VerbBackend() = default;

  // What the results' context and points say the device is, for a run, a serve run and a
  // collectives sweep.
  virtual DeviceCaps caps(const RunSpec& spec) const = 0;
  virtual DeviceCaps serve_caps(const ServeSpec& spec) const = 0;
  virtual DeviceCaps collectives_caps(const CollectivesSpec& spec) const = 0;

  // The device's hardware note into `spec` (before the spec is echoed anywhere).
  virtual void adopt(RunSpec& spec) const = 0;
  // Empty when this backend can run `spec`; otherwise why not (a sweep skips the point).
  virtual std::string unsupported_reason(const RunSpec& spec) const = 0;
  // Refuses what a collectives sweep asks of the device that it cannot do (BadInput).
  virtual void accept(const CollectivesSpec& spec) const = 0;

  // The peaks a point is judged against. Collective: the caller agrees on the outcome.
  virtual Peaks peaks(const RunSpec& spec, const World& w) = 0;

  // Where the results say the ranks ran (context.topology or context.fabric): for a run, a
  // serve run or a collectives sweep (`topology`, `collective`, `config_dir` of its spec), and
  // for a sweep's points (every spec, the axes among them). Rank 0.
  virtual void describe(RunContextRecord& c, const std::string& topology,
                        const std::string& collective, const std::string& config_dir) const = 0;
  virtual void describe_sweep(RunContextRecord& c, const std::vector<RunSpec>& specs) const = 0;

  // One point. Collective; the outcome on world rank 0, nothing elsewhere. run_point lets a
  // failure end the verb; sweep_point records it as the point's and goes on (drive/sweep_point.h;
  // `outcome_comm` is the world's duplicate kept for the outcome vote).
  virtual std::optional<PointOutcome> run_point(const RunSpec& spec, const World& w,
                                                const Peaks& peaks) = 0;
  virtual std::optional<PointOutcome> sweep_point(const RunSpec& spec, const World& w,
                                                  const Peaks& peaks, MPI_Comm outcome_comm) = 0;

  // One load of a serve run. Collective; the result on world rank 0.
  virtual ServeResult serve_load(const ServeSpec& spec, std::size_t load_index, const World& w,
                                 const Peaks& peaks) = 0;

  // A collectives sweep: the ranks it runs on, then (collective) its preparation and each
  // size's records, one per half it ran (nccl-tests' out-of-place and in-place; the model's
  // one point stands for both), on world rank 0 (empty elsewhere).
  virtual int collectives_ranks(const CollectivesSpec& spec, const World& w) const = 0;
  // The host of every rank (rank 0), once per sweep, before the first size.
  virtual std::vector<std::string> collectives_start(const CollectivesSpec& spec,
                                                     const World& w) = 0;
  virtual std::vector<CollPointRecord> collectives_size(const CollectivesSpec& spec,
                                                        const CollCounts& counts, const World& w,
                                                        const std::vector<std::string>& hosts) = 0;
};

}  // namespace tpb
