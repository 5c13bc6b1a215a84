// CPU rung of gemm_fp8.
//   cpu_promoted: e4m3 decoded through a 256-entry table, each 128-k block's dot product summed in
//                 fp32 and added, times its scales, into an fp32 total (the CUDA rung's promotion),
//                 or with a tensor scale one sum scaled once.
#include <array>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/gemm_fp8/gemm_fp8.h"

namespace kl {

namespace {
const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> v{};
    for (int c = 0; c < 256; ++c) v[size_t(c)] = e4m3_to_float(uint8_t(c));
    return v;
  }();
  return t;
}

template <class T> void promoted(const Fp8Params& a, const Args& args) {
  const std::array<float, 256>& f = e4m3_table();
  const auto* x = args.in[a.kA].as<uint8_t>();
  const auto* w = args.in[a.kW].as<uint8_t>();
  const float* sa = args.in[a.kSa].as<float>();
  const float* sw = args.in[a.kSw].as<float>();
  T* d = args.out[0].as<T>();
  const int64_t span = a.block() ? Fp8Params::kBlock : a.k;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t j = 0; j < a.n; ++j) {
      float total = 0;
      for (int64_t l0 = 0; l0 < a.k; l0 += span) {
        float part = 0;
        for (int64_t l = l0; l < l0 + span; ++l) part += f[x[i * a.k + l]] * f[w[j * a.k + l]];
        total += part * (sa[a.a_scale_at(i, l0)] * sw[a.w_scale_at(j, l0)]);
      }
      d[i * a.n + j] = cpu::from_float<T>(total);
    }
}

void run_promoted(const Fp8Params& a, const Args& args) {
  cpu::with_float_type(a.dtype, [&](auto t) { promoted<decltype(t)>(a, args); });
}
}  // namespace

std::vector<Variant> KL_CPU_ISA::gemm_fp8_cpu_variants() {
  return {cpu_variant("gemm_fp8", "cpu_promoted",
                      "e4m3 decoded by table, fp32 dot products per 128-k block promoted into an fp32 total with their "
                      "scales (one scaled sum with a tensor scale): the CUDA rung's arithmetic",
                      run_promoted)};
}

}  // namespace kl
