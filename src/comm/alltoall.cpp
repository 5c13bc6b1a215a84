// Pairwise all-to-all: in step s rank r sends its block for r+s and receives the block of r-s,
// so every step is a permutation and no rank receives from two peers at once.

#include "comm/algorithms.h"

namespace kl::comm {

void pairwise_alltoall(Transport& tp, const CollectiveContext& ctx, const std::byte* in, std::byte* out,
                       std::size_t block_count, DType t) {
  const int n = tp.size(), r = tp.rank();
  const std::size_t block = block_count * dtype_size(t);
  if (in == out) {  // in place: the blocks still to send must survive the receives
    std::byte* copy = tp.scratch(2, block * std::size_t(n));
    tp.copy(copy, in, block * std::size_t(n));
    in = copy;
  }
  tp.copy(out + std::size_t(r) * block, in + std::size_t(r) * block, block);
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    tp.recv(ctx, from, {out + std::size_t(from) * block, block});
    tp.send(ctx, to, {in + std::size_t(to) * block, block});
    tp.wait_all();
  }
}

}  // namespace kl::comm
