// The algorithms on a loopback transport between threads (no MPI): ring and tree all-reduce, ring
// all-gather and reduce-scatter, pairwise all-to-all on 2 to 8 ranks (powers of two and not),
// against the float64 reference and its tolerance (src/comm/data.h).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "comm/algorithms.h"
#include "comm/data.h"
#include "comm/nccl_shared_gpu.h"
#include "comm_loopback.h"

namespace kl::test {

namespace {

using comm::Algo;
using comm::Collective;

// Every rank runs the collective in place on its own thread; the worst mismatch over the ranks.
comm::Mismatch run_loopback(Collective c, Algo a, int ranks, std::size_t block, DType t, comm::RedOp op,
                            std::size_t slice_bytes, bool posts_ahead) {
  LoopbackFabric fabric;
  std::vector<comm::Mismatch> result(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      LoopbackTransport tp(fabric, r, ranks, posts_ahead);
      const comm::Layout l = comm::layout(c, block, ranks, r);
      const std::size_t e = comm::dtype_size(t);
      std::vector<std::byte> in(l.in_count * e), out(l.out_count * e, std::byte{0xff});
      const comm::CollectiveContext ctx{1};
      const comm::RingOptions ring{slice_bytes};
      if (c == Collective::allgather) {
        comm::fill_input(c, out.data() + l.in_place_offset * e, block, t, ranks, r, 7);
        comm::ring_allgather(tp, ctx, out.data(), block, t, ring);
      } else {
        comm::fill_input(c, in.data(), block, t, ranks, r, 7);
        if (c == Collective::allreduce && a == Algo::ring) comm::ring_allreduce(tp, ctx, in.data(), block, t, op, ring);
        if (c == Collective::allreduce && a == Algo::tree) comm::tree_allreduce(tp, ctx, in.data(), block, t, op);
        if (c == Collective::reducescatter) comm::ring_reduce_scatter(tp, ctx, in.data(), block, t, op, ring);
        if (c == Collective::alltoall) comm::pairwise_alltoall(tp, ctx, in.data(), out.data(), block, t);
        const std::size_t from = c == Collective::reducescatter ? l.in_place_offset * e : 0;
        if (c != Collective::alltoall) std::memcpy(out.data(), in.data() + from, l.out_count * e);
      }
      result[std::size_t(r)] = comm::check_against_reference(comm::reference(c, block, t, op, ranks, r, 7), out.data(), t);
    });
  for (std::thread& th : threads) th.join();
  comm::Mismatch worst;
  for (const comm::Mismatch& m : result) worst.wrong += m.wrong, worst.worst = std::max(worst.worst, m.worst);
  return worst;
}

}  // namespace

// Both schedules: pipelined across steps (MPI) and step by step (NCCL's grouped point-to-point).
TEST(CommAlgorithms, EveryAlgorithmMatchesTheReferenceOnTwoToEightRanks) {
  struct Case {
    Collective c;
    Algo a;
  };
  const Case cases[] = {{Collective::allreduce, Algo::ring}, {Collective::allreduce, Algo::tree},
                        {Collective::allgather, Algo::ring}, {Collective::reducescatter, Algo::ring},
                        {Collective::alltoall, Algo::pairwise}};
  for (const Case& k : cases)
    for (int ranks = 2; ranks <= 8; ++ranks)
      for (std::size_t block : {1, 7, 1000, 4099})
        for (DType t : {DType::f32, DType::f16, DType::bf16})
          for (comm::RedOp op : {comm::RedOp::sum, comm::RedOp::max})
            for (bool posts_ahead : {true, false}) {
              // 256-byte slices: many pipelined slices per chunk even on these small buffers
              const comm::Mismatch m = run_loopback(k.c, k.a, ranks, block, t, op, 256, posts_ahead);
              EXPECT_EQ(m.wrong, 0u) << comm::collective_name(k.c) << " " << comm::algo_name(k.a) << " ranks " << ranks
                                     << " block " << block << " " << dtype_name(t) << " " << comm::redop_name(op)
                                     << (posts_ahead ? " pipelined" : " step by step");
              EXPECT_LE(m.worst, 1.0);
            }
}

// The NCCL transport's refusal of shared GPUs is decided on NCCL's version code, tested here without
// a GPU: the GPU image's NCCL 2.28.9 would otherwise fail inside ncclCommInitRank.
TEST(NcclSharedGpu, OlderThan230IsRefusedWithItsVersionNamed) {
  EXPECT_EQ(comm::nccl_version_name(22809), "2.28.9");
  EXPECT_EQ(comm::nccl_version_name(23007), "2.30.7");
  const std::string refusal = comm::shared_gpu_refusal(22809, 2, 1);
  EXPECT_NE(refusal.find("2 ranks on 1 GPU need NCCL 2.30 or later"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("the NCCL loaded is 2.28.9"), std::string::npos) << refusal;
  EXPECT_NE(comm::shared_gpu_refusal(22999, 3, 2).find("3 ranks on 2 GPUs"), std::string::npos);
  EXPECT_EQ(comm::shared_gpu_refusal(23000, 2, 1), "");  // 2.30.0 takes them
  EXPECT_EQ(comm::shared_gpu_refusal(23007, 4, 1), "");
  EXPECT_EQ(comm::shared_gpu_refusal(22809, 2, 2), "");  // a GPU each: any version
  EXPECT_EQ(comm::shared_gpu_refusal(22809, 1, 1), "");
}

}  // namespace kl::test
