// For tests of error messages: runs a callable that must throw BadInput and gives its message.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"

namespace tpb {

// Runs f, expects BadInput, returns its message ("" and a test failure when nothing is thrown).
template <class F>
std::string bad_input(F f) {
  try {
    f();
  } catch (const BadInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected BadInput";
  return "";
}

}  // namespace tpb
