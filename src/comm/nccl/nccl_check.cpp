// `comm check --transport nccl`: the algorithms on the NCCL transport (device memory) beside NCCL's
// own collectives, one GPU per rank (local rank modulo the GPUs). More ranks than GPUs need NCCL 2.30
// or later, which takes them with NCCL_MULTI_RANK_GPU_ENABLE=1 (set here when unset); an older NCCL
// is refused with its version named (nccl_shared_gpu.h). MPI starts the ranks and carries NCCL's
// unique id; inputs are made and checked on the host. Built here; it has not run on a GPU.
#include <stdlib.h>

#include <cstdio>

#include <cstring>

#include "comm/bench.h"
#include "comm/nccl_shared_gpu.h"
#include "comm/nccl/nccl_transport.h"
#include "kernelab/error.h"

namespace kl::comm {

namespace {

ncclDataType_t nccl_type(DType t) { return t == DType::f32 ? ncclFloat32 : t == DType::f16 ? ncclFloat16 : ncclBfloat16; }
ncclRedOp_t nccl_op(RedOp op) { return op == RedOp::sum ? ncclSum : ncclMax; }

struct DeviceBuffer {
  std::byte* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    void* v = nullptr;
    check_cuda(cudaMalloc(&v, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    p = static_cast<std::byte*>(v);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

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
      if (in == out) {  // NCCL's all-to-all is out of place
        std::byte* copy = tp.scratch(2, bytes);
        tp.copy(copy, in, bytes);
        in = copy;
      }
      check_nccl(ncclAlltoAll(in, out, block, nccl_type(t), comm, s), "ncclAlltoAll");
      break;
    }
  }
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace

int run_nccl_check(Session& s, const CheckOptions& o) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    runtime_failure("--transport nccl: no CUDA device here (the NCCL transport is built but runs only on GPUs)");
  const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* local_size = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local_size ? std::atoi(local_size) : s.size();
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  if (const std::string refusal = shared_gpu_refusal(version, ranks_here, devices); !refusal.empty()) runtime_failure(refusal);
  if (ranks_here > devices && !getenv("NCCL_MULTI_RANK_GPU_ENABLE")) {
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);  // the only way NCCL puts these ranks on shared GPUs
    if (s.rank() == 0) std::fprintf(stderr, "comm check: %d ranks on %d GPU(s): NCCL_MULTI_RANK_GPU_ENABLE=1 set\n", ranks_here, devices);
  }
  if (s.rank() == 0) std::fprintf(stderr, "comm check: NCCL %s\n", nccl_version_name(version).c_str());
  check_cuda(cudaSetDevice((local ? std::atoi(local) : s.rank()) % devices), "cudaSetDevice");
  ncclUniqueId id;
  if (s.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, s.comm());
  ncclComm_t comm;
  check_nccl(ncclCommInitRank(&comm, s.size(), id, s.rank()), "ncclCommInitRank");
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  int code = 0;
  {
    NcclTransport tp(comm, stream);
    uint64_t seq = 0;
    code = check_cases(s, o, [&](const CheckCase& k, Algo a, const std::vector<std::byte>& input) {
      const Layout l = layout(k.op, k.block, s.size(), s.rank());
      const std::size_t e = dtype_size(k.t);
      DeviceBuffer in(l.in_count * e), out(l.out_count * e);
      check_cuda(cudaMemset(out.p, 0xff, l.out_count * e), "cudaMemset");  // poisoned: NaN in every dtype
      std::byte* src = in.p;
      std::byte* dst = out.p;
      if (k.in_place && k.op == Collective::allgather) src = dst + l.in_place_offset * e;
      else if (k.in_place && k.op == Collective::reducescatter) dst = in.p + l.in_place_offset * e;
      else if (k.in_place) dst = in.p;
      check_cuda(cudaMemcpy(src, input.data(), input.size(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
      if (a == Algo::library) nccl_library(comm, stream, tp, k.op, src, dst, k.block, k.t, k.redop);
      else run_algorithm(tp, CollectiveContext{++seq}, k.op, a, src, dst, k.block, k.t, k.redop, RingOptions{});
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      std::vector<std::byte> result(l.out_count * e);
      check_cuda(cudaMemcpy(result.data(), dst, result.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
      return result;
    });
  }
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return code;
}

}  // namespace kl::comm
