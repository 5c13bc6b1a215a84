// Stragglers from the flight recorders: for every collective all ranks recorded, each rank's lag
// is its entry time minus the first rank's; the straggler is the rank with the largest total lag.
// Entry times are wall clock, comparable on one host (see recorder.h).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/recorder.h"

namespace kl::comm {

struct StragglerReport {
  int rank = -1;             // -1: no collective recorded by every rank
  int collectives = 0;       // collectives every rank recorded
  int times_last = 0;        // of those, how often this rank entered last
  double mean_lag_ms = 0, max_lag_ms = 0;
  uint64_t worst_seq = 0;
  std::string worst_op;
};

StragglerReport find_straggler(const std::vector<std::vector<Record>>& per_rank);
// "straggler: rank 2 ..." when its largest lag passes threshold_ms, else "no straggler ...".
std::string straggler_text(const StragglerReport& s, double threshold_ms);
nlohmann::json straggler_json(const StragglerReport& s, double threshold_ms);

}  // namespace kl::comm
