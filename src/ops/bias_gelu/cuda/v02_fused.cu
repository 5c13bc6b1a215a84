// bias_gelu v02: one kernel: x + bias stays in a register and goes straight through gelu, with
// 16-byte vector accesses when rows are a whole number of vectors (scalar otherwise). Saves
// the workspace's write and read (half the traffic of v01) and a launch. Configs: 256 or 128
// threads a block (the kernel is a grid-stride loop; the block size only changes its grid).
#include "ops/bias_gelu/cuda/gelu.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace bias_gelu;

// W elements per access: kVec<E> when cols is a multiple of it and x, bias, y are 16-byte
// aligned (a pack then never crosses a row, and its bias pack is aligned too), else 1.
template <class E, int W>
__global__ void bias_gelu_fused(const E* __restrict__ x, const E* __restrict__ bias, E* __restrict__ y, int64_t npack,
                                int cols) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  int64_t q = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  // The pack's column, stepped along with q: one 64-bit modulo per thread, not per pack.
  const int per_row = cols / W, step = static_cast<int>(stride % per_row);
  for (int c = static_cast<int>(q % per_row); q < npack; q += stride) {
    const Pack<E, W> xp = load_pack<W>(x + q * W);
    const Pack<E, W> bp = load_pack<W>(bias + c * W);
    Pack<E, W> yp;
    KL_UNROLL
    for (int e = 0; e < W; ++e) yp.v[e] = from_f32<E>(gelu(to_f32(xp.v[e]) + to_f32(bp.v[e])));
    store_pack<W>(y + q * W, yp);
    c += step;
    if (c >= per_row) c -= per_row;
  }
}

template <class E, int W, int kThreads> void launch(const BiasGeluParams& p, const Args& a) {
  const int cols = static_cast<int>(p.cols);
  const int64_t npack = p.n() / W;
  KL_LAUNCH((bias_gelu_fused<E, W>), grid_for(npack, kThreads), kThreads, 0, a.stream,
            static_cast<const E*>(a.in[0].data()), static_cast<const E*>(a.in[1].data()),
            static_cast<E*>(a.out[0].data()), npack, cols);
}

template <class E, int kThreads> void run(const BiasGeluParams& p, const Args& a) {
  const bool vec = p.cols % kVec<E> == 0 && aligned16(a.in[0].data()) && aligned16(a.in[1].data()) &&
                   aligned16(a.out[0].data());
  if (vec) launch<E, kVec<E>, kThreads>(p, a);
  else launch<E, 1, kThreads>(p, a);
}

template <int kThreads> void run_all(const BiasGeluParams& p, const Args& a) {
  rowwise::with_element(p.x, [&](auto e) { run<decltype(e), kThreads>(p, a); });
}

// Both configs launch the same kernels: the vector one (16-byte loads of x and bias, 16-byte
// stores of y) and the scalar one.
template <int kThreads> RungConfig<BiasGeluParams> config() {
  return {.name = std::to_string(kThreads) + "_threads",
          .threads = kThreads,
          .kernels = {{for_elements([](auto e) { using E = decltype(e); return KL_KERNEL(bias_gelu_fused<E, kVec<E>>); }),
                       {"ld.global.nc.v4", "st.global.v4"},
                       {"LDG.E.128.CONSTANT", "STG.E.128"}},
                      {for_elements([](auto e) { return KL_KERNEL(bias_gelu_fused<decltype(e), 1>); }), {}, {}}},
          .run = run_all<kThreads>};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<BiasGeluParams> r{.op = "bias_gelu",
                         .name = "cuda_fused",
                         .note = "one kernel: x + bias stays in a register on its way through gelu, 16-byte vector loads and stores where rows allow: half the traffic, one launch",
                         .configs = {config<256>(), config<128>()}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
