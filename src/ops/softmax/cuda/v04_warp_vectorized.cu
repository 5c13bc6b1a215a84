// softmax v04: a warp per row for rows of up to 1024 columns: the row is read once with 16-byte
// vector loads (a scalar head and tail where the row is not 16-byte aligned) and held in
// registers (32 floats per lane); max and sum are warp shuffles. One read of x instead of two,
// no shared memory and no block barriers. Where x and y rows sit at different offsets from a
// 16-byte boundary, a scalar instantiation runs instead. Configs: 8 or 4 rows (warps) a block.
#include "ops/softmax/cuda/softmax_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace softmax;
constexpr int kPerLane = kSoftmaxWarpMaxCols / 32;  // floats a lane holds in registers

// W elements per access: kVec<E> (16 bytes) when x and y rows share their alignment, else 1;
// kWarps rows a block.
template <class E, int W, int kWarps> __global__ void softmax_warp(const E* __restrict__ x, E* __restrict__ y, Shape s) {
  constexpr int kSlots = kPerLane / W;  // packs a lane holds
  const int lane = threadIdx.x % 32, row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= s.rows) return;  // the whole warp leaves together
  const int valid = valid_cols(s, row);
  const E* xr = x + static_cast<int64_t>(row) * s.cols;
  E* yr = y + static_cast<int64_t>(row) * s.cols;
  // The row: head elements up to the first 16-byte boundary, npack whole packs, then a tail.
  const int misalign = static_cast<int>(reinterpret_cast<uintptr_t>(xr) % 16) / static_cast<int>(sizeof(E));
  const int head = W == 1 ? 0 : min(s.cols, (kVec<E> - misalign) % kVec<E>);
  const int npack = (s.cols - head) / W, tail0 = head + npack * W;  // tail: [tail0, cols), < W elements
  const auto t_at = [&](int j, E e) { return j < valid ? to_f32(e) * s.c : -INFINITY; };

  // Read once: t = x * scale * log2(e), -inf where masked or past the row.
  float hv = lane < head ? t_at(lane, xr[lane]) : -INFINITY;
  float tv = tail0 + lane < s.cols ? t_at(tail0 + lane, xr[tail0 + lane]) : -INFINITY;
  float v[kSlots][W];
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k) {
    const int q = lane + 32 * k;
    if (q < npack) {
      const Pack<E, W> pk = load_pack<W>(xr + head + q * W);
      KL_UNROLL
      for (int e = 0; e < W; ++e) v[k][e] = t_at(head + q * W + e, pk.v[e]);
    } else {
      KL_UNROLL
      for (int e = 0; e < W; ++e) v[k][e] = -INFINITY;
    }
  }
  float m = fmaxf(hv, tv);
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k)
    KL_UNROLL
    for (int e = 0; e < W; ++e) m = fmaxf(m, v[k][e]);
  m = warp_reduce(m, Max{});
  if (m == -INFINITY) m = 0.0f;  // a fully masked row: every 2^(t - m) is 0, y is zeros

  hv = exp2f(hv - m), tv = exp2f(tv - m);
  float sum = hv + tv;
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k)
    KL_UNROLL
    for (int e = 0; e < W; ++e) sum += v[k][e] = exp2f(v[k][e] - m);
  const float inv = inv_or_zero(warp_reduce(sum, Sum{}));

  if (lane < head) yr[lane] = from_f32<E>(hv * inv);
  if (tail0 + lane < s.cols) yr[tail0 + lane] = from_f32<E>(tv * inv);
  KL_UNROLL
  for (int k = 0; k < kSlots; ++k) {
    const int q = lane + 32 * k;
    if (q < npack) {
      Pack<E, W> pk;
      KL_UNROLL
      for (int e = 0; e < W; ++e) pk.v[e] = from_f32<E>(v[k][e] * inv);
      store_pack<W>(yr + head + q * W, pk);
    }
  }
}

template <class E, int kWarps> void run(const SoftmaxParams& p, const Args& a) {
  const Shape s = shape_of(p);
  const E* x = static_cast<const E*>(a.in[0].data());
  E* y = static_cast<E*>(a.out[0].data());
  const unsigned grid = static_cast<unsigned>((s.rows + kWarps - 1) / kWarps);
  // Vector packs need every row of x and y at the same offset from a 16-byte boundary: x and y
  // advance by the same row length, so their first rows decide.
  const bool same_offset = reinterpret_cast<uintptr_t>(x) % 16 == reinterpret_cast<uintptr_t>(y) % 16;
  if (same_offset)
    KL_LAUNCH((softmax_warp<E, kVec<E>, kWarps>), grid, 32 * kWarps, 0, a.stream, x, y, s);
  else
    KL_LAUNCH((softmax_warp<E, 1, kWarps>), grid, 32 * kWarps, 0, a.stream, x, y, s);
}

template <int kWarps> void launch(const SoftmaxParams& p, const Args& a) {
  rowwise::with_element(p.x, [&](auto e) { run<decltype(e), kWarps>(p, a); });
}

template <int kWarps> RungConfig<SoftmaxParams> config() {
  return {.name = std::to_string(kWarps) + "_rows_per_block",
          .threads = 32 * kWarps,
          .kernels = {{for_elements([](auto e) { using E = decltype(e); return KL_KERNEL(softmax_warp<E, kVec<E>, kWarps>); }),
                       {"shfl.sync", "ld.global.nc.v4", "st.global.v4"},
                       {"SHFL.BFLY", "LDG.E.128.CONSTANT", "STG.E.128"}},
                      {for_elements([](auto e) { return KL_KERNEL(softmax_warp<decltype(e), 1, kWarps>); }), {"shfl.sync"}, {"SHFL.BFLY"}}},
          .run = launch<kWarps>};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<SoftmaxParams> r;
  r.op = "softmax";
  r.name = "cuda_warp_vectorized";
  r.note = "a warp per row (up to 1024 columns) holding the row in registers, read once with 16-byte vector loads, max and sum by warp shuffles: one read of x, no shared memory, no barriers";
  r.supports = [](const SoftmaxParams& p) -> Reason {
    if (p.cols <= kSoftmaxWarpMaxCols) return {};
    return "cols=" + std::to_string(p.cols) + " is over the " + std::to_string(kSoftmaxWarpMaxCols) +
           " columns a warp holds in registers (32 per lane); cuda_online takes any length";
  };
  r.configs = {config<8>(), config<4>()};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
