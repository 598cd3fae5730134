// Reading an engine table file and pricing ops from it. The file (times in seconds, sizes in
// bytes, null = not measured):
//   {"format": 1, "engine": E, "hardware": H, "provenance": {...},
//    "gemm": {DT: {"kernel", "m": [...], "n": [...], "k": [...], "s": s[m][n][k]}},
//    "decode_attention" | "prefill_attention": {KV_DT: [{"kernel", "q_heads", "kv_heads",
//        "head_dim", "batch": [...], "context" | "prompt": [...], "s": s[batch][len]}]},
//    "collectives": {KIND: {IMPL: {"RANKS": {"bytes": [...], "s": [...]}}}},
//    "elementwise": {"bw_fraction", "fixed_s", "source"}}
#include "layers/profile/engine_tables.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "base/errors.h"
#include "base/read_text.h"

namespace tpb {

namespace {

using Json = nlohmann::ordered_json;

// The work a table's time scales with past its grid (table_grid.h WorkFn).
double gemm_work(std::span<const double> p) {
  return p[0] * p[1] * p[2];  // m * n * k multiply-adds
}
double decode_work(std::span<const double> p) {
  return p[0] * p[1];  // batch x cached tokens read
}
double prefill_work(std::span<const double> p) {
  return p[0] * p[1] * p[1];  // batch x prompt^2 scores (causal: half of them, the same ratio)
}

std::string describe(const Json& v) {
  const std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

}  // namespace

// The file's checks, each failure one BadInput naming the file and the field.
class EngineTablesParser {
 public:
  explicit EngineTablesParser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw BadInput("engine table '" + path_ + "': " + field + ": " + what);
  }

  const Json& need(const Json& j, const std::string& key, const std::string& field) const {
    if (!j.is_object() || !j.contains(key)) fail(field, "missing");
    return j[key];
  }

  const Json& object(const Json& j, const std::string& field) const {
    if (!j.is_object()) fail(field, "must be an object (got " + describe(j) + ")");
    return j;
  }

  std::string text(const Json& j, const std::string& key, const std::string& field) const {
    const Json& v = need(j, key, field);
    if (!v.is_string()) fail(field, "must be a string (got " + describe(v) + ")");
    return v.get<std::string>();
  }

  double number(const Json& v, const std::string& field, double lo, double hi) const {
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
      fail(field, "must be a number in [" + Json(lo).dump() + ", " + Json(hi).dump() + "] (got " +
                      describe(v) + ")");
    return v.get<double>();
  }

  int64_t count(const Json& j, const std::string& key, const std::string& field) const {
    const Json& v = need(j, key, field);
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      fail(field, "must be a whole number >= 1 (got " + describe(v) + ")");
    return v.get<int64_t>();
  }

  // A time in seconds; null (not measured) is NaN where a grid may have holes.
  double time(const Json& v, const std::string& field, bool nullable) const {
    if (nullable && v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number())
      fail(field, std::string("must be a time in seconds") + (nullable ? " or null" : "") +
                      " (got " + describe(v) + ")");
    if (v.get<double>() < 0) fail(field, "a negative time (" + describe(v) + " s)");
    return v.get<double>();
  }

  std::vector<double> axis(const Json& j, const std::string& key, const std::string& field) const {
    const Json& v = need(j, key, field);
    if (!v.is_array() || v.empty()) fail(field, "must be a non-empty array of sizes");
    std::vector<double> a;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = field + "[" + std::to_string(i) + "]";
      if (!v[i].is_number() || v[i].get<double>() <= 0)
        fail(at, "must be a size > 0 (got " + describe(v[i]) + ")");
      a.push_back(v[i].get<double>());
      if (i > 0 && a[i] <= a[i - 1])
        fail(field, "must ascend (" + describe(v[i]) + " after " + describe(v[i - 1]) + ")");
    }
    return a;
  }

