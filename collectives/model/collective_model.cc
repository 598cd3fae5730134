// NCCL's tuning model, restated. The constants are NCCL's, read in src/graph/tuning.cc of the
// release the fabric names (nccl_tuning.h: 2.20.3 by default, or 2.27.3): baseLat, hwLat, the
// LL bandwidth caps, the protocol/algorithm bandwidth factors, the tree correction
// table and the ring's multi-node Simple latency plateau. The link figures come from the
// preset. Departures from NCCL's model, each for a stated reason:
//  - bus bandwidth is the preset's per-GPU intra figure, bounded across nodes by what the
//    node's NICs carry (one ring per channel crosses every node boundary once, so a node's
//    egress equals the ring's bus bandwidth); NCCL derives it from its channel search, which
//    needs the machine;
//  - the per-channel LL128 and tree caps are left out (they need NCCL's channel count), and so
//    is the network's own latency (graphs->latencyInter, the net plugin's);
//  - the ring plateau's size threshold needs the channel count too: taken as 2 channels per
//    NIC the ring crosses (ASSUMED, not NCCL's search); the plateau's height is NCCL's 1.4
//    (compute capability 8.0 and later: every modelled preset; Volta's 1.9 is not modelled);
//  - NVLS (NVLink SHARP, one node): each GPU moves S (1 + 1/n) bytes per direction (S out as
//    the switch pulls every rank's slice for the reduction, S/n back; S/n out and S back for
//    the multicast all-gather), so algbw = line x efficiency x n / (n + 1). NCCL writes a
//    fixed 5/6; the measured algbw rising with n (NVIDIA/nccl issue 1455: 258 GB/s at 5 GPUs to
//    273 at 8 on H100) is what n / (n + 1) describes.
#include "collectives/model/collective_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "base/enum_names.h"
#include "base/errors.h"
#include "collectives/model/custom_allreduce.h"

