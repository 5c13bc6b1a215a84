// `comm bench` and `comm check`, run on every rank of an MPI job; rank 0 prints.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/reduce.h"
#include "comm/session.h"

namespace kl::comm {

struct BenchOptions {
  std::string transport = "mpi";  // or "nccl" (built with CUDA and NCCL)
  Collective op = Collective::allreduce;
  std::vector<Algo> algos;
  DType dtype = DType::f32;
  RedOp redop = RedOp::sum;
  std::size_t min_bytes = 8, max_bytes = std::size_t(64) << 20;
  double factor = 2;
  int warmup = 5, iters = 20;
  bool json = false;
  double straggler_ms = 20;
};

// Where a bench's buffers live and how its calls run: host memory and the session's MPI transport
// or MPI library (run_bench), device memory and the NCCL transport or NCCL (run_nccl_bench).
class BenchTarget {
 public:
  virtual ~BenchTarget() = default;
  virtual std::string ranks_text() const = 0;     // what the ranks are, for the table's first line
  virtual std::string algo_text(Algo a) const = 0;  // whose algorithm, on which transport
  virtual void resize(std::size_t in_bytes, std::size_t out_bytes) = 0;  // contents undefined
  virtual std::byte* in() = 0;
  virtual std::byte* out() = 0;
  virtual void write(std::byte* dst, const std::vector<std::byte>& host) = 0;
  virtual std::vector<std::byte> read(const std::byte* src, std::size_t bytes) = 0;
  // `calls` calls back to back, each through Session::record, all finished on return.
  virtual void run(Collective c, Algo a, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op, int calls) = 0;
};

// nccl-tests' table per algorithm (out-of-place and in-place: time, algbw, busbw, #wrong) and the
// average bus bandwidth line; the straggler line. Returns the exit code: 1 when any element was wrong.
int run_bench(Session& s, const BenchOptions& o, BenchTarget& target);
int run_bench(Session& s, const BenchOptions& o);  // on host memory and MPI
// On the GPUs: the own algorithms on the NCCL transport and NCCL's collectives (built with CUDA and
// NCCL: nccl/nccl_bench.cpp; RuntimeFailure without a GPU).
int run_nccl_bench(Session& s, const BenchOptions& o);
// Before mpirun starts: without a GPU, "comm: NCCL x.y.z" on stderr and RuntimeFailure (nccl/nccl_transport.cpp).
void require_nccl_gpu();

struct CheckOptions {
  std::string transport = "mpi";  // or "nccl" (built with CUDA and NCCL)
  std::vector<Collective> ops;
  std::vector<DType> dtypes;
  std::vector<std::size_t> counts;  // elements per block
  bool json = false;
};

// Every algorithm of every op, dtype, reduction, count, out of place and in place, against the
// float64 reference and against the library's result. Returns 1 when any disagrees.
int run_check(Session& s, const CheckOptions& o);

// One case of the check, and what runs it: algorithm a on a fresh copy of `input` (this rank's
// input buffer, host memory), returning this rank's output (host memory).
struct CheckCase {
  Collective op;
  DType t;
  RedOp redop;
  std::size_t block;
  bool in_place;
};
using CaseRunner = std::function<std::vector<std::byte>(const CheckCase&, Algo, const std::vector<std::byte>& input)>;
// The loop of run_check over any runner (the NCCL check's runs on GPUs).
int check_cases(Session& s, const CheckOptions& o, const CaseRunner& run);
// The same check on the NCCL transport and NCCL's own collectives, one GPU per rank (built with
// CUDA and NCCL: nccl/nccl_check.cpp; RuntimeFailure without a GPU).
int run_nccl_check(Session& s, const CheckOptions& o);

}  // namespace kl::comm
