// Ring schedules: the reduce-scatter and all-gather phases, composed into the ring all-reduce.
// Chunk c of the buffer lives at chunks.begin(c); rank r sends to r+1 and receives from r-1.
#include <algorithm>
#include <vector>

#include "comm/algorithms.h"

namespace kl::comm {

namespace {

struct Chunks {
  std::size_t count;  // elements in all chunks together
  int n;
  std::size_t begin(int c) const { return count * std::size_t(c) / std::size_t(n); }
  std::size_t size(int c) const { return begin(c + 1) - begin(c); }
};

struct Ring {
  Transport& tp;
  const CollectiveContext& ctx;
  Chunks chunks;
  std::size_t elem, slice;  // bytes per element, elements per slice
  int r, n, next, prev;

  Ring(Transport& t, const CollectiveContext& c, Chunks ch, DType dt, const RingOptions& opt)
      : tp(t), ctx(c), chunks(ch), elem(dtype_size(dt)), slice(std::max<std::size_t>(1, opt.slice_bytes / elem)),
        r(t.rank()), n(t.size()), next((r + 1) % n), prev((r + n - 1) % n) {}
  int mod(int x) const { return ((x % n) + n) % n; }
  std::size_t slices(int c) const { return (chunks.size(c) + slice - 1) / slice; }
  std::size_t slice_len(int c, std::size_t j) const { return std::min(slice, chunks.size(c) - j * slice); }
  std::span<std::byte> part(std::byte* base, int c, std::size_t j) const {
    return {base + (chunks.begin(c) + j * slice) * elem, slice_len(c, j) * elem};
  }
  std::span<std::byte> tmp_part(std::byte* tmp, int c, std::size_t j) const {
    return {tmp + j * slice * elem, slice_len(c, j) * elem};
  }
  void send_chunk(std::byte* buf, int c) {
    for (std::size_t j = 0; j < slices(c); ++j) tp.send(ctx, next, part(buf, c, j));
  }

  std::span<std::byte> whole(std::byte* base, int c) const { return {base + chunks.begin(c) * elem, chunks.size(c) * elem}; }

  // Step s sends chunk r-s-1 and receives chunk r-s-2 into a temporary, reducing it into buf
  // slice by slice; the reduced slice is what step s+1 sends. Rank r ends owning chunk r.
  void reduce_scatter(std::byte* buf, DType t, RedOp op) {
    const int steps = n - 1;
    std::size_t max_chunk = 0;
    for (int c = 0; c < n; ++c) max_chunk = std::max(max_chunk, chunks.size(c));
    std::byte* tmp[2] = {tp.scratch(0, max_chunk * elem), tp.scratch(1, max_chunk * elem)};
    if (!tp.posts_ahead()) {  // one step at a time, whole chunks
      for (int s = 0; s < steps; ++s) {
        const int c = mod(r - s - 2);
        tp.recv(ctx, prev, {tmp[0], chunks.size(c) * elem});
        tp.send(ctx, next, whole(buf, mod(r - s - 1)));
        tp.wait_all();
        tp.reduce(whole(buf, c).data(), tmp[0], chunks.size(c), t, op);
      }
      return;
    }
    std::vector<Transport::Handle> pending[2];
    auto post_recvs = [&](int s) {
      const int c = mod(r - s - 2);
      pending[s % 2].clear();
      for (std::size_t j = 0; j < slices(c); ++j) pending[s % 2].push_back(tp.recv(ctx, prev, tmp_part(tmp[s % 2], c, j)));
    };
    post_recvs(0);
    if (steps > 1) post_recvs(1);
    send_chunk(buf, mod(r - 1));
    for (int s = 0; s < steps; ++s) {
      const int c = mod(r - s - 2);
      for (std::size_t j = 0; j < slices(c); ++j) {
        tp.wait(pending[s % 2][j]);
        tp.reduce(part(buf, c, j).data(), tmp_part(tmp[s % 2], c, j).data(), slice_len(c, j), t, op);
        if (s + 1 < steps) tp.send(ctx, next, part(buf, c, j));
      }
      if (s + 2 < steps) post_recvs(s + 2);
    }
    tp.wait_all();
  }

  // Rank r owns chunk `own`; step s sends chunk own-s and receives chunk own-s-1 straight into
  // buf, forwarding each slice in step s+1 as soon as it lands.
  void allgather(std::byte* buf, int own) {
    const int steps = n - 1;
    if (!tp.posts_ahead()) {
      for (int s = 0; s < steps; ++s) {
        tp.recv(ctx, prev, whole(buf, mod(own - s - 1)));
        tp.send(ctx, next, whole(buf, mod(own - s)));
        tp.wait_all();
      }
      return;
    }
    std::vector<std::vector<Transport::Handle>> pending(std::size_t(std::max(steps, 0)));
    for (int s = 0; s < steps; ++s) {
      const int c = mod(own - s - 1);
      for (std::size_t j = 0; j < slices(c); ++j) pending[std::size_t(s)].push_back(tp.recv(ctx, prev, part(buf, c, j)));
    }
    send_chunk(buf, own);
    for (int s = 0; s < steps; ++s) {
      const int c = mod(own - s - 1);
      for (std::size_t j = 0; j < slices(c); ++j) {
        tp.wait(pending[std::size_t(s)][j]);
        if (s + 1 < steps) tp.send(ctx, next, part(buf, c, j));
      }
    }
    tp.wait_all();
  }
};

}  // namespace

void ring_allreduce(Transport& tp, const CollectiveContext& ctx, std::byte* buf, std::size_t count, DType t, RedOp op,
                    const RingOptions& opt) {
  if (tp.size() == 1) return;
  Ring ring(tp, ctx, Chunks{count, tp.size()}, t, opt);
  ring.reduce_scatter(buf, t, op);
  ring.allgather(buf, tp.rank());
}

void ring_allgather(Transport& tp, const CollectiveContext& ctx, std::byte* out, std::size_t block_count, DType t,
                    const RingOptions& opt) {
  if (tp.size() == 1) return;
  Ring ring(tp, ctx, Chunks{block_count * std::size_t(tp.size()), tp.size()}, t, opt);
  ring.allgather(out, tp.rank());
}

void ring_reduce_scatter(Transport& tp, const CollectiveContext& ctx, std::byte* work, std::size_t block_count,
                         DType t, RedOp op, const RingOptions& opt) {
  if (tp.size() == 1) return;
  Ring ring(tp, ctx, Chunks{block_count * std::size_t(tp.size()), tp.size()}, t, opt);
  ring.reduce_scatter(work, t, op);
}

}  // namespace kl::comm
