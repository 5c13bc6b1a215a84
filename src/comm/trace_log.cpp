#include "comm/trace_log.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "kernelab/error.h"

namespace kl::comm {

std::string trace_path(const std::string& dir, int rank) { return fmt::format("{}/rank-{}.json", dir, rank); }

void TraceLog::collective(const Record& r, int tid) {
  const std::lock_guard lock(mutex_);
  events_.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "kernelab:" + r.op}, {"tid", tid}, {"ts", r.start_us},
                     {"dur", r.end_us - r.start_us},
                     {"args", {{"seq", r.seq}, {"bytes", r.bytes}, {"algo", r.algo}, {"peers", r.peers}}}});
}

void TraceLog::compute(int64_t start_us, int64_t end_us, nlohmann::json args) {
  const std::lock_guard lock(mutex_);
  events_.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "compute"}, {"tid", 0}, {"ts", start_us}, {"dur", end_us - start_us},
                     {"args", std::move(args)}});
}

void TraceLog::write(const std::string& dir, int rank, int size) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) runtime_failure(fmt::format("--trace {}: cannot create the folder: {}", dir, ec.message()));
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"args", {{"name", fmt::format("rank {}", rank)}}}});
  const std::lock_guard lock(mutex_);
  std::set<int> tids;
  for (const nlohmann::json& e : events_) tids.insert(e["tid"].get<int>());
  for (int tid : tids)
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", tid},
                      {"args", {{"name", tid == 0 ? std::string("compute") : fmt::format("collectives {}", tid)}}}});
  for (nlohmann::json e : events_) {
    e["pid"] = rank;
    events.push_back(std::move(e));
  }
  const nlohmann::json trace = {{"schemaVersion", 1},
                                {"distributedInfo", {{"backend", "mpi"}, {"rank", rank}, {"world_size", size}}},
                                {"traceEvents", std::move(events)}};
  const std::string path = trace_path(dir, rank);
  std::ofstream f(path);
  f << trace.dump() << "\n";
  if (!f) runtime_failure(fmt::format("--trace: cannot write {}", path));
}

}  // namespace kl::comm
