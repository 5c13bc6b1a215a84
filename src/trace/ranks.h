// `trace analyze` over several ranks' traces of one job (several files, or a folder of them): per
// rank the communication time, the part of it no compute overlapped (exposed), the time it waited
// in collectives for the others, and for each collective matched across ranks the last rank to
// arrive and its lag behind the first. Definitions:
//   communication, GPU traces: NCCL kernels (HTA's rule, name "nccl...Kernel..."); compute: the
//     computation-type kernels. Host-only traces (kernelab's `comm --trace`, PyTorch's CPU
//     backends): X events named "kernelab:OP", "gloo:OP" or "mpi:OP"; compute: the other cpu_op
//     events (c10d:: and record_param_comms, the collectives' own wrappers, excluded).
//   communication time: the union of a rank's communication intervals; exposed: the part of that
//     union not covered by the union of its compute intervals.
//   matching: by args.seq when every communication event of every rank carries one (kernelab's
//     traces), else per name in order, a set of one event per rank matched only when all of them
//     overlap in time (no rank leaves a collective before the last one arrives): an event that
//     cannot overlap the others' is left unmatched, as in sampled or differently windowed traces.
//   arrival: the event's start; the slowest rank arrived last, its lag = its start - the first
//     start (a tie makes no rank last); a rank's wait = the last start - its own start, summed over
//     matched collectives.
// Starts compare across ranks as far as their clocks agree (one host: the same clock).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trace/intervals.h"

namespace kl::trace {

struct CommEvent {
  Ns start = 0, end = 0;
  std::string name;
  int64_t seq = -1;  // args.seq; -1 when absent
};

struct RankTrace {
  std::string source;
  int64_t rank = -1;    // distributedInfo.rank; -1 when absent
  bool gpu = false;     // communication from GPU kernels, else from host events
  std::vector<CommEvent> comm;      // by start
  std::vector<Interval> compute;    // as read
};

RankTrace load_rank_trace(const std::string& path);  // BadInput as the single-trace reader
// The files of `args`: each file itself, each folder's *.json and *.json.gz by name.
std::vector<std::string> rank_trace_files(const std::vector<std::string>& args);

struct RankSummary {
  int64_t rank = 0;
  std::string source;
  bool gpu = false;
  uint64_t events = 0, matched = 0, times_last = 0;
  Ns comm_time = 0, compute_time = 0, overlapped = 0, exposed = 0, wait = 0, lag_caused = 0;
};

struct MatchedCollective {
  std::string name;
  int64_t seq = -1;
  std::vector<Ns> starts;  // per rank, in the order of RanksReport::ranks
  size_t slowest = 0;      // index into ranks
  Ns lag = 0;
};

struct RanksReport {
  std::vector<RankSummary> ranks;  // by rank
  std::vector<MatchedCollective> collectives;  // in time order
  std::string matched_by;  // "seq" or "order"
  uint64_t name_mismatches = 0;  // seq matching: collectives whose names differ across ranks (not matched)
};

// The traces are ordered by distributedInfo.rank (their position when absent); BadInput when two
// claim the same rank.
RanksReport analyze_ranks(std::vector<RankTrace> traces);
std::string ranks_text(const RanksReport& r, int top);  // the per-rank table and the `top` largest lags
nlohmann::json ranks_json(const RanksReport& r);

}  // namespace kl::trace
