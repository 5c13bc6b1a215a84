// The collectives written here, on the Transport interface. Buffers are host or device memory as
// the transport expects; element counts are per block as named. Each states its schedule.
#pragma once
#include <cstddef>
#include <span>

#include "comm/collective.h"
#include "comm/reduce.h"
#include "comm/transport.h"

namespace kl::comm {

// Elements sent per message of a pipelined ring: a received slice is reduced and forwarded while
// the next one is still in flight.
struct RingOptions {
  std::size_t slice_bytes = std::size_t(4) << 20;
};

// In place: buf holds this rank's count elements; afterwards the reduction over all ranks.
// Ring: a reduce-scatter then an all-gather over n balanced chunks, 2(n-1) steps, each chunk
// sliced and pipelined. Every rank moves 2(n-1)/n of the buffer each way (the bus-bandwidth
// factor).
void ring_allreduce(Transport& tp, const CollectiveContext& ctx, std::byte* buf, std::size_t count, DType t, RedOp op,
                    const RingOptions& opt);
// Recursive halving (reduce-scatter) then doubling (all-gather) over the largest power of two
// p <= n ranks; the n - p extra ranks first hand their buffer to a partner and get the result
// back. 2 log2(p) steps: fewer, larger messages than the ring (the latency-bound choice).
void tree_allreduce(Transport& tp, const CollectiveContext& ctx, std::byte* buf, std::size_t count, DType t, RedOp op);

// In place: out holds n blocks of block_count elements, this rank's own at block rank; afterwards
// every block. n - 1 ring steps, each forwarding the block received in the step before.
void ring_allgather(Transport& tp, const CollectiveContext& ctx, std::byte* out, std::size_t block_count, DType t,
                    const RingOptions& opt);
// In place: work holds n blocks of block_count elements (this rank's contribution to each);
// afterwards block rank holds that block reduced over all ranks (the other blocks are scratch).
void ring_reduce_scatter(Transport& tp, const CollectiveContext& ctx, std::byte* work, std::size_t block_count,
                         DType t, RedOp op, const RingOptions& opt);
// in holds n blocks, block j for rank j; out receives block rank of every rank, rank j's at block
// j. Step s exchanges with ranks r+s and r-s (n - 1 steps); in == out is allowed.
void pairwise_alltoall(Transport& tp, const CollectiveContext& ctx, const std::byte* in, std::byte* out,
                       std::size_t block_count, DType t);

// One collective by an own algorithm on any transport, buffers laid out as Layout says (in place
// when the input sits where Layout puts it). The copies into place and reduce-scatter's working
// copy of its input go through the transport's memory.
void run_algorithm(Transport& tp, const CollectiveContext& ctx, Collective c, Algo a, const std::byte* in, std::byte* out,
                   std::size_t block, DType t, RedOp op, const RingOptions& opt);

}  // namespace kl::comm
