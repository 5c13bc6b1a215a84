#include "comm/collective.h"

namespace kl::comm {

std::string_view algo_name(Algo a) {
  switch (a) {
    case Algo::ring: return "ring";
    case Algo::tree: return "tree";
    case Algo::pairwise: return "pairwise";
    case Algo::library: return "library";
  }
  return "?";
}

std::optional<Algo> parse_algo(std::string_view s) {
  for (Algo a : {Algo::ring, Algo::tree, Algo::pairwise, Algo::library})
    if (s == algo_name(a)) return a;
  return std::nullopt;
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::reducescatter: return "reducescatter";
    case Collective::alltoall: return "alltoall";
  }
  return "?";
}

std::vector<Algo> algos_of(Collective c) {
  if (c == Collective::allreduce) return {Algo::ring, Algo::tree, Algo::library};
  if (c == Collective::alltoall) return {Algo::pairwise, Algo::library};
  return {Algo::ring, Algo::library};
}

bool is_reduction(Collective c) { return c == Collective::allreduce || c == Collective::reducescatter; }

Layout layout(Collective c, std::size_t block, int ranks, int rank) {
  const std::size_t n = std::size_t(ranks), r = std::size_t(rank);
  switch (c) {
    case Collective::allreduce: return {block, block, 0};
    case Collective::allgather: return {block, n * block, r * block};
    case Collective::reducescatter: return {n * block, block, r * block};
    case Collective::alltoall: return {n * block, n * block, 0};
  }
  return {};
}

}  // namespace kl::comm
