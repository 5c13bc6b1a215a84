// CPU rung of gemm_w8a8.
//   cpu_int32: each D element an exact int32 dot product of an A_q row and a W_q row (contiguous along
//              k, which the compiler vectorises), scaled by sa[i] * sw[j] in fp32: the arithmetic of
//              the CUDA rungs, one output at a time.
#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/gemm_w8a8/gemm_w8a8.h"

namespace kl {

namespace {
int32_t dot_s8(const int8_t* x, const int8_t* w, int64_t k) {
  int32_t acc = 0;
  for (int64_t l = 0; l < k; ++l) acc += int32_t(x[l]) * int32_t(w[l]);
  return acc;
}

template <class T> void int32_gemm(const W8A8Params& a, const Args& args) {
  const auto* x = args.in[a.kA].as<int8_t>();
  const auto* w = args.in[a.kW].as<int8_t>();
  const float* sa = args.in[a.kSa].as<float>();
  const float* sw = args.in[a.kSw].as<float>();
  T* d = args.out[0].as<T>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t j = 0; j < a.n; ++j) d[i * a.n + j] = cpu::from_float<T>(float(dot_s8(x + i * a.k, w + j * a.k, a.k)) * sa[i] * sw[j]);
}

void run_int32(const W8A8Params& a, const Args& args) {
  cpu::with_float_type(a.dtype, [&](auto t) { int32_gemm<decltype(t)>(a, args); });
}
}  // namespace

std::vector<Variant> KL_CPU_ISA::gemm_w8a8_cpu_variants() {
  return {cpu_variant("gemm_w8a8", "cpu_int32",
                      "exact int32 dot products of int8 rows, the per-row and per-channel scales applied in fp32 after "
                      "the sum: the CUDA rungs' arithmetic",
                      run_int32)};
}

}  // namespace kl