  // s nested one array per axis (the last innermost), appended to `out` row-major.
  void fill(const Json& s, const std::vector<std::vector<double>>& axes,
            const std::vector<std::string>& names, std::size_t depth, const std::string& field,
            std::vector<double>& out) const {
    const bool innermost = depth + 1 == axes.size();
    if (!s.is_array()) fail(field, "must be an array over " + names[depth]);
    if (s.size() != axes[depth].size())
      fail(field, std::to_string(s.size()) + (innermost ? " values" : " rows") + ", but " +
                      names[depth] + " has " + std::to_string(axes[depth].size()) + " values");
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::string at = field + "[" + std::to_string(i) + "]";
      if (innermost)
        out.push_back(time(s[i], at, true));
      else
        fill(s[i], axes, names, depth + 1, at, out);
    }
  }

  DenseGrid grid(const Json& j, const std::vector<std::string>& names,
                 const std::string& field) const {
    std::vector<std::vector<double>> axes;
    for (const std::string& n : names) axes.push_back(axis(j, n, field + "." + n));
    std::vector<double> values;
    fill(need(j, "s", field + ".s"), axes, names, 0, field + ".s", values);
    bool any = false;
    for (double v : values) any = any || v == v;  // NaN is the one value unequal to itself
    if (!any) fail(field + ".s", "no measured time (every value is null)");
    return DenseGrid(std::move(axes), std::move(values));
  }

  DType dtype(const std::string& key, const std::string& field) const {
    for (std::size_t i = 0; i < kDTypeCount; ++i)
      if (key == kDTypeNames[i]) return static_cast<DType>(i);
    fail(field, "unknown dtype '" + key + "' (known: fp32, bf16, fp16, fp8)");
  }

  void gemm(const Json& j, EngineTables& t) const {
    for (auto it = object(j, "gemm").begin(); it != j.end(); ++it) {
      const std::string field = "gemm." + it.key();
      const DType dt = dtype(it.key(), field);
      t.gemm_kernel_[dt] = text(object(it.value(), field), "kernel", field + ".kernel");
      t.gemm_.emplace(dt, grid(it.value(), {"m", "n", "k"}, field));
    }
  }

  void attention(const Json& j, const std::string& table, const char* len,
                 std::map<DType, std::vector<EngineTables::AttentionGrid>>& out) const {
    for (auto it = object(j, table).begin(); it != j.end(); ++it) {
      const std::string field = table + "." + it.key();
      std::vector<EngineTables::AttentionGrid>& shapes = out[dtype(it.key(), field)];
      if (!it.value().is_array()) fail(field, "must be an array of head shapes");
      for (std::size_t i = 0; i < it.value().size(); ++i) {
        const Json& e = object(it.value()[i], field + "[" + std::to_string(i) + "]");
        const std::string at = field + "[" + std::to_string(i) + "]";
        EngineTables::AttentionGrid g;
        g.q_heads = count(e, "q_heads", at + ".q_heads");
        g.kv_heads = count(e, "kv_heads", at + ".kv_heads");
        g.head_dim = count(e, "head_dim", at + ".head_dim");
        g.kernel = text(e, "kernel", at + ".kernel");
        for (const auto& s : shapes)
          if (s.q_heads == g.q_heads && s.kv_heads == g.kv_heads && s.head_dim == g.head_dim)
            fail(at, "head shape " + std::to_string(g.q_heads) + "/" + std::to_string(g.kv_heads) +
                         "/" + std::to_string(g.head_dim) +
                         " (q_heads/kv_heads/head_dim) appears twice");
        g.grid = grid(e, {"batch", len}, at);
        shapes.push_back(std::move(g));
      }
    }
  }

  EngineTables::Curve curve(const Json& j, const std::string& field) const {
    EngineTables::Curve c;
    c.bytes = axis(object(j, field), "bytes", field + ".bytes");
    const Json& s = need(j, "s", field + ".s");
    if (!s.is_array() || s.size() != c.bytes.size())
      fail(field + ".s",
           "must hold one time per size (" + std::to_string(c.bytes.size()) + " sizes in bytes)");
    for (std::size_t i = 0; i < s.size(); ++i)
      c.s.push_back(time(s[i], field + ".s[" + std::to_string(i) + "]", false));
    return c;
  }

  int ranks(const std::string& key, const std::string& field) const {
    if (key.empty() || key.size() > 6 || key.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(key) < 2)
      fail(field, "a rank count must be a whole number >= 2 (got '" + key + "')");
    return std::stoi(key);
  }

  void collectives(const Json& j, EngineTables& t) const {
    for (auto kind = object(j, "collectives").begin(); kind != j.end(); ++kind) {
      const std::string kf = "collectives." + kind.key();
      for (auto impl = object(kind.value(), kf).begin(); impl != kind.value().end(); ++impl) {
        const std::string inf = kf + "." + impl.key();
        for (auto r = object(impl.value(), inf).begin(); r != impl.value().end(); ++r)
          t.collectives_[kind.key()][impl.key()][ranks(r.key(), inf + "." + r.key())] =
              curve(r.value(), inf + "." + r.key());
      }
    }
  }

  void elementwise(const Json& j, EngineTables& t) const {
    object(j, "elementwise");
    // A fraction of the peak bandwidth, and a kernel's fixed cost: 1 s would be a unit slip.
    t.bw_fraction_ = number(need(j, "bw_fraction", "elementwise.bw_fraction"),
                            "elementwise.bw_fraction", 1e-3, 1);
    t.fixed_s_ = number(need(j, "fixed_s", "elementwise.fixed_s"), "elementwise.fixed_s", 0, 1);
    t.elementwise_source_ = text(j, "source", "elementwise.source");
  }

  EngineTables parse(const Json& j) const {
    object(j, "the file");
    static const char* const kKnown[] = {
        "format",     "engine",           "hardware",          "provenance",
        "gemm",       "decode_attention", "prefill_attention", "collectives",
        "elementwise"};
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::find(std::begin(kKnown), std::end(kKnown), it.key()) == std::end(kKnown))
        fail(it.key(),
             "unknown field (known: format, engine, hardware, provenance, gemm, "
             "decode_attention, prefill_attention, collectives, elementwise)");
    const Json& format = need(j, "format", "format");
    if (!format.is_number_integer() || format.get<int64_t>() != 1)
      fail("format", "this tpbench reads format 1 (got " + describe(format) + ")");
    EngineTables t;
    t.path = path_;
    t.engine = text(j, "engine", "engine");
    t.hardware = text(j, "hardware", "hardware");
    t.provenance_ = object(need(j, "provenance", "provenance"), "provenance");
    if (text(t.provenance_, "source", "provenance.source").empty())
      fail("provenance.source", "must say where the times were measured");
    if (j.contains("gemm")) gemm(j["gemm"], t);
    if (j.contains("decode_attention"))
      attention(j["decode_attention"], "decode_attention", "context", t.decode_);
    if (j.contains("prefill_attention"))
      attention(j["prefill_attention"], "prefill_attention", "prompt", t.prefill_);
    if (j.contains("collectives")) collectives(j["collectives"], t);
    elementwise(need(j, "elementwise", "elementwise"), t);
    return t;
  }

 private:
  std::string path_;
};

