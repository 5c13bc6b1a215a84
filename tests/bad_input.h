// The message of the kl::BadInput that fn throws; a test failure when it throws nothing or
// something else.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "kernelab/error.h"

namespace kl::test {

template <class Fn> std::string bad_input_message(Fn&& fn) {
  try {
    fn();
  } catch (const kl::BadInput& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something other than kl::BadInput: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw kl::BadInput";
  return "";
}

}  // namespace kl::test
