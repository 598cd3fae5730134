// Axis values for `tpbench sweep` and `tpbench collectives`: comma lists, integer ranges
// (`1..256:x2`, `1..16:+4`) and byte sizes with K/M/G suffixes (nccl-tests' -b/-e).
// Pure parsing, no MPI, so the grammar is unit-tested on its own (tests/unit/test_axis.cc).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

// Upper bound on the values one axis may expand to: a typo like 1..1000000:+1 is refused
// instead of queueing a million points.
inline constexpr std::size_t kMaxAxisValues = 4096;

// Splits on `sep`, keeping empty items (callers decide whether they are allowed).
std::vector<std::string> split_list(const std::string& text, char sep);

// Integer axis: items separated by ',', each an integer or a range A..B[:xF | :+S]
// (geometric by factor F >= 2 or arithmetic by step S >= 1; bare A..B steps by 1). Ranges are
// inclusive of A and of B when a step lands on it. Order is kept as written, duplicates are
// dropped. Throws BadInput naming `field`.
std::vector<int64_t> expand_int_axis(const std::string& text, const std::string& field);

// String axis: items separated by `sep`, trimmed of spaces; empty items are refused unless
// `allow_empty`. Duplicates are dropped, order kept.
std::vector<std::string> expand_string_axis(const std::string& text, const std::string& field,
                                            char sep = ',', bool allow_empty = false);

// A config value (a JSON array, a number, or a string in the grammar above) as the list of
// values it stands for, each rendered as the string a single-point config would hold.
// `integer` selects the integer grammar.
std::vector<std::string> axis_values(const nlohmann::json& value, const std::string& field,
                                     bool integer);

// Bytes as nccl-tests reads them: a plain integer, or with K, M, G (powers of 1024).
// Throws BadInput naming `field`.
int64_t parse_size_suffix(const std::string& text, const std::string& field);

// 1024 -> "1K", 4194304 -> "4M", 1000 -> "1000": the shortest exact form, for tables.
std::string format_size(int64_t bytes);

}  // namespace tpb
