// CPU rungs of gemm_w4a16.
//   cpu_dequant_gemm: W dequantized whole into fp32, then one OpenBLAS sgemm (A W^T), D rounded once.
//   cpu_packed:       the codes read from W_packed, each found by its lane and nibble in the
//                     mma.sync fragment words, dequantized one output column at a time in the inner
//                     loop: the layout the CUDA rungs will read, consumed here first.
#include <cblas.h>
#include <omp.h>

#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"
#include "ops/gemm_w4a16/gemm_w4a16.h"
#include "quant/w4_fragments.h"

namespace kl {

namespace {
using cpu::from_float;
using cpu::to_float;

// Weight (r, c) from its unsigned code (0..15), its group's scale and zero, in fp32.
template <class T> struct Dequant {
  const W4A16Params& a;
  const T* scales;
  const uint8_t* zero_codes;  // gptq: int4, q_z - 8
  const T* zero_floats;       // awq: z
  Dequant(const W4A16Params& p, const Args& args)
      : a(p),
        scales(args.in[p.kScales].as<T>()),
        zero_codes(p.zero == W4Zero::gptq ? args.in[p.kZeros].as<uint8_t>() : nullptr),
        zero_floats(p.zero == W4Zero::awq ? args.in[p.kZeros].as<T>() : nullptr) {}
  float operator()(int64_t r, int64_t c, int code) const {
    const int64_t t = r * a.groups() + c / a.group;
    const float s = to_float(scales[t]);
    if (a.zero == W4Zero::gptq) return s * float(code - (i4_get(zero_codes, t) + 8));
    if (a.zero == W4Zero::awq) return s * float(code) - to_float(zero_floats[t]);
    return s * float(code - 8);
  }
};

// Floats of A ahead of anything else in the workspace.
template <class T> float* a_as_floats(const W4A16Params& a, const Args& args) {
  float* x = static_cast<float*>(args.workspace);
  const T* A = args.in[a.kA].as<T>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.m * a.k; ++i) x[i] = to_float(A[i]);
  return x;
}

template <class T> void dequant_gemm(const W4A16Params& a, const Args& args) {
  float* x = a_as_floats<T>(a, args);
  float* w = x + a.m * a.k;  // n x k
  float* d = w + a.n * a.k;  // m x n
  const Dequant<T> dq(a, args);
  const uint8_t* W = args.in[a.kW].as<uint8_t>();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.n; ++r)
    for (int64_t c = 0; c < a.k; ++c) w[r * a.k + c] = dq(r, c, i4_get(W, r * a.k + c) + 8);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(a.m), int(a.n), int(a.k), 1.0f, x, int(a.k), w, int(a.k), 0.0f, d,
              int(a.n));
  T* D = args.out[0].as<T>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.m * a.n; ++i) D[i] = from_float<T>(d[i]);
}

template <class T> void packed(const W4A16Params& a, const Args& args) {
  const float* x = a_as_floats<T>(a, args);
  float* columns = static_cast<float*>(args.workspace) + a.m * a.k;  // k floats per thread
  const uint32_t* words = args.in[a.packed_index()].as<uint32_t>();
  const Dequant<T> dq(a, args);
  T* D = args.out[0].as<T>();
#pragma omp parallel
  {
    float* col = columns + omp_get_thread_num() * a.k;
#pragma omp for schedule(static)
    for (int64_t j = 0; j < a.n; ++j) {
      for (int64_t c = 0; c < a.k; ++c) {
        const quant::W4Slot s = quant::w4_slot(a.n, j, c);
        col[c] = dq(j, c, int(words[s.word] >> (4 * s.nibble) & 0xfu));
      }
      for (int64_t i = 0; i < a.m; ++i) D[i * a.n + j] = from_float<T>(cpu::dot(x + i * a.k, col, a.k));
    }
  }
}

void run_dequant_gemm(const W4A16Params& a, const Args& args) {
  cpu::with_float_type(a.dtype, [&](auto t) { dequant_gemm<decltype(t)>(a, args); });
}
void run_packed(const W4A16Params& a, const Args& args) {
  cpu::with_float_type(a.dtype, [&](auto t) { packed<decltype(t)>(a, args); });
}
}  // namespace

std::vector<Variant> KL_CPU_ISA::gemm_w4a16_cpu_variants() {
  Variant dg = cpu_variant("gemm_w4a16", "cpu_dequant_gemm",
                           "W dequantized whole into fp32, then one OpenBLAS sgemm: the unfused two-step a framework would run",
                           run_dequant_gemm);
  dg.workspace_bytes = [](const Problem& p) {
    const W4A16Params& a = p.as<W4A16Params>();
    return size_t(a.m * a.k + a.n * a.k + a.m * a.n) * sizeof(float);
  };
  dg.supports = [](const Problem& p) -> Reason {
    const W4A16Params& a = p.as<W4A16Params>();
    const int64_t lim = int64_t{1} << 31;
    if (a.m >= lim || a.n >= lim || a.k >= lim) return "a dimension does not fit cblas' int";
    return std::nullopt;
  };
  Variant pk = cpu_variant("gemm_w4a16", "cpu_packed",
                           "the codes read from W_packed's mma-fragment words and dequantized a column at a time in the inner "
                           "loop: no fp32 copy of W, the packed layout the CUDA rungs read",
                           run_packed);
  pk.workspace_bytes = [](const Problem& p) {
    const W4A16Params& a = p.as<W4A16Params>();
    return size_t(a.m * a.k + int64_t(omp_get_max_threads()) * a.k) * sizeof(float);
  };
  return {dg, pk};
}

}  // namespace kl
