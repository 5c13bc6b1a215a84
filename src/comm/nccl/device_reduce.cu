// The NCCL transport's reduction: dst = dst op src elementwise, accumulated in float and rounded
// once, as the host reduction (comm/reduce.cpp) and NCCL do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "comm/nccl/nccl_transport.h"

namespace kl::comm {

namespace {

__device__ float to_float(float x) { return x; }
__device__ float to_float(__half x) { return __half2float(x); }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ T from_float(float x);
template <> __device__ float from_float<float>(float x) { return x; }
template <> __device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <class T, bool Sum> __global__ void reduce_kernel(T* dst, const T* src, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    const float a = to_float(dst[i]), b = to_float(src[i]);
    dst[i] = from_float<T>(Sum ? a + b : fmaxf(a, b));
  }
}

template <class T> void launch(std::byte* dst, const std::byte* src, std::size_t count, RedOp op, cudaStream_t s) {
  const unsigned blocks = unsigned(std::min<std::size_t>((count + 255) / 256, 4096));
  if (count == 0) return;
  if (op == RedOp::sum) reduce_kernel<T, true><<<blocks, 256, 0, s>>>(reinterpret_cast<T*>(dst), reinterpret_cast<const T*>(src), count);
  else reduce_kernel<T, false><<<blocks, 256, 0, s>>>(reinterpret_cast<T*>(dst), reinterpret_cast<const T*>(src), count);
  check_cuda(cudaGetLastError(), "reduce_kernel launch");
}

}  // namespace

void device_reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, RedOp op, cudaStream_t stream) {
  if (t == DType::f32) launch<float>(dst, src, count, op, stream);
  else if (t == DType::f16) launch<__half>(dst, src, count, op, stream);
  else launch<__nv_bfloat16>(dst, src, count, op, stream);
}

}  // namespace kl::comm
