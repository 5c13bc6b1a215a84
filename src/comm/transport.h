// The transport the collectives are written on: non-blocking send and receive of a byte range to
// one peer rank, matched in posting order within a collective's sequence number. Two
// implementations: MPI point-to-point between processes (mpi_transport.cpp, host memory) and NCCL
// send/recv between GPUs (nccl_transport.cpp, device memory, built with CUDA).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

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
};

}  // namespace kl::comm
