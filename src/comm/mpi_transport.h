// The MPI transport: point-to-point between processes, host memory. Tags are the collective's
// sequence number modulo the tag range MPI guarantees; MPI's non-overtaking rule (messages between
// two ranks with one tag match in posting order) keeps a collective's slices in order.
#pragma once
#include <mpi.h>

#include <vector>

#include "comm/transport.h"

namespace kl::comm {

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle send(const CollectiveContext& ctx, int peer, std::span<const std::byte> data) override;
  Handle recv(const CollectiveContext& ctx, int peer, std::span<std::byte> data) override;
  void wait(Handle h) override;
  void wait_all() override;
  std::byte* scratch(int slot, std::size_t bytes) override;
  void copy(std::byte* dst, const std::byte* src, std::size_t bytes) override;
  void reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_;
};

}  // namespace kl::comm
