// Injected faults for the fault tests: `rank=R,delay_ms=T[,at=SEQ]` (rank R enters collective SEQ,
// or every collective, T ms late), `rank=R,crash[,at=SEQ]` (rank R kills itself before entering
// SEQ), `rank=R,hang[,at=SEQ]` (rank R stops before entering SEQ and never continues). SEQ
// defaults to 1 for crash and hang; at=init, at=start and at=end put the fault before MPI_Init, the
// run's start barrier or its end barrier instead of a collective.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kl::comm {

struct Injection {
  enum class Kind { delay, crash, hang } kind = Kind::delay;
  int rank = 0;
  int64_t delay_ms = 0;
  enum class Point { collective, init, start, end } point = Point::collective;
  std::optional<uint64_t> at;  // the sequence number; none: every collective (delay only)
};

Injection parse_injection(const std::string& spec, int ranks);  // BadInput naming the bad part
std::string injection_text(const Injection& inj);
// Applies the injections for this rank before it enters collective seq, or (seq 0) MPI_Init or the start or end barrier.
void apply_injections(const std::vector<Injection>& injections, int rank, Injection::Point point, uint64_t seq = 0);

}  // namespace kl::comm
