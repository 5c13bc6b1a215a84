// The NCCL transport: ncclSend/ncclRecv between GPUs, device memory, one CUDA stream. Posted
// operations are queued and launched together (ncclGroupStart/End) at the next wait, which then
// waits for the stream: a step's sends and receives complete as one group, so the algorithms run
// step by step on it (posts_ahead() is false). Temporaries are device buffers; the reduction is a
// CUDA kernel (device_reduce.cu). Built with CUDA; it has not run on a GPU yet.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/transport.h"

namespace kl::comm {

class Session;

void check_cuda(cudaError_t e, const char* what);  // RuntimeFailure naming the call
void check_nccl(ncclResult_t r, const char* what);

// One rank's NCCL: its GPU (local rank modulo the GPUs), a communicator over the session's ranks
// (NCCL's unique id carried by MPI) and a stream. More ranks than GPUs need NCCL 2.30 or later,
// which takes them with NCCL_MULTI_RANK_GPU_ENABLE=1 (set when unset); an older NCCL is refused with
// its version named (nccl_shared_gpu.h). RuntimeFailure without a GPU.
struct NcclRank {
  explicit NcclRank(Session& s);
  ~NcclRank();
  NcclRank(const NcclRank&) = delete;
  NcclRank& operator=(const NcclRank&) = delete;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int gpus = 0;
  std::string version;  // "2.30.7"
};

struct DeviceBuffer {
  std::byte* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

class NcclTransport;
// NCCL's own collective c, enqueued on the stream (in place as Layout places it; NCCL's all-to-all
// is out of place, so an in-place one goes through the transport's scratch).
void nccl_library(ncclComm_t comm, cudaStream_t s, NcclTransport& tp, Collective c, const std::byte* in, std::byte* out,
                  std::size_t block, DType t, RedOp op);
// dst[i] = dst[i] op src[i] on the device, in stream order.
void device_reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op, cudaStream_t stream);

class NcclTransport final : public Transport {
 public:
  NcclTransport(ncclComm_t comm, cudaStream_t stream);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle send(const CollectiveContext& ctx, int peer, std::span<const std::byte> data) override;
  Handle recv(const CollectiveContext& ctx, int peer, std::span<std::byte> data) override;
  void wait(Handle h) override;
  void wait_all() override;
  std::byte* scratch(int slot, std::size_t bytes) override;
  void copy(std::byte* dst, const std::byte* src, std::size_t bytes) override;
  void reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op) override;
  bool posts_ahead() const override { return false; }

 private:
  struct Op {
    int peer;
    const std::byte* send_data;  // null for a receive
    std::byte* recv_data;
    std::size_t bytes;
  };
  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0, size_ = 1;
  std::vector<Op> queued_;
  std::byte* scratch_[3] = {};
  std::size_t scratch_bytes_[3] = {};
};

}  // namespace kl::comm
