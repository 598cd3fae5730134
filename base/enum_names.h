// A small enum's names as one array indexed by its value: printing and parsing read the same
// spellings, and giving the array the enum's count as its size makes a value added without a
// name fail to compile instead of printing "?".
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace tpb {

template <class E, std::size_t N>
const char* enum_name(const std::array<const char*, N>& names, E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : "?";
}

template <class E, std::size_t N>
std::optional<E> enum_from_name(const std::array<const char*, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace tpb
