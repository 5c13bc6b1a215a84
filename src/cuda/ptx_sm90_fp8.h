// kl::ptx, 8-bit wgmma (sm_90a): wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2} and
// .s32.s8.s8 with A and B from shared memory, one wrapper per instruction as in ptx_sm90.h; the
// simulator's twin is src/sim/hopper_fp8.h. Apart from ptx_sm90.h so that only the kernels that
// multiply 8-bit operands include it. Kernels put their body under `#if KL_PTX_SM90A`, as for ptx_sm90.h.
//
// 8-bit wgmma takes K-major A and B only (no transpose immediates). A row of 32 one-byte
// elements spans the same 32 bytes as 16 bf16, so the descriptors (kl::ptx::smem_descriptor) are
// those of the 16-bit wgmma: no swizzle, 8 x 16-byte core matrices (16 k each) SBO apart along M/N
// and LBO apart along K; swizzled, rows of the swizzle width (128 k at 128 bytes), 8-row atoms SBO
// apart; k32 steps move the start 32 bytes. D (64 x N, N/2 f32 or s32 per thread) is laid out as the
// 16-bit wgmma's: thread (warp w, lane 4g+t) holds d[i] at row 16w + g + 8((i%4)/2), column
// 8(i/4) + 2t + i%2. D += A B, or D = A B when scale_d is 0. The s8 form sums exactly in int32
// (wrapping; no .satfinite) and takes no scale-a/b immediates.
#pragma once
#include "cuda/ptx.h"
#if defined(KL_PTX_TWIN)
#include "sim/hopper_fp8.h"
#define KL_WGMMA8_SITE , const kl::sim::Site& kl_site = kl::sim::Site::current()
#else
#define KL_WGMMA8_SITE
#endif

namespace kl::ptx {

// Operand lists: the N/2 accumulators are %0.. in braces, then A's and B's descriptors and scale-d.
#define KL_WGMMA8_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KL_WGMMA8_D32_OUT(C) C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31])
#define KL_WGMMA8_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define KL_WGMMA8_D64_OUT(C) C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]), C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])
#if defined(KL_PTX_ASM) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_WGMMA8(INSTR, N, TYPE, D, A, B, SCALE, TAIL, ...)                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n" INSTR " " D ", " A ", " B ", p" TAIL ";\n}\n" \
               : __VA_ARGS__                                                                            \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d)                                                \
               : "memory");
#elif defined(KL_PTX_ASM)
#define KL_WGMMA8(...) static_assert(detail::kDependentFalse<Guard>, "wgmma needs sm_90a");
#elif defined(KL_PTX_TWIN)
#define KL_WGMMA8(INSTR, N, TYPE, ...) kl::sim::hopper::wgmma_8bit<N>(d, desc_a, desc_b, scale_d, detail::TYPE##_value, INSTR, kl_site);
#else
#define KL_WGMMA8(...)
#endif
#define KL_PTX_WGMMA8(N, TYPE, ACC, DTYPE, D, D_OUT, A, B, SCALE, TAIL)                                          \
  template <class Guard = void>                                                                                   \
  __device__ __forceinline__ void wgmma_m64n##N##k32_##DTYPE##_##TYPE##_ss(ACC(&d)[N / 2], uint64_t desc_a,       \
                                                                          uint64_t desc_b, int scale_d KL_WGMMA8_SITE) { \
    KL_WGMMA8("wgmma.mma_async.sync.aligned.m64n" #N "k32." #DTYPE "." #TYPE "." #TYPE, N, TYPE, D, A, B, SCALE, TAIL, D_OUT) \
  }
KL_PTX_WGMMA8(64, e4m3, float, f32, KL_WGMMA8_D32, KL_WGMMA8_D32_OUT("+f"), "%32", "%33", "%34", ", 1, 1")
KL_PTX_WGMMA8(64, e5m2, float, f32, KL_WGMMA8_D32, KL_WGMMA8_D32_OUT("+f"), "%32", "%33", "%34", ", 1, 1")
KL_PTX_WGMMA8(128, e4m3, float, f32, KL_WGMMA8_D64, KL_WGMMA8_D64_OUT("+f"), "%64", "%65", "%66", ", 1, 1")
KL_PTX_WGMMA8(128, e5m2, float, f32, KL_WGMMA8_D64, KL_WGMMA8_D64_OUT("+f"), "%64", "%65", "%66", ", 1, 1")
KL_PTX_WGMMA8(64, s8, int, s32, KL_WGMMA8_D32, KL_WGMMA8_D32_OUT("+r"), "%32", "%33", "%34", "")
KL_PTX_WGMMA8(128, s8, int, s32, KL_WGMMA8_D64, KL_WGMMA8_D64_OUT("+r"), "%64", "%65", "%66", "")
#undef KL_PTX_WGMMA8
#undef KL_WGMMA8
#undef KL_WGMMA8_D32
#undef KL_WGMMA8_D32_OUT
#undef KL_WGMMA8_D64
#undef KL_WGMMA8_D64_OUT

// fence_operands (ptx_sm90.h) for the s8 form's int32 accumulators.
template <int N> __device__ __forceinline__ void fence_operands(int (&r)[N]) {
#if defined(KL_PTX_ASM)
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
#else
  (void)r;
#endif
}

}  // namespace kl::ptx

#undef KL_WGMMA8_SITE
