// `tpbench report --trace merged`: the per-point traces a run wrote (trace.json,
// traces/point-K.json) as one Chrome/Perfetto trace, one process per point and rank, so a
// sweep's points can be read side by side in one viewer. Pure: the verb reads the files.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

// One point's trace document as trace_writer.h wrote it, and where it came from.
struct PointTrace {
  std::size_t source = 0;  // which results document (its position on the command line)
  std::size_t point = 0;   // its index in that document's points[]
  std::string file;        // the trace's path, for the merged metadata
  nlohmann::ordered_json trace;
};

// Every input event, each exactly once, with pid = (P + point) * W + pid, W the most ranks of
// any input trace (its largest pid + 1) and P the points of the documents before the point's
// own; each process is named "point K rank R ..." ("results S point K ..." over several
// documents). A trace's times move by its metadata.time_origin_s less the earliest origin of
// its document, so one run's points keep their order on its clock (each document starts at 0).
// `points_per_source`: the size of each document's points[], so P counts every point.
nlohmann::ordered_json merged_trace(const std::vector<PointTrace>& traces,
                                    const std::vector<std::size_t>& points_per_source);

// How many events a trace document holds.
std::size_t trace_events(const nlohmann::ordered_json& trace);

}  // namespace tpb
