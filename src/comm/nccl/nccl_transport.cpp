#include "comm/nccl/nccl_transport.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>

#include "comm/nccl_shared_gpu.h"
#include "comm/session.h"
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

namespace {
int nccl_version_code() {
  int code = 0;
  check_nccl(ncclGetVersion(&code), "ncclGetVersion");
  return code;
}
int gpu_count() {
  int gpus = 0;
  return cudaGetDeviceCount(&gpus) == cudaSuccess ? gpus : 0;
}
constexpr const char* kNoGpu = "--transport nccl: no CUDA device here (the NCCL transport is built but runs only on GPUs)";
}  // namespace

void require_nccl_gpu() {
  if (gpu_count() > 0) return;  // rank 0 names the NCCL once the ranks run
  std::fprintf(stderr, "comm: NCCL %s\n", nccl_version_name(nccl_version_code()).c_str());
  runtime_failure(kNoGpu);
}

NcclRank::NcclRank(Session& s) {
  const int code = nccl_version_code();
  version = nccl_version_name(code);
  if (s.rank() == 0) std::fprintf(stderr, "comm: NCCL %s\n", version.c_str());
  gpus = gpu_count();
  if (gpus == 0) runtime_failure(kNoGpu);
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* local_size = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local_size ? std::atoi(local_size) : s.size();
  if (const std::string refusal = shared_gpu_refusal(code, ranks_here, gpus); !refusal.empty()) runtime_failure(refusal);
  if (ranks_here > gpus && !getenv("NCCL_MULTI_RANK_GPU_ENABLE")) {
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);  // the only way NCCL puts these ranks on shared GPUs
    if (s.rank() == 0) std::fprintf(stderr, "comm: %d ranks on %d GPU(s): NCCL_MULTI_RANK_GPU_ENABLE=1 set\n", ranks_here, gpus);
  }
  check_cuda(cudaSetDevice((local ? std::atoi(local) : s.rank()) % gpus), "cudaSetDevice");
  ncclUniqueId id;
  if (s.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  s.guarded("the broadcast of NCCL's unique id (MPI_Bcast)", [&] { MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, s.comm()); });
  check_nccl(ncclCommInitRank(&comm, s.size(), id, s.rank()), "ncclCommInitRank");
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
}

NcclRank::~NcclRank() {
  if (stream) cudaStreamDestroy(stream);
  if (comm) ncclCommDestroy(comm);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  void* v = nullptr;
  check_cuda(cudaMalloc(&v, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  p = static_cast<std::byte*>(v);
}

namespace {
ncclDataType_t nccl_type(DType t) { return t == DType::f32 ? ncclFloat32 : t == DType::f16 ? ncclFloat16 : ncclBfloat16; }
ncclRedOp_t nccl_op(RedOp op) { return op == RedOp::sum ? ncclSum : ncclMax; }
}  // namespace

void nccl_library(ncclComm_t comm, cudaStream_t s, NcclTransport& tp, Collective c, const std::byte* in, std::byte* out,
                  std::size_t block, DType t, RedOp op) {
  switch (c) {
    case Collective::allreduce: check_nccl(ncclAllReduce(in, out, block, nccl_type(t), nccl_op(op), comm, s), "ncclAllReduce"); break;
    case Collective::allgather: check_nccl(ncclAllGather(in, out, block, nccl_type(t), comm, s), "ncclAllGather"); break;
    case Collective::reducescatter:
      check_nccl(ncclReduceScatter(in, out, block, nccl_type(t), nccl_op(op), comm, s), "ncclReduceScatter");
      break;
    case Collective::alltoall: {
      const std::size_t bytes = block * dtype_size(t) * std::size_t(tp.size());
      if (in == out) {
        std::byte* copy = tp.scratch(2, bytes);
        tp.copy(copy, in, bytes);
        in = copy;
      }
      check_nccl(ncclAlltoAll(in, out, block, nccl_type(t), comm, s), "ncclAlltoAll");
      break;
    }
  }
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
