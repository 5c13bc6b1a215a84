#include "comm/algorithms.h"

namespace kl::comm {

void run_algorithm(Transport& tp, const CollectiveContext& ctx, Collective c, Algo a, const std::byte* in, std::byte* out,
                   std::size_t block, DType t, RedOp op, const RingOptions& opt) {
  const Layout l = layout(c, block, tp.size(), tp.rank());
  const std::size_t e = dtype_size(t);
  switch (c) {
    case Collective::allreduce:
      if (in != out) tp.copy(out, in, block * e);
      if (a == Algo::tree) tree_allreduce(tp, ctx, out, block, t, op);
      else ring_allreduce(tp, ctx, out, block, t, op, opt);
      break;
    case Collective::allgather:
      if (in != out + l.in_place_offset * e) tp.copy(out + l.in_place_offset * e, in, block * e);
      ring_allgather(tp, ctx, out, block, t, opt);
      break;
    case Collective::reducescatter: {
      std::byte* work = tp.scratch(2, l.in_count * e);
      tp.copy(work, in, l.in_count * e);
      ring_reduce_scatter(tp, ctx, work, block, t, op, opt);
      tp.copy(out, work + l.in_place_offset * e, block * e);
      break;
    }
    case Collective::alltoall: pairwise_alltoall(tp, ctx, in, out, block, t); break;
  }
}

}  // namespace kl::comm
