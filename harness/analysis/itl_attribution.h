// Why was a token late. Each inter-token gap ends at the step that produced its token; that
// step's duration splits into the host gap, the straggler's extra compute over the group's
// lower median (the time the other ranks spend waiting), the collectives' own transfer time, and
// the rest of the compute, which the cost model divides between the step's prefill rows and its
// decode rows (by their shares of the step's per-op roofline time). For the gaps at or above the
// p99 ITL, the parts a clean decode step does not have (prefill, imbalance, host) count in full,
// and the parts every step has (transfer, decode compute) count by their excess over their median
// across all gaps; in a step with prompt rows, the transfer's excess is theirs by their share of
// the step's tokens (the all-reduce carries every row: a long prompt's payload is its own,
// not the link's fault). Decode compute's excess is split once more by the step's own work: the
// part a larger decode (more rows, longer contexts: its decode rows' roofline time, at the gaps'
// median ratio of compute to roofline time) accounts for is bandwidth, the rest is jitter, compute
// slower than its own work explains on every rank at once (a noisy machine: other tenants, a VM's
// vCPUs slowed, throttling). The shares of that sum say whether the tail was made by prefill
// interference, by imbalance, by the host, by the link, by plain decode bandwidth or by jitter.
// The longest gaps are named one by one by the same split: the late token's own bubble.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpb {

// A step's prompt row: `tokens` of request `request`'s prompt (or of its recompute after a
// preemption), `cached` of them already in the cache (a chunk that continues its prompt).
struct PrefillRow {
  int64_t request = -1, tokens = 0, cached = 0;
};

struct StepParts {
  double duration_s = 0;
  double host_s = 0, imbalance_s = 0, transfer_s = 0, prefill_s = 0, decode_s = 0;
  double decode_roofline_s = 0;  // roofline time of the step's decode rows; 0: not known
  bool has_prefill = false;
  int64_t late_rank = -1;  // the rank with the most busy time in the step (imbalance's); -1: none
  double prompt_token_share = 0;         // the prompt rows' share of the step's tokens
  std::vector<PrefillRow> prefill_rows;  // the step's prompt rows, in the batch's order
};

struct ItlShares {
  double prefill = 0, imbalance = 0, host = 0, transfer = 0, bandwidth = 0, jitter = 0;
};

struct ItlAttribution {
  std::string tail = "p99";
  double threshold_s = 0;  // the p99 ITL
  int64_t samples = 0;     // gaps at or above it
  double excess_s = 0;     // sum over them of each part's excess over its median
  ItlShares shares;        // of excess_s; NaN when excess_s is 0
  double decode_step_p50_s = 0, prefill_step_p50_s = 0;  // median step, without / with prefill
  std::string method;
  // The longest gaps from distinct steps, longest first (ties: the earlier), each named by its
  // largest part; `tokens`: the gaps its step ended (every token that step delayed).
  struct LateToken {
    int64_t request = -1, token = 0, step = 0, tokens = 0;
    double gap_s = 0;
    // prefill, imbalance, host, transfer, bandwidth, jitter, or between_steps (the gap before
    // the producing step: the request sat out other steps)
    std::string part;
    double part_s = 0;
    int64_t rank = -1;  // with imbalance: the step's late rank
    // Every part's excess in this gap, as the tail's shares count it (seconds), and the gap
    // less its step's duration.
    ItlShares parts_s;
    double between_steps_s = 0;
    // The step's prompt rows, the most tokens first (ties: the batch's order), at most
    // kPrefilledNamed of them; prefill_requests counts them all.
    std::vector<PrefillRow> prefilled;
    int64_t prefill_requests = 0;
    // The steps between the two tokens that did not serve the request (-1: not known), and the
    // request's preemptions: why a between_steps gap sat out.
    int64_t skipped_steps = -1, preemptions = 0;
  };
  std::vector<LateToken> worst;
};

inline constexpr std::size_t kWorstGaps = 5;
inline constexpr std::size_t kPrefilledNamed = 3;

// One inter-token gap and the step that produced its later token (an index into `steps`):
// token `token` (0: the first) of request `request`.
struct ItlGap {
  double gap_s = 0;
  int64_t step = 0;
  int64_t request = -1, token = 0;
  int64_t prev_step = -1;   // the step of the earlier token; -1: not known
  int64_t preemptions = 0;  // the request's, over its life
};

// Gaps whose step is out of range are left out.
ItlAttribution attribute_itl(const std::vector<ItlGap>& gaps, const std::vector<StepParts>& steps);

}  // namespace tpb
