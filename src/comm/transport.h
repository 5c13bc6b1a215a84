// The transport the collectives are written on: non-blocking send and receive of a byte range to
// one peer rank, matched in posting order within a collective's sequence number. Two
// implementations: MPI point-to-point between processes (mpi_transport.cpp, host memory) and NCCL
// send/recv between GPUs (nccl_transport.cpp, device memory, built with CUDA).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "comm/reduce.h"

namespace kl::comm {

// What every message of one collective carries: its sequence number, counted per rank from 1 in
// call order, so every rank numbers the same collective alike.
struct CollectiveContext {
  uint64_t seq = 0;
};

class Transport {
 public:
  using Handle = int;
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posts and returns at once; the range must stay valid (and, for a send, unchanged) until
  // wait(handle) or wait_all() returns.
  virtual Handle send(const CollectiveContext& ctx, int peer, std::span<const std::byte> data) = 0;
  virtual Handle recv(const CollectiveContext& ctx, int peer, std::span<std::byte> data) = 0;
  virtual void wait(Handle h) = 0;
  virtual void wait_all() = 0;  // every operation posted and not yet waited for

  // The memory the transport moves (host for MPI, device for NCCL) is where the algorithms'
  // temporaries, local copies and reductions live too.
  virtual std::byte* scratch(int slot, std::size_t bytes) = 0;  // grow-only, slots 0-2
  virtual void copy(std::byte* dst, const std::byte* src, std::size_t bytes) = 0;
  virtual void reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op) = 0;
  // Whether receives may be posted ahead of the step whose sends feed them (MPI: yes, the ring
  // pipelines its slices across steps). NCCL runs a step's sends and receives as one group that
  // completes as a whole: a receive posted a step early would hold the group, so the ring runs
  // step by step there.
  virtual bool posts_ahead() const { return true; }
};

}  // namespace kl::comm
