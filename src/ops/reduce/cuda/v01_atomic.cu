// reduce v01: one thread per element, each folding its element straight into the output with a
// global atomic; a tiny kernel first sets the output to the identity. No cooperation at all:
// every thread of a row (or of the tensor, over=total) contends for one address and the atomics
// serialise there. The baseline whose traffic every later rung removes.
#include "ops/reduce/cuda/common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace reduce_cuda;

// Float max from integer atomics. Finite floats with the sign bit clear order like their bits
// read as signed ints; with the sign bit set they order in reverse of their bits read as
// unsigned ints. So a non-negative v goes through atomicMax on int and a negative one through
// atomicMin on unsigned, and mixed signs work out: a non-negative float's bits are a larger int
// than any negative float's (negative as an int) and a smaller unsigned (below 0x80000000) than
// any negative float's, so neither atomic can replace a larger value. -inf is the identity.
__device__ __forceinline__ void atomic_max_float(float* address, float v) {
  if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(address), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned*>(address), __float_as_uint(v));
}

template <class Op> __global__ void reduce_init(float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = Op::identity();
}

// Element i of x folded into y[i / cols] (over=rows) or y[0] (over=total).
template <class E, class Op>
__global__ void reduce_atomic(const E* __restrict__ x, float* __restrict__ y, int64_t n, int64_t cols, bool total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* out = y + (total ? 0 : i / cols);
  if constexpr (std::is_same_v<Op, Sum>) atomicAdd(out, to_float(x[i]));
  else atomic_max_float(out, to_float(x[i]));
}

void launch(const ReduceParams& p, const Args& a) {
  dispatch(p, [&]<class E, class Op>() {
    const int64_t n = p.n(), outputs = p.outputs();
    auto* y = static_cast<float*>(a.out[0].data());
    KL_LAUNCH(reduce_init<Op>, dim3(static_cast<unsigned>((outputs + kThreads - 1) / kThreads)), dim3(kThreads), 0,
              a.stream, y, outputs);
    KL_LAUNCH((reduce_atomic<E, Op>), dim3(static_cast<unsigned>((n + kThreads - 1) / kThreads)), dim3(kThreads), 0,
              a.stream, static_cast<const E*>(a.in[0].data()), y, n, p.cols, p.total);
  });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  const auto atomic = [](auto e, auto op) { return KL_KERNEL(reduce_atomic<decltype(e), decltype(op)>); };
  const Rung<ReduceParams> r{
      .op = "reduce",
      .name = "cuda_atomic",
      .note = "one thread per element, each an atomic into the output (float max by the int-ordering trick): every thread of a row contends for one address",
      .configs = {{.name = "256_threads",
                   .threads = kThreads,
                   .kernels = {{{KL_KERNEL(reduce_init<Sum>), KL_KERNEL(reduce_init<Max>)}, {"st.global"}, {"STG.E"}},
                               {for_inputs<Sum>(atomic), {"atom.global.add.f32"}, {"REDG.E.ADD.F32"}},
                               {for_inputs<Max>(atomic), {"atom.global.max.s32", "atom.global.min.u32"}, {"REDG.E.MAX.S32", "REDG.E.MIN"}}},
                   .run = launch}}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
