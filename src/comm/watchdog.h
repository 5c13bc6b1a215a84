// The watchdog: a thread per rank that never calls MPI. It ends the process (exit 1) when the
// collective in flight, or a guarded wait outside the collectives (the run's start and end
// barriers, the bench's own reductions), has waited longer than the timeout, or waits for a rank
// of the host whose process is gone (the status board shows it behind), or when the launcher
// sends SIGTERM or SIGINT (mpirun does, once another rank has died), after printing who it waits
// for and dumping the flight recorder to DUMP_DIR/rank-R.json. A blocked MPI call therefore never
// outlives it.
#pragma once
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "comm/board.h"
#include "comm/recorder.h"

namespace kl::comm {

// Blocks SIGTERM and SIGINT in the calling thread and in every thread it starts afterwards (MPI's
// own): only the watchdog takes them. Call before MPI_Init.
void block_termination_signals();

struct DumpInfo {
  int rank = 0, size = 0;
  std::string dir;
  double timeout_s = 0;
  nlohmann::json extra;  // the run's settings (op, algo, injections)
};

class Watchdog {
 public:
  Watchdog(DumpInfo info, const FlightRecorder& recorder, const StatusBoard& board);
  ~Watchdog();
  // Writes DUMP_DIR/rank-R.json with the recorder and the board as they are now.
  void dump(const std::string& reason, const std::string& message) const;

  // A wait outside any collective, timed like one while the guard lives: `what` ("the start barrier").
  class Guard {
   public:
    Guard(Watchdog& w, std::string what);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Watchdog& w_;
  };

 private:
  struct Wait {
    std::string what;
    int64_t start_us = 0;
  };
  std::optional<Wait> waiting() const;
  void loop();
  [[noreturn]] void fail(const std::string& reason);
  std::optional<int> dead_rank_behind(const std::optional<Record>& in_flight) const;
  std::string not_heard_from(uint64_t seq) const;
  std::string behind_me() const;

  DumpInfo info_;
  const FlightRecorder& recorder_;
  const StatusBoard& board_;
  mutable std::mutex wait_mutex_;
  std::optional<Wait> wait_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The watch over start-up, before the board exists: MPI_Init (which waits for every rank) and the
// broadcast of the dump folder's name. Past the timeout, or on SIGTERM or SIGINT, it prints where
// the rank waited, dumps DUMP_DIR/rank-R.json ("startup_phase", no records, no board) when the
// folder is known before MPI_Init (session.cpp), and ends the process (exit 1).
class StartupWatch {
 public:
  explicit StartupWatch(DumpInfo info);  // info.rank: the launcher's, -1 when unknown; info.dir empty: no dump
  ~StartupWatch();
  StartupWatch(const StartupWatch&) = delete;
  StartupWatch& operator=(const StartupWatch&) = delete;
  void enter(const char* phase) { phase_ = phase; }  // "in MPI_Init": a string that outlives the watch
  const std::string& dump_dir() const { return info_.dir; }

 private:
  void loop();
  std::atomic<const char*> phase_{"before MPI_Init"};
  DumpInfo info_;
  int64_t start_us_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string dump_path(const std::string& dir, int rank);
// Writes DUMP_DIR/rank-R.json (through a temporary file): `fields` and the rank's identity (rank,
// size, pid, host, timeout_s, dumped_us, run).
void write_dump(const DumpInfo& info, nlohmann::json fields);

}  // namespace kl::comm
