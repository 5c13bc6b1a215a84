// `comm bench` and `comm check`, run on every rank of an MPI job; rank 0 prints.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/reduce.h"
#include "comm/session.h"

namespace kl::comm {

struct BenchOptions {
  Collective op = Collective::allreduce;
  std::vector<Algo> algos;
  DType dtype = DType::f32;
  RedOp redop = RedOp::sum;
  std::size_t min_bytes = 8, max_bytes = std::size_t(64) << 20;
  double factor = 2;
  int warmup = 5, iters = 20;
  bool json = false;
  double straggler_ms = 20;
  std::string trace_dir;  // one Chrome trace per rank when not empty
};

// nccl-tests' table per algorithm (out-of-place and in-place: time, algbw, busbw, #wrong) and the
// average bus bandwidth line; the straggler line. Returns the exit code: 1 when any element was wrong.
int run_bench(Session& s, const BenchOptions& o);

struct CheckOptions {
  std::vector<Collective> ops;
  std::vector<DType> dtypes;
  std::vector<std::size_t> counts;  // elements per block
  bool json = false;
};

// Every algorithm of every op, dtype, reduction, count, out of place and in place, against the
// float64 reference and against the library's result. Returns 1 when any disagrees.
int run_check(Session& s, const CheckOptions& o);

}  // namespace kl::comm
