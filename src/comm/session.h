// One rank's side of a run under mpirun: MPI started (MPI_THREAD_SERIALIZED: one thread calls it at
// a time, not always the main one) with the termination signals left to the
// watchdog, the dump folder every rank shares (rank 0 names it), the status board, the flight
// recorder, and run(), which numbers each collective, applies the injected faults, records it and
// dispatches it to an own algorithm on the MPI transport or to the MPI library.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/algorithms.h"
#include "comm/board.h"
#include "comm/collective.h"
#include "comm/inject.h"
#include "comm/mpi_transport.h"
#include "comm/recorder.h"
#include "comm/trace_log.h"
#include "comm/watchdog.h"

namespace kl::comm {

struct SessionOptions {
  double timeout_s = 300;
  std::string dump_dir;  // empty: a new folder under the temporary directory, removed when the run ends well
  std::string trace_dir;  // not empty: each rank writes its trace there at the end (trace_log.h)
  std::vector<Injection> injections;
  RingOptions ring;
  nlohmann::json run;  // the settings, for the dumps
};

class Session {
 public:
  explicit Session(SessionOptions opt);
  ~Session();  // waits for every rank (the end barrier), dumps the recorder ("finished"), ends MPI
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int rank() const { return rank_; }
  // MPI's thread level: MPI_THREAD_SERIALIZED (asked for) lets `comm overlap`'s communication thread make the calls.
  int thread_level() const { return thread_level_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  const std::string& dump_dir() const { return dump_dir_; }
  bool keeps_dumps() const { return !opt_.dump_dir.empty(); }
  const FlightRecorder& recorder() const { return recorder_; }
  TraceLog* trace() { return opt_.trace_dir.empty() ? nullptr : &trace_; }  // null when not tracing

  // In place when `in` is where Layout puts it inside `out` (or `out` inside `in`).
  void run(Collective c, Algo a, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op);
  // run()'s bookkeeping around a call on another transport (the NCCL bench's): the collective's
  // sequence number, passed to `call`; the injections; the flight recorder; the status board; the trace.
  void record(Collective c, Algo a, std::size_t bytes, const std::function<void(uint64_t seq)>& call);
  // An MPI call outside the collectives (the bench's own reductions), under the watchdog as `what`.
  void guarded(const std::string& what, const std::function<void()>& wait);

 private:
  // The run's start or end barrier: the injections aimed at it, the board's stage in and after it, under the watchdog.
  void barrier(Injection::Point point, Stage in, Stage after, const std::string& what);
  std::vector<int> peers(Algo a) const;
  void run_library(Collective c, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op);

  SessionOptions opt_;
  int rank_ = 0, size_ = 1, thread_level_ = MPI_THREAD_SINGLE;
  uint64_t seq_ = 0;
  std::string dump_dir_;
  FlightRecorder recorder_;
  TraceLog trace_;
  std::unique_ptr<MpiTransport> transport_;
  std::unique_ptr<StatusBoard> board_;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace kl::comm
