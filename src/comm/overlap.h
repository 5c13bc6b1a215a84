// `comm overlap`: a bucketed gradient all-reduce overlapped with a compute loop, as data-parallel
// training does it (a bucket's all-reduce starts as soon as the backward has produced it). With the
// library, compute runs in slices between which the rank drives the outstanding non-blocking
// all-reduces (MPI_Iallreduce + MPI_Test: OpenMPI has no progress thread). The own ring and tree
// are blocking: a communication thread runs them, bucket after bucket as the compute hands them
// over, as PyTorch DDP's reducer does with its process group's stream. Reported: compute alone, the
// all-reduces alone, back to back and overlapped; exposed communication = overlapped - compute;
// overlap ratio = 1 - exposed / all-reduces alone. On CPU ranks the copies and additions take the
// same cores as the compute: the ratio says how much of that a core can hide, not a GPU's DMA.
#pragma once
#include <cstddef>

#include "comm/session.h"

namespace kl::comm {

struct OverlapOptions {
  Algo algo = Algo::library;
  std::size_t bytes = std::size_t(64) << 20;  // all gradients, fp32
  int buckets = 4;
  double compute_ms = 20;  // per bucket
  int repeats = 3;         // the median of these
  bool json = false;
};

// 0, or 1 when an overlapped all-reduce's result is not the sum over ranks (each rank gives rank + 1).
int run_overlap(Session& s, const OverlapOptions& o);

}  // namespace kl::comm
