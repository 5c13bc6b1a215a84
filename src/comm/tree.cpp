// Recursive halving-doubling all-reduce (Rabenseifner's schedule) over the largest power of two
// p <= n ranks. Ranks 0..2(n-p)-1 pair up first: the even one hands its buffer to the odd one and
// waits for the result, so p ranks remain, renumbered 0..p-1.
#include <bit>

#include "comm/algorithms.h"

namespace kl::comm {

void tree_allreduce(Transport& tp, const CollectiveContext& ctx, std::byte* buf, std::size_t count, DType t, RedOp op) {
  const int n = tp.size(), r = tp.rank();
  if (n == 1) return;
  const std::size_t elem = dtype_size(t);
  const int p = int(std::bit_floor(unsigned(n))), extra = n - p;
  const std::span<std::byte> whole{buf, count * elem};
  std::byte* tmp = tp.scratch(0, count * elem);
  if (r < 2 * extra && r % 2 == 0) {  // hands its contribution to r+1, gets the result back
    tp.send(ctx, r + 1, whole);
    tp.recv(ctx, r + 1, whole);
    tp.wait_all();
    return;
  }
  if (r < 2 * extra) {
    tp.recv(ctx, r - 1, {tmp, count * elem});
    tp.wait_all();
    tp.reduce(buf, tmp, count, t, op);
  }
  const int me = r < 2 * extra ? r / 2 : r - extra;
  auto real = [extra](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  auto begin = [&](int block) { return count * std::size_t(block) / std::size_t(p); };
  auto bytes = [&](int lo, int hi) { return std::span<std::byte>{buf + begin(lo) * elem, (begin(hi) - begin(lo)) * elem}; };
  int lo = 0, hi = p;  // the blocks this rank is responsible for
  for (int mask = p / 2; mask >= 1; mask /= 2) {  // halving: keep half, send the other half
    const int partner = real(me ^ mask), mid = (lo + hi) / 2;
    const bool upper = (me & mask) != 0;
    const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const std::span<std::byte> keep = bytes(keep_lo, keep_hi);
    tp.recv(ctx, partner, {tmp, keep.size()});
    tp.send(ctx, partner, upper ? bytes(lo, mid) : bytes(mid, hi));
    tp.wait_all();
    tp.reduce(keep.data(), tmp, begin(keep_hi) - begin(keep_lo), t, op);
    lo = keep_lo, hi = keep_hi;
  }
  for (int mask = 1; mask < p; mask *= 2) {  // doubling: swap reduced halves
    const int partner = real(me ^ mask), width = hi - lo;
    const bool upper = (me & mask) != 0;
    const int other_lo = upper ? lo - width : hi;
    tp.recv(ctx, partner, bytes(other_lo, other_lo + width));
    tp.send(ctx, partner, bytes(lo, hi));
    tp.wait_all();
    lo = std::min(lo, other_lo), hi = lo + 2 * width;
  }
  if (r < 2 * extra) {
    tp.send(ctx, r - 1, whole);
    tp.wait_all();
  }
}

}  // namespace kl::comm