EngineTables EngineTables::load(const std::string& path) {
  const std::string text = read_text_file(path, "engine table");
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadInput("engine table '" + path + "': malformed JSON: " + json_error_text(e));
  }
  return EngineTablesParser(path).parse(j);
}

std::string EngineTables::path_for(const std::string& engine, const std::string& hardware,
                                   const std::string& config_dir) {
  return (std::filesystem::path(config_dir) / "engine_tables" / engine / (hardware + ".json"))
      .string();
}

std::optional<EngineTables> EngineTables::find(const std::string& engine,
                                               const std::string& hardware,
                                               const std::string& config_dir) {
  for (const std::string* name : {&engine, &hardware})
    if (name->empty() || name->find('/') != std::string::npos || *name == "..") return std::nullopt;
  const std::string path = path_for(engine, hardware, config_dir);
  if (!std::filesystem::is_regular_file(path)) return std::nullopt;
  EngineTables t = load(path);
  // A file copied under another engine's or GPU's name would price one with the other's times.
  if (t.engine != engine)
    throw BadInput("engine table '" + path + "': engine: '" + t.engine +
                   "', but the file sits under '" + engine + "'");
  if (t.hardware != hardware)
    throw BadInput("engine table '" + path + "': hardware: '" + t.hardware +
                   "', but the file is named '" + hardware + ".json'");
  return t;
}

