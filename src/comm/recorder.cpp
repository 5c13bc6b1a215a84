#include "comm/recorder.h"

#include <time.h>

namespace kl::comm {

int64_t wall_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

void FlightRecorder::begin(Record r) {
  r.start_us = wall_us();
  std::lock_guard lock(mutex_);
  if (ring_.size() < capacity_) {
    ring_.push_back(std::move(r));
  } else {
    ring_[next_] = std::move(r);
    next_ = (next_ + 1) % capacity_;
  }
}

std::optional<Record> FlightRecorder::end(uint64_t seq) {
  const int64_t now = wall_us();
  std::lock_guard lock(mutex_);
  if (ring_.empty()) return std::nullopt;
  const std::size_t last = ring_.size() < capacity_ ? ring_.size() - 1 : (next_ + capacity_ - 1) % capacity_;
  if (ring_[last].seq != seq) return std::nullopt;
  ring_[last].end_us = now;
  return ring_[last];
}

std::optional<Record> FlightRecorder::in_flight() const {
  std::lock_guard lock(mutex_);
  if (ring_.empty()) return std::nullopt;
  const std::size_t last = ring_.size() < capacity_ ? ring_.size() - 1 : (next_ + capacity_ - 1) % capacity_;
  if (ring_[last].end_us != 0) return std::nullopt;
  return ring_[last];
}

std::vector<Record> FlightRecorder::records() const {
  std::lock_guard lock(mutex_);
  if (ring_.size() < capacity_) return ring_;
  std::vector<Record> out(ring_.begin() + long(next_), ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + long(next_));
  return out;
}

nlohmann::json FlightRecorder::to_json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const Record& r : records()) a.push_back(record_json(r));
  return a;
}

nlohmann::json record_json(const Record& r) {
  return {{"op", r.op}, {"algo", r.algo}, {"seq", r.seq}, {"bytes", r.bytes}, {"peers", r.peers},
          {"start_us", r.start_us}, {"end_us", r.end_us}};
}

Record record_from_json(const nlohmann::json& j) {
  Record r;
  r.op = j.at("op").get<std::string>();
  r.algo = j.at("algo").get<std::string>();
  r.seq = j.at("seq").get<uint64_t>();
  r.bytes = j.at("bytes").get<uint64_t>();
  r.peers = j.at("peers").get<std::vector<int>>();
  r.start_us = j.at("start_us").get<int64_t>();
  r.end_us = j.at("end_us").get<int64_t>();
  return r;
}

}  // namespace kl::comm
