// One engine version's measured kernel times on one GPU (issue 57): tpbench's copy of
// AIConfigurator's tables, configs/engine_tables/<ENGINE>/<HARDWARE>.json (written by
// results/aiconfigurator_import.py), read once and asked per op; each answer names its table.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "layers/profile/table_grid.h"

namespace tpb {

struct TablePrice {
  double s = 0;
  TableCoverage coverage = TableCoverage::exact;
  // What priced it: "gemm.bf16", "decode_attention.bf16", "prefill_attention.bf16",
  // "all_reduce.custom_graph", "all_reduce.nccl", "all_gather.nccl".
  std::string table;
  // The engine's kernel the table measured ("torch.nn.functional.linear", "vllm_flash_attn_fa3"),
  // where the file names one; empty for collectives.
  std::string kernel;
};

class EngineTables {
 public:
  // Throws BadInput("engine table '<path>': <field>: ...") for a file a user could break:
  // a missing or mistyped field, an axis not strictly ascending, a grid whose rows do not
  // match its axes, a negative time.
  static EngineTables load(const std::string& path);
  // CONFIG_DIR/engine_tables/<engine>/<hardware>.json, loaded; nullopt where no such file is
  // (the engine has no tables for that GPU), or a name holds a '/' (it would leave the folder).
  // Throws BadInput where the file's own engine or hardware is not the one it is filed under.
  static std::optional<EngineTables> find(const std::string& engine, const std::string& hardware,
                                          const std::string& config_dir);
  // Where find() looks, for a message that says so.
  static std::string path_for(const std::string& engine, const std::string& hardware,
                              const std::string& config_dir);

  // Each is nullopt where the table has no such dtype, head shape or rank count: the caller
  // prices the op another way and says so. Sizes must be >= 1.
  std::optional<TablePrice> gemm(DType dt, int64_t m, int64_t n, int64_t k) const;
  std::optional<TablePrice> decode_attention(DType kv, int64_t batch, int64_t context,
                                             int64_t q_heads, int64_t kv_heads,
                                             int64_t head_dim) const;
  std::optional<TablePrice> prefill_attention(DType kv, int64_t batch, int64_t prompt,
                                              int64_t q_heads, int64_t kv_heads,
                                              int64_t head_dim) const;
  // kind "all_reduce" | "all_gather"; impl "custom_graph" | "custom_eager" | "nccl".
  std::optional<TablePrice> collective(const std::string& kind, const std::string& impl, int ranks,
                                       double bytes) const;
  // bytes / (peak_bw * bw_fraction) + fixed_s: a memory-bound kernel the tables do not hold.
  double elementwise_s(double bytes, double peak_bw) const;
  double elementwise_bw_fraction() const { return bw_fraction_; }
  double elementwise_fixed_s() const { return fixed_s_; }
  const std::string& elementwise_source() const { return elementwise_source_; }
  const nlohmann::ordered_json& provenance() const { return provenance_; }

  std::string engine, hardware;
  std::string path;  // the file read

  // One attention table: a head shape's times over (batch, context or prompt).
  struct AttentionGrid {
    int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
    std::string kernel;
    DenseGrid grid;
  };
  // One collective at one rank count: times over message bytes.
  struct Curve {
    std::vector<double> bytes, s;
  };
  using Collectives = std::map<std::string, std::map<std::string, std::map<int, Curve>>>;

 private:
  friend class EngineTablesParser;
  std::optional<TablePrice> attention(const std::map<DType, std::vector<AttentionGrid>>& tables,
                                      const char* name, WorkFn work, DType kv, int64_t batch,
                                      int64_t len, int64_t q_heads, int64_t kv_heads,
                                      int64_t head_dim) const;

  std::map<DType, DenseGrid> gemm_;
  std::map<DType, std::string> gemm_kernel_;
  std::map<DType, std::vector<AttentionGrid>> decode_, prefill_;
  Collectives collectives_;  // kind -> impl -> ranks
  double bw_fraction_ = 1, fixed_s_ = 0;
  std::string elementwise_source_;
  nlohmann::ordered_json provenance_;
};

}  // namespace tpb
