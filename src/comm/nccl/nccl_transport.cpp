#include "comm/nccl/nccl_transport.h"

#include <fmt/format.h>

#include "kernelab/error.h"

namespace kl::comm {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) runtime_failure(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  const std::string detail = ncclGetLastError(nullptr);  // e.g. "Duplicate GPU detected : rank 1 and rank 0 ..."
  runtime_failure(fmt::format("{}: {}{}{}", what, ncclGetErrorString(r), detail.empty() ? "" : ": ", detail));
}

NcclTransport::NcclTransport(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
  check_nccl(ncclCommUserRank(comm, &rank_), "ncclCommUserRank");
  check_nccl(ncclCommCount(comm, &size_), "ncclCommCount");
}

NcclTransport::~NcclTransport() {
  for (std::byte* p : scratch_) cudaFree(p);
}

// Every message of a collective is tagged by NCCL's own ordering: sends and receives between two
// ranks match in launch order, which the step-by-step schedule keeps (ctx is not needed on the wire).
Transport::Handle NcclTransport::send(const CollectiveContext&, int peer, std::span<const std::byte> data) {
  queued_.push_back({peer, data.data(), nullptr, data.size()});
  return Handle(queued_.size() - 1);
}

Transport::Handle NcclTransport::recv(const CollectiveContext&, int peer, std::span<std::byte> data) {
  queued_.push_back({peer, nullptr, data.data(), data.size()});
  return Handle(queued_.size() - 1);
}

void NcclTransport::wait(Handle) { wait_all(); }

void NcclTransport::wait_all() {
  if (!queued_.empty()) {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const Op& op : queued_) {
      if (op.send_data) check_nccl(ncclSend(op.send_data, op.bytes, ncclUint8, op.peer, comm_, stream_), "ncclSend");
      else check_nccl(ncclRecv(op.recv_data, op.bytes, ncclUint8, op.peer, comm_, stream_), "ncclRecv");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    queued_.clear();
  }
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::byte* NcclTransport::scratch(int slot, std::size_t bytes) {
  if (scratch_bytes_[slot] < bytes) {
    check_cuda(cudaFree(scratch_[slot]), "cudaFree");
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc (NCCL transport scratch)");
    scratch_[slot] = static_cast<std::byte*>(p), scratch_bytes_[slot] = bytes;
  }
  return scratch_[slot];
}

void NcclTransport::copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
}

void NcclTransport::reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op) {
  device_reduce(dst, src, count, t, op, stream_);
}

}  // namespace kl::comm
