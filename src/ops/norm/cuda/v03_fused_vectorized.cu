// layernorm/rmsnorm v03: the row stays in registers (16 values per thread, up to 16384 columns)
// between statistics and normalise: x and residual read once, y and h written once, all with
// 16-byte vector accesses where the rows allow (scalar otherwise). Per-thread statistics are
// exact two-pass sums over registers, merged across the block as Welford states (shuffles).
#include "ops/norm/cuda/norm_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace norm;
constexpr int kPerThread = 16;  // values a thread holds; a block of 1024 holds kNormFusedMaxCols
static_assert(1024 * kPerThread == kNormFusedMaxCols);

// W elements per access: kVec<E> when every row and gamma/beta are 16-byte aligned, else 1.
template <class E, int W, bool kLayer> __global__ void __launch_bounds__(1024) norm_fused(Tensors<E> t) {
  constexpr int kSlots = kPerThread / W;  // packs a thread holds; pack q = threadIdx.x + k * blockDim.x
  KL_SHARED(Welford, buf, [33]);
  const int64_t offs = static_cast<int64_t>(blockIdx.x) * t.cols;
  const int npack = t.cols / W;
  const auto held = [&](int k) { return static_cast<int>(threadIdx.x + k * blockDim.x) < npack; };
  const auto at = [&](int k) { return static_cast<int>(threadIdx.x + k * blockDim.x) * W; };  // column

  float v[kSlots][W];  // the row's values x (+ residual), read once
  float sum = 0, n = 0;
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k) {
    if (!held(k)) continue;
    const Pack<E, W> xp = load_pack<W>(t.x + offs + at(k));
    KL_UNROLL
    for (int e = 0; e < W; ++e) v[k][e] = to_f32(xp.v[e]);
    if (t.res) {
      const Pack<E, W> rp = load_pack<W>(t.res + offs + at(k));
      Pack<E, W> hp;
      KL_UNROLL
      for (int e = 0; e < W; ++e) hp.v[e] = from_f32<E>(v[k][e] += to_f32(rp.v[e]));
      store_pack<W>(t.h + offs + at(k), hp);
    }
    KL_UNROLL
    for (int e = 0; e < W; ++e) sum += v[k][e];
    n += W;
  }
  const float mean = n > 0 ? __fdividef(sum, n) : 0.0f;  // this thread's values: exact two-pass statistics
  float m2 = 0;
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k)
    if (held(k)) {
      KL_UNROLL
      for (int e = 0; e < W; ++e) m2 += (v[k][e] - mean) * (v[k][e] - mean);
    }
  const Coeffs c = coeffs_of<kLayer>(block_welford(Welford{n, mean, m2}, buf), t.eps);

  KL_UNROLL
  for (int k = 0; k < kSlots; ++k) {
    if (!held(k)) continue;
    const Pack<E, W> g = load_pack<W>(t.gamma + at(k));
    const Pack<E, W> b = kLayer ? load_pack<W>(t.beta + at(k)) : g;  // rmsnorm: no beta, b unused
    Pack<E, W> yp;
    KL_UNROLL
    for (int e = 0; e < W; ++e) {
      const float shifted = kLayer ? to_f32(b.v[e]) : 0.0f;
      yp.v[e] = from_f32<E>((v[k][e] - c.shift) * c.rstd * to_f32(g.v[e]) + shifted);
    }
    store_pack<W>(t.y + offs + at(k), yp);
  }
}

template <class E, int W, bool kLayer> void launch_packs(const Tensors<E>& t, void* stream) {
  constexpr int kSlots = kPerThread / W;
  const int npack = t.cols / W, warps = (npack + 32 * kSlots - 1) / (32 * kSlots);
  KL_LAUNCH((norm_fused<E, W, kLayer>), t.rows, 32 * (warps < 1 ? 1 : warps), 0, stream, t);
}

template <class E, bool kLayer> void run(const NormParams& p, const Args& a) {
  const Tensors<E> t = tensors_of<E>(p, a, kLayer);
  const bool vec = t.cols % kVec<E> == 0 && aligned16(t.x) && aligned16(t.gamma) && aligned16(t.y) &&
                   (!t.beta || aligned16(t.beta)) && (!t.res || (aligned16(t.res) && aligned16(t.h)));
  if (vec) launch_packs<E, kVec<E>, kLayer>(t, a.stream);
  else launch_packs<E, 1, kLayer>(t, a.stream);
}

template <bool kLayer> void launch(const NormParams& p, const Args& a) {
  with_element(p.x, [&](auto e) { run<decltype(e), kLayer>(p, a); });
}

template <bool kLayer> Rung<NormParams> rung() {
  return {.op = op_of(kLayer),
          .name = "cuda_fused_vectorized",
          .note = "the row held in registers between statistics and normalise: x and residual read once, y and h written once, 16-byte vector loads and stores where rows are aligned",
          .supports = [](const NormParams& p) -> Reason {
            if (p.cols <= kNormFusedMaxCols) return {};
            return "cols=" + std::to_string(p.cols) + " is over the " + std::to_string(kNormFusedMaxCols) +
                   " values a block holds in registers (1024 threads x 16); cuda_welford takes any length";
          },
          // Blocks grow with cols (32 to 1024 threads): 256 at the report's 4096 columns.
          .configs = {{.name = "16_per_thread",
                       .threads = 256,
                       .kernels = {{for_elements([](auto e) { using E = decltype(e); return KL_KERNEL(norm_fused<E, kVec<E>, kLayer>); }),
                                    {"ld.global.nc.v4", "st.global.v4", "shfl.sync", "bar.sync"},
                                    {"LDG.E.128.CONSTANT", "STG.E.128", "SHFL.BFLY", "BAR.SYNC"}},
                                   {for_elements([](auto e) { return KL_KERNEL(norm_fused<decltype(e), 1, kLayer>); }),
                                    {"shfl.sync", "bar.sync"},
                                    {"SHFL.BFLY", "BAR.SYNC"}}},
                       .run = launch<kLayer>}}};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS { return {variant_of(rung<true>()), variant_of(rung<false>())}; }

}  // namespace kl::KL_TARGET
