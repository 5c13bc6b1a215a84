// The flight recorder: each rank's last collectives (op, algorithm, sequence number, bytes, peers,
// start and end), kept in a ring so a rank that hangs or dies mid-run can say what it was doing.
// Times are wall-clock microseconds (CLOCK_REALTIME) so the ranks of one host line up; across
// hosts they are as good as the hosts' clock synchronisation.
#pragma once
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kl::comm {

struct Record {
  std::string op, algo;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  std::vector<int> peers;
  int64_t start_us = 0, end_us = 0;  // end_us 0: still in flight
};

int64_t wall_us();

class FlightRecorder {
 public:
  explicit FlightRecorder(std::size_t capacity = 1024) : capacity_(capacity) {}
  void begin(Record r);  // r.start_us is set here
  std::optional<Record> end(uint64_t seq);  // the completed record; none when seq is not the last begun
  std::optional<Record> in_flight() const;
  std::vector<Record> records() const;  // oldest first
  nlohmann::json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::vector<Record> ring_;
  std::size_t next_ = 0;  // slot the next record goes to, once the ring is full
};

nlohmann::json record_json(const Record& r);
Record record_from_json(const nlohmann::json& j);

}  // namespace kl::comm
