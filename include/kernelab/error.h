// Errors are values with a message naming the bad input. The CLI maps them to exit codes:
// BadInput -> 2 (the user's input is wrong), RuntimeFailure -> 1 (the machine failed us).
#pragma once
#include <stdexcept>
#include <string>

namespace kl {

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void bad_input(const std::string& what) { throw BadInput(what); }
[[noreturn]] inline void runtime_failure(const std::string& what) { throw RuntimeFailure(what); }

}  // namespace kl
