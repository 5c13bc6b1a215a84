// `comm doctor DUMP_DIR`: merges the ranks' flight-recorder dumps and the status board and names
// what went wrong, in the spirit of PyTorch's flight-recorder analyzer and NCCL's RAS report: the
// rank that never entered the collective the others wait in (and its last one), ranks that left no
// dump (died before their watchdog could write), mismatched collective counts, and the straggler.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kl::comm {

struct Diagnosis {
  std::vector<std::string> findings;  // one sentence each, most important first
  nlohmann::json json;
  bool healthy = false;
};

// BadInput when dir has no dumps and no board.
Diagnosis diagnose(const std::string& dir, double straggler_ms);

}  // namespace kl::comm
