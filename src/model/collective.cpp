// Collective cost models: nccl-tests' algbw/busbw conventions and the ring lower bound
// (conventions in cost.h).
#include <fmt/format.h>

#include "kernelab/error.h"
#include "model/cost.h"

namespace kl::model {

std::optional<Collective> parse_collective(std::string_view name) {
  if (name == "allreduce") return Collective::allreduce;
  if (name == "allgather") return Collective::allgather;
  if (name == "reducescatter") return Collective::reducescatter;
  if (name == "alltoall") return Collective::alltoall;
  return std::nullopt;
}

double bus_factor(Collective c, int64_t ranks) {
  if (ranks < 2) bad_input(fmt::format("--ranks={}: a collective needs at least 2 ranks", ranks));
  const double n = static_cast<double>(ranks);
  return c == Collective::allreduce ? 2 * (n - 1) / n : (n - 1) / n;
}

CollectiveBound collective_bound(Collective c, double bytes, int64_t ranks, double link_bw) {
  if (!(bytes > 0)) bad_input(fmt::format("--bytes={}: the message must be at least one byte", bytes));
  if (!(link_bw > 0)) bad_input(fmt::format("link bandwidth {} B/s: must be positive", link_bw));
  const double factor = bus_factor(c, ranks);
  CollectiveBound r;
  r.link_bytes = bytes * factor;
  r.time_s = r.link_bytes / link_bw;
  r.algbw = bytes / r.time_s;
  r.busbw = r.algbw * factor;
  return r;
}

}  // namespace kl::model
