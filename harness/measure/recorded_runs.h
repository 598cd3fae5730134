// Recorded runs as more points of a calibration's op profile: `calibrate --from CAL --runs
// RESULTS` prices each op of each ok point of a run recorded on the same device against the
// calibration's peaks, by the rule of calibrate's own grid (op_fractions.h), and adds the point
// to the efficiency table where the grid has no point of its shape. A grid stops where its
// calibration stopped (prefill 512 before the GPU grid reached 8192), and a run at a longer
// prompt, of this or another model's layers, is the measurement past it. No I/O, no device:
// the verb reads the files.
#pragma once
#include <string>
#include <vector>

#include "harness/record/calibration_record.h"
#include "harness/record/results_doc.h"

namespace tpb {

struct RecordedRun {
  std::string path;  // as given, for messages and the table's source
  ResultsDoc doc;
};

struct RecordedOpPoint {
  OpProfilePointRecord point;  // as a grid point of the op profile: repeat 0, its fastest
  std::string source;          // "FILE points[2]: llama-3.1-70b prefill batch 1 prompt 4096"
};

struct RecordedOps {
  std::vector<RecordedOpPoint> taken;
  std::vector<std::string> skipped;  // a line per point left out, saying why
};

// Throws BadInput("--runs 'FILE': ...") for a run of another backend or device than the
// calibration's (a table holds for one device). A point is left out, with its line in
// `skipped`, when it is not ok or has no ops[]; when its dtype is not the table's or has no
// calibrated peak; when it is a serve point (a mixed step has no grid shape) or a decode point
// at another context than the table's; or when the grid, or an earlier run, has its shape
// (phase, TP, tokens): calibrate's own measurement of its own model stands.
RecordedOps recorded_op_points(const CalibrationRecord& cal, const std::vector<RecordedRun>& runs);

}  // namespace tpb
