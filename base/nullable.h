// Nullable<T>: an optional the results write as null when empty, where std::optional's empty
// field is left out: for a contract field (ARCHITECTURE.md lists it) that has no value, beside
// the reason why.
#pragma once
#include <optional>

namespace tpb {

template <class T>
struct Nullable : std::optional<T> {
  using std::optional<T>::optional;
  using std::optional<T>::operator=;
};

}  // namespace tpb