namespace tpb {

namespace {

// ModelAlgo's spellings, for --algo and the results.
constexpr std::array<const char*, 8> kModelAlgoNames{"ring",    "tree", "nvls", "oneshot",
                                                     "twoshot", "nccl", "auto", "measured"};

constexpr int kRing = 0, kTree = 1, kNvls = 2;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

// Network post overhead per inter-node ring step, us (Intel x86), three times for Simple.
constexpr double kNetOverheadUs = 1.0;
// Trees run below their model at medium sizes; NCCL scales their bandwidth by this, indexed by
// log2(bytes / 64), 64 B .. 256 MB (treeCorrectionFactor, the same in 2.20.3 and 2.27.3).
constexpr int kTreeSizes = 23;
constexpr double kTreeCorrection[3][kTreeSizes] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// The ring's multi-node Simple all-reduce latency plateau (ncclTopoGetAlgoTime): latency x 1.4
// once bytes / (channels x ranks) >= 64.
constexpr double kRingPlateau = 1.4;
constexpr int64_t kPlateauBytesPerChannelRank = 64;
constexpr int kChannelsPerNic = 2;  // ASSUMED (see the departures above)

int hw_index(LinkHw hw) {
  return hw == LinkHw::nvlink ? 0 : hw == LinkHw::pci ? 1 : 2;
}

int log2i(int64_t v) {
  int l = 0;
  while (v >>= 1) ++l;
  return l;
}

struct Shape {
  const Fabric& f;
  CollKind kind;
  int n, nodes, ppn;
};

// LL's ceiling: on one node by the GPUs' generation, across nodes by the node count.
double ll_max(const Shape& s) {
  const NcclTuning& t = *s.f.nccl;
  if (s.nodes > 1) return s.nodes == 2 ? t.ll_max_two_nodes : t.ll_max_more_nodes;
  if (t.ll_max_one_node[0] == t.ll_max_one_node[1] && t.ll_max_one_node[1] == t.ll_max_one_node[2])
    return t.ll_max_one_node[0];  // one figure for every generation: the preset need not say
  if (!s.f.gpu_arch)
    throw BadInput("--topology: NCCL " + std::string(t.version) +
                   "'s one-node LL ceiling depends on the GPU generation, and topology '" +
                   s.f.name + "' has no gpu_arch");
  return t.ll_max_one_node[static_cast<int>(*s.f.gpu_arch)];
}

// One inter-node step's latency (hwLat's network row); with one rank per node 2.27 takes the
// tree's for every algorithm ("latencies are fully exposed").
double net_lat(const Shape& s, int algo, int p) {
  const NcclTuning& t = *s.f.nccl;
  return t.hw_lat[2][t.ppn1_takes_tree_net_latency && s.ppn == 1 ? kTree : algo][p];
}

// The ring's bus bandwidth: the intra links, and across nodes what the node's NICs carry.
double ring_bus(const Shape& s) {
  double b = s.f.intra.bus_GBps();
  if (s.nodes > 1) b = std::min(b, s.f.inter->bus_GBps() * std::min(s.f.nics_per_node, s.ppn));
  return b;
}

bool proto_enabled(const Shape& s, int p) {
  // NCCL enables LL128 by default only where the intra-node path is NVLink.
  return p != kLL128 || s.f.intra.hw == LinkHw::nvlink;
}

// Latency (us) and algbw (GB/s) of one algorithm and protocol; algbw 0 = not available.
std::pair<double, double> ring_model(const Shape& s, int p, int64_t bytes) {
  const bool ar = s.kind == CollKind::all_reduce;
  const bool chain = s.kind == CollKind::broadcast || s.kind == CollKind::reduce;
  const int steps = ar ? 2 * (s.n - 1) : chain ? s.n : s.n - 1;
  const NcclTuning& t = *s.f.nccl;
  const int ar_inter = t.inter_steps_nodes_minus_one ? 2 * (s.nodes - 1) : 2 * s.nodes;
  const int inter = ar ? (s.nodes > 1 ? ar_inter : 0) : chain ? s.nodes : s.nodes - 1;
  double bus = ring_bus(s);
  if (p == kLL)
    bus = std::min(ll_max(s), bus * ((s.nodes > 1 || ar || s.kind == CollKind::reduce)
                                         ? t.ring_ll_factor_ar
                                         : t.ring_ll_factor_other));
  if (p == kLL128) bus *= s.ppn < 2 ? t.ring_ll128_factor_ppn1 : t.ring_ll128_factor;
  const int intra_hw = hw_index(s.f.intra.hw);
  double lat = t.base_lat[kRing][p];
  if (chain) {
    lat += t.hw_lat[s.nodes == 1 ? intra_hw : 2][kRing][p];  // pipelined: one step's latency
  } else {
    double intra_lat = t.hw_lat[intra_hw][kRing][p];
    if (s.nodes > 1) intra_lat = std::max(intra_lat, kNetOverheadUs * (p == kSimple ? 3 : 1));
    lat += (steps - inter) * intra_lat + inter * net_lat(s, kRing, p);
  }
  const int64_t channels = int64_t{kChannelsPerNic} * std::min(s.f.nics_per_node, s.ppn);
  if (ar && p == kSimple && s.nodes > 1 && bytes / (channels * s.n) >= kPlateauBytesPerChannelRank)
    lat *= kRingPlateau;
  return {lat, bus * s.n / steps};
}

std::pair<double, double> tree_model(const Shape& s, int p, int64_t bytes) {
  double bus = ring_bus(s) * 0.92;
  if (p == kLL) bus = std::min(bus / 3.8, ll_max(s));
  if (p == kLL128) bus *= s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  double algbw = bus * 0.5;
  const int log_size = log2i(bytes >> 6);
  if (log_size < kTreeSizes) algbw *= kTreeCorrection[p][log_size];
  const NcclTuning& t = *s.f.nccl;
  const double intra_lat = t.hw_lat[hw_index(s.f.intra.hw)][kTree][p];
  const double lat =
      t.base_lat[kTree][p] + 2 * ((s.ppn - 1) * intra_lat + log2i(s.nodes) * net_lat(s, kTree, p));
  return {lat, algbw};
}

std::pair<double, double> nvls_model(const Shape& s) {
  const double algbw = s.f.intra.line_GBps * *s.f.nvls_efficiency * s.n / (s.n + 1.0);
  const NcclTuning& t = *s.f.nccl;
  return {t.base_lat[kNvls][kSimple] + t.hw_lat[0][kNvls][kSimple], algbw};
}

bool is_custom(ModelAlgo a) {
  return a == ModelAlgo::oneshot || a == ModelAlgo::twoshot;
}

void check_custom(const Shape& s, ModelAlgo a) {
  const std::string name = model_algo_name(a);
  if (!s.f.custom_ar)
    throw BadInput("--algo: " + name +
                   " is the custom all-reduce over NVLink P2P, which topology '" + s.f.name +
                   "' does not model (no custom_allreduce section)");
  if (s.nodes > 1)
    throw BadInput("--algo: " + name + " reads peers' memory inside one node; this group spans " +
                   std::to_string(s.nodes) + " nodes");
  if (s.n > 1 && !custom_group_size(s.n))
    throw BadInput("--algo: " + name +
                   " runs on 2, 4, 6 or 8 ranks (vLLM's kernels); this group has " +
                   std::to_string(s.n));
}

void check_algo(const Shape& s, ModelAlgo a) {
  if (a == ModelAlgo::ring || a == ModelAlgo::automatic || a == ModelAlgo::nccl) return;
  if (s.kind != CollKind::all_reduce)
    throw BadInput(std::string("--algo: ") + model_algo_name(a) + " is an all_reduce algorithm");
  if (is_custom(a)) return check_custom(s, a);
  if (a == ModelAlgo::nvls && !s.f.nvls_efficiency)
    throw BadInput("--algo: nvls needs NVLink SHARP, which topology '" + s.f.name +
                   "' does not have");
  if (a == ModelAlgo::nvls && s.nodes > 1)
    throw BadInput("--algo: nvls is one node's NVSwitch; this group spans " +
                   std::to_string(s.nodes) + " nodes (NCCL's NVLSTree is not modelled)");
}

}  // namespace

ModelAlgo parse_model_algo(const std::string& t, const std::string& option) {
  // "measured" names a curve given with --topology, not an algorithm one can ask for.
  const std::optional<ModelAlgo> a = enum_from_name<ModelAlgo>(kModelAlgoNames, t);
  if (!a || *a == ModelAlgo::measured)
    throw BadInput(option + ": '" + t +
                   "' is not ring, tree, nvls, oneshot, twoshot, nccl or auto");
  return *a;
}

const char* model_algo_name(ModelAlgo a) {
  return enum_name(kModelAlgoNames, a);
}

const char* model_proto_name(ModelProto p) {
  return p == ModelProto::ll      ? "LL"
         : p == ModelProto::ll128 ? "LL128"
         : p == ModelProto::p2p   ? "P2P"
                                  : "Simple";
}

namespace {

ModelTime measured_collective(const Fabric& f, CollKind kind, int64_t bytes, ModelGroup g,
                              ModelAlgo algo) {
  const MeasuredCurve& c = *f.measured;
  if (g.ranks == 1) return {ModelAlgo::measured, ModelProto::simple, 0, 0, 0};
  if (algo != ModelAlgo::automatic)
    throw BadInput("--algo: '" + f.name + "' is a measured curve; it has no algorithm to choose " +
                   "(leave --algo auto)");
  if (kind != CollKind::all_reduce)
    throw BadInput("--topology: '" + f.name + "' holds an all-reduce curve only");
  if (g.ranks != c.ranks)
    throw BadInput("--topology: '" + f.name + "' was measured over " + std::to_string(c.ranks) +
                   " ranks; a group here has " + std::to_string(g.ranks) +
                   " (calibrate with as many ranks as the TP degree)");
  const double t = c.time_s(bytes);
  // No latency/bandwidth split: the curve is the whole time.
  return {ModelAlgo::measured, ModelProto::simple, 0, static_cast<double>(bytes) / t / 1e9, t};
}

}  // namespace

namespace {

// Every algorithm and protocol NCCL could run for this group, with its latency and its
// algorithm bandwidth at `bytes`, as ncclTopoTuneModel tabulates them.
std::vector<NcclCandidate> candidates(const Shape& s, int64_t bytes) {
  std::vector<NcclCandidate> out;
  for (ModelAlgo a : {ModelAlgo::ring, ModelAlgo::tree, ModelAlgo::nvls}) {
    if (a != ModelAlgo::ring && s.kind != CollKind::all_reduce) continue;
    if (a == ModelAlgo::nvls && (!s.f.nvls_efficiency || s.nodes > 1)) continue;
    for (int p : {kLL, kLL128, kSimple}) {
      if (a == ModelAlgo::nvls && p != kSimple) continue;  // NVLS runs Simple only
      if (!proto_enabled(s, p)) continue;
      const auto [lat_us, algbw] = a == ModelAlgo::ring   ? ring_model(s, p, bytes)
                                   : a == ModelAlgo::tree ? tree_model(s, p, bytes)
                                                          : nvls_model(s);
      if (algbw > 0) out.push_back({a, static_cast<ModelProto>(p), lat_us, algbw});
    }
  }
  return out;
}

// NCCL's choice among its algorithms (`only`: one of them, or nccl / automatic for all) and
// their protocols: the fastest, as ncclTopoGetAlgoTime ranks them.
ModelTime nccl_choice(const Shape& s, int64_t bytes, ModelAlgo only) {
  ModelTime best;
  best.time_s = std::numeric_limits<double>::infinity();
  const bool any = only == ModelAlgo::nccl || only == ModelAlgo::automatic;
  for (const NcclCandidate& c : candidates(s, bytes)) {
    if (!any && c.algo != only) continue;
    const double t = (c.latency_us + static_cast<double>(bytes) / (1000.0 * c.algbw_GBps)) * 1e-6;
    if (t < best.time_s) best = {c.algo, c.proto, c.latency_us * 1e-6, c.algbw_GBps, t};
  }
  return best;
}

ModelTime custom_collective(const Shape& s, int64_t bytes, CustomShot shot) {
  const CustomTime c = custom_time(*s.f.custom_ar, s.f.intra.line_GBps, shot, s.n);
  const double t = (c.latency_us + static_cast<double>(bytes) / (1000.0 * c.algbw_GBps)) * 1e-6;
  return {shot == CustomShot::one ? ModelAlgo::oneshot : ModelAlgo::twoshot, ModelProto::p2p,
          c.latency_us * 1e-6, c.algbw_GBps, t};
}

}  // namespace

std::optional<ModelGroup> contiguous_group(const Fabric& f, int ranks) {
  const int per = std::max(1, f.gpus_per_node);
  if (ranks <= per) return ModelGroup{ranks, 1};
  if (ranks % per != 0) return std::nullopt;
  return ModelGroup{ranks, ranks / per};
}

ModelTime model_collective(const Fabric& f, CollKind kind, int64_t bytes, ModelGroup g,
                           ModelAlgo algo) {
  if (f.measured) return measured_collective(f, kind, bytes, g, algo);
  if (g.ranks < 1 || g.nodes < 1 || g.ranks % g.nodes != 0)
    throw BadInput("--world: " + std::to_string(g.ranks) + " ranks do not split evenly over " +
                   std::to_string(g.nodes) + " nodes");
  if (g.nodes > 1 && !f.inter)
    throw BadInput("--topology: '" + f.name + "' is one node of " +
                   std::to_string(f.gpus_per_node) +
                   " GPUs and has no link between nodes; a group across nodes needs a preset "
                   "with an inter section (ib-ndr, ib-xdr, roce-400g)");
  const Shape s{f, kind, g.ranks, g.nodes, g.ranks / g.nodes};
  check_algo(s, algo);
  if (g.ranks == 1) {
    const bool chosen = algo == ModelAlgo::automatic || algo == ModelAlgo::nccl;
    return {chosen ? ModelAlgo::ring : algo, ModelProto::simple, 0, 0, 0};
  }
  if (is_custom(algo))
    return custom_collective(s, bytes,
                             algo == ModelAlgo::oneshot ? CustomShot::one : CustomShot::two);
  if (algo == ModelAlgo::automatic && kind == CollKind::all_reduce &&
      engine_takes_custom(f, g.ranks, g.nodes, bytes))
    return custom_collective(s, bytes, engine_shot(g.ranks, bytes));
  return nccl_choice(s, bytes, algo);
}

std::vector<NcclCandidate> nccl_candidates(const Fabric& f, CollKind kind, int64_t bytes,
                                           ModelGroup g) {
  if (f.measured || g.ranks < 2 || g.nodes < 1 || g.ranks % g.nodes != 0 ||
      (g.nodes > 1 && !f.inter))
    return {};
  return candidates({f, kind, g.ranks, g.nodes, g.ranks / g.nodes}, bytes);
}

}  // namespace tpb
