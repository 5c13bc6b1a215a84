// One rank's run as a Chrome/Perfetto trace (`--trace DIR`): DIR/rank-R.json, in the layout of the
// PyTorch profiler's traces that `trace analyze` reads. Each collective is a complete ("X") event of
// cat "user_annotation", as PyTorch records its CPU backends' collectives ("gloo:all_reduce"), named
// "kernelab:OP" with seq, bytes, algo and peers in args; compute spans are cat "cpu_op", name
// "compute". Times are the flight recorder's wall-clock microseconds, so one host's ranks line up.
#pragma once
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "comm/recorder.h"

namespace kl::comm {

class TraceLog {
 public:
  // Thread-safe: `comm overlap`'s communication thread records collectives while the main thread records compute.
  // tid: the track (collectives that overlap one another, as non-blocking ones do, need their own).
  void collective(const Record& r, int tid = 1);
  void compute(int64_t start_us, int64_t end_us, nlohmann::json args);
  // Writes DIR/rank-R.json (RuntimeFailure when it cannot).
  void write(const std::string& dir, int rank, int size) const;

 private:
  mutable std::mutex mutex_;
  nlohmann::json events_ = nlohmann::json::array();
};

std::string trace_path(const std::string& dir, int rank);

}  // namespace kl::comm