std::optional<TablePrice> EngineTables::gemm(DType dt, int64_t m, int64_t n, int64_t k) const {
  TPB_ASSERT(m >= 1 && n >= 1 && k >= 1, "a GEMM priced from a table has m, n, k >= 1");
  const auto it = gemm_.find(dt);
  if (it == gemm_.end()) return std::nullopt;
  const double q[] = {static_cast<double>(m), static_cast<double>(n), static_cast<double>(k)};
  const GridValue v = it->second.at(q, gemm_work);
  return TablePrice{v.s, v.coverage, std::string("gemm.") + dtype_name(dt), gemm_kernel_.at(dt)};
}

std::optional<TablePrice> EngineTables::attention(
    const std::map<DType, std::vector<AttentionGrid>>& tables, const char* name, WorkFn work,
    DType kv, int64_t batch, int64_t len, int64_t q_heads, int64_t kv_heads,
    int64_t head_dim) const {
  TPB_ASSERT(batch >= 1 && len >= 1, "attention priced from a table has batch, length >= 1");
  const auto it = tables.find(kv);
  if (it == tables.end()) return std::nullopt;
  for (const AttentionGrid& g : it->second) {
    if (g.q_heads != q_heads || g.kv_heads != kv_heads || g.head_dim != head_dim) continue;
    const double q[] = {static_cast<double>(batch), static_cast<double>(len)};
    const GridValue v = g.grid.at(q, work);
    return TablePrice{v.s, v.coverage, std::string(name) + "." + dtype_name(kv), g.kernel};
  }
  return std::nullopt;
}

std::optional<TablePrice> EngineTables::decode_attention(DType kv, int64_t batch, int64_t context,
                                                         int64_t q_heads, int64_t kv_heads,
                                                         int64_t head_dim) const {
  return attention(decode_, "decode_attention", decode_work, kv, batch, context, q_heads, kv_heads,
                   head_dim);
}

std::optional<TablePrice> EngineTables::prefill_attention(DType kv, int64_t batch, int64_t prompt,
                                                          int64_t q_heads, int64_t kv_heads,
                                                          int64_t head_dim) const {
  return attention(prefill_, "prefill_attention", prefill_work, kv, batch, prompt, q_heads,
                   kv_heads, head_dim);
}

std::optional<TablePrice> EngineTables::collective(const std::string& kind, const std::string& impl,
                                                   int ranks, double bytes) const {
  const auto k = collectives_.find(kind);
  if (k == collectives_.end()) return std::nullopt;
  const auto i = k->second.find(impl);
  if (i == k->second.end()) return std::nullopt;
  const auto r = i->second.find(ranks);
  if (r == i->second.end()) return std::nullopt;
  const GridValue v = interpolate_curve(r->second.bytes, r->second.s, bytes);
  return TablePrice{v.s, v.coverage, kind + "." + impl, ""};
}

double EngineTables::elementwise_s(double bytes, double peak_bw) const {
  return bytes / (peak_bw * bw_fraction_) + fixed_s_;
}

}  // namespace tpb
