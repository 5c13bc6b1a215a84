// One collective call as the bench and the check see it: which op, which algorithm, and where its
// buffers sit. Counts follow nccl-tests: `block` elements per rank and peer; the reported size is
// the larger buffer (allreduce: the buffer, allgather: the gathered output, reducescatter: the
// input, alltoall: the send buffer).
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "model/cost.h"

namespace kl::comm {

using model::Collective;

enum class Algo { ring, tree, pairwise, library };
std::string_view algo_name(Algo a);
std::optional<Algo> parse_algo(std::string_view s);
std::string_view collective_name(Collective c);
// The algorithms of op c, own first, the library's last.
std::vector<Algo> algos_of(Collective c);
bool is_reduction(Collective c);

// Elements of the input and output buffers, and where the output sits in the input when in place
// (allgather: the input is block rank of the output; reducescatter: the output is block rank of
// the input; allreduce and alltoall: the same buffer).
struct Layout {
  std::size_t in_count = 0, out_count = 0;
  std::size_t in_place_offset = 0;  // elements: in = out + offset (allgather), out = in + offset (reducescatter)
  std::size_t reported_count() const { return std::max(in_count, out_count); }
};
Layout layout(Collective c, std::size_t block, int ranks, int rank);

// Where a call reads and writes, given an input buffer `in` and an output buffer `out` of Layout's
// counts: out of place, in and out apart; in place, the input inside out (allgather), the output
// inside in (reducescatter), else in alone.
struct Placed {
  std::byte* src;
  std::byte* dst;
};
inline Placed placed(Collective c, const Layout& l, std::size_t elem, bool in_place, std::byte* in, std::byte* out) {
  if (!in_place) return {in, out};
  if (c == Collective::allgather) return {out + l.in_place_offset * elem, out};
  if (c == Collective::reducescatter) return {in, in + l.in_place_offset * elem};
  return {in, in};
}

}  // namespace kl::comm
