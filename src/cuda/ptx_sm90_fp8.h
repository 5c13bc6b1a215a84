// kl::ptx, 8-bit wgmma (sm_90a): wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2} with A and
// B from shared memory, one wrapper per instruction as in ptx_sm90.h; the simulator's twin is
// src/sim/hopper_fp8.h. Apart from ptx_sm90.h so that only the kernels that multiply 8-bit
// operands include it. Kernels put their body under `#if KL_PTX_SM90A`, as for ptx_sm90.h.
//
// 8-bit wgmma takes K-major A and B only (no transpose immediates). A row of 32 one-byte
// elements spans the same 32 bytes as 16 bf16, so the descriptors (kl::ptx::smem_descriptor) are
// those of the 16-bit wgmma: no swizzle, 8 x 16-byte core matrices (16 k each) SBO apart along M/N
// and LBO apart along K; swizzled, rows of the swizzle width (128 k at 128 bytes), 8-row atoms SBO
// apart; k32 steps move the start 32 bytes. D (64 x N, N/2 f32 per thread) is laid out as the
// 16-bit wgmma's: thread (warp w, lane 4g+t) holds d[i] at row 16w + g + 8((i%4)/2), column
// 8(i/4) + 2t + i%2. D += A B, or D = A B when scale_d is 0.
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
#define KL_WGMMA8_D32_OUT "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define KL_WGMMA8_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define KL_WGMMA8_D64_OUT "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#if defined(KL_PTX_ASM) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_WGMMA8(INSTR, N, TYPE, D, A, B, SCALE, ...)                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n" INSTR " " D ", " A ", " B ", p, 1, 1;\n}\n" \
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
#define KL_PTX_WGMMA8(N, TYPE, D, D_OUT, A, B, SCALE)                                                              \
  template <class Guard = void>                                                                                   \
  __device__ __forceinline__ void wgmma_m64n##N##k32_f32_##TYPE##_ss(float(&d)[N / 2], uint64_t desc_a,            \
                                                                    uint64_t desc_b, int scale_d KL_WGMMA8_SITE) { \
    KL_WGMMA8("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." #TYPE "." #TYPE, N, TYPE, D, A, B, SCALE, D_OUT)    \
  }
KL_PTX_WGMMA8(64, e4m3, KL_WGMMA8_D32, KL_WGMMA8_D32_OUT, "%32", "%33", "%34")
KL_PTX_WGMMA8(64, e5m2, KL_WGMMA8_D32, KL_WGMMA8_D32_OUT, "%32", "%33", "%34")
KL_PTX_WGMMA8(128, e4m3, KL_WGMMA8_D64, KL_WGMMA8_D64_OUT, "%64", "%65", "%66")
KL_PTX_WGMMA8(128, e5m2, KL_WGMMA8_D64, KL_WGMMA8_D64_OUT, "%64", "%65", "%66")
#undef KL_PTX_WGMMA8
#undef KL_WGMMA8
#undef KL_WGMMA8_D32
#undef KL_WGMMA8_D32_OUT
#undef KL_WGMMA8_D64
#undef KL_WGMMA8_D64_OUT

}  // namespace kl::ptx

#undef KL_WGMMA8_SITE
