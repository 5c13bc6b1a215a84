#include "comm/mpi_transport.h"

#include <fmt/format.h>

#include <climits>
#include <cstring>

#include "comm/scratch.h"

#include "kernelab/error.h"

namespace kl::comm {

namespace {

constexpr uint64_t kTagRange = 32768;  // MPI_TAG_UB is at least 32767 in every implementation

int byte_count(std::size_t bytes) {
  if (bytes > std::size_t(INT_MAX)) runtime_failure(fmt::format("message of {} bytes: past MPI's int count", bytes));
  return int(bytes);
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
}

Transport::Handle MpiTransport::send(const CollectiveContext& ctx, int peer, std::span<const std::byte> data) {
  pending_.push_back(MPI_REQUEST_NULL);
  MPI_Isend(data.data(), byte_count(data.size()), MPI_BYTE, peer, int(ctx.seq % kTagRange), comm_, &pending_.back());
  return Handle(pending_.size() - 1);
}

Transport::Handle MpiTransport::recv(const CollectiveContext& ctx, int peer, std::span<std::byte> data) {
  pending_.push_back(MPI_REQUEST_NULL);
  MPI_Irecv(data.data(), byte_count(data.size()), MPI_BYTE, peer, int(ctx.seq % kTagRange), comm_, &pending_.back());
  return Handle(pending_.size() - 1);
}

void MpiTransport::wait(Handle h) { MPI_Wait(&pending_[std::size_t(h)], MPI_STATUS_IGNORE); }

void MpiTransport::wait_all() {
  MPI_Waitall(int(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
  pending_.clear();
}

std::byte* MpiTransport::scratch(int slot, std::size_t bytes) { return host_scratch(slot, bytes); }

void MpiTransport::copy(std::byte* dst, const std::byte* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void MpiTransport::reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op) {
  reduce_into(dst, src, count, t, op);
}

}  // namespace kl::comm
