// kl::ptx, Hopper part (included by cuda/ptx.h): mbarrier phases, TMA bulk tensor copies, the
// tensor map they read, wgmma and the warpgroup's controls. One wrapper per PTX instruction, as in
// ptx.h; the simulator's twins are src/sim/hopper.h. Every wrapper is a template so that a kernel
// compiled for an older arch that calls one fails to compile with the reason; kernels that use them
// put their body under `#if KL_PTX_SM90A` (true for sm_90a and in the simulator).
#pragma once

#if defined(KL_PTX_TWIN) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_PTX_SM90A 1
#else
#define KL_PTX_SM90A 0
#endif

#if defined(KL_PTX_ASM)
#if __CUDA_ARCH__ >= 900
#define KL_PTX_SM90(...) __VA_ARGS__
#else
#define KL_PTX_SM90(...) static_assert(detail::kDependentFalse<Guard>, "this instruction needs sm_90");
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_PTX_SM90A_ONLY(...) __VA_ARGS__
#else
#define KL_PTX_SM90A_ONLY(...) static_assert(detail::kDependentFalse<Guard>, "this instruction needs sm_90a");
#endif
#else
#define KL_PTX_SM90(...)
#define KL_PTX_SM90A_ONLY(...)
#endif

#include <cuda.h>

namespace kl::ptx {

// ---- mbarrier (a 64-bit barrier object in shared memory) --------------------------------------

// mbarrier.init.shared::cta.b64: `count` arrivals complete each phase; phase 0 starts.
template <class Guard = void>
KL_PTX_FN void mbarrier_init(uint64_t* bar, unsigned count KL_PTX_SITE) {
  KL_PTX_SM90(asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(detail::smem_address(bar)), "r"(count) : "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::mbar_init(bar, count, kl_site);
#endif
}
// mbarrier.arrive.shared::cta.b64: one arrival; returns the state token.
template <class Guard = void>
KL_PTX_FN uint64_t mbarrier_arrive(uint64_t* bar KL_PTX_SITE) {
  uint64_t token = 0;
  KL_PTX_SM90(asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n" : "=l"(token) : "r"(detail::smem_address(bar)) : "memory");)
#if defined(KL_PTX_TWIN)
  token = kl::sim::hopper::mbar_arrive(bar, 0, "mbarrier.arrive", kl_site);
#endif
  return token;
}
// mbarrier.arrive.expect_tx.shared::cta.b64: expects `bytes` more transaction bytes this phase, then arrives.
template <class Guard = void>
KL_PTX_FN uint64_t mbarrier_arrive_expect_tx(uint64_t* bar, unsigned bytes KL_PTX_SITE) {
  uint64_t token = 0;
  KL_PTX_SM90(asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
                           : "=l"(token) : "r"(detail::smem_address(bar)), "r"(bytes) : "memory");)
#if defined(KL_PTX_TWIN)
  token = kl::sim::hopper::mbar_arrive(bar, bytes, "mbarrier.arrive.expect_tx", kl_site);
#endif
  return token;
}
// mbarrier.try_wait.parity.shared::cta.b64: true once the phase of parity `parity` has completed
// (the GPU may give up first and return false: call it in a loop).
template <class Guard = void>
KL_PTX_FN bool mbarrier_try_wait_parity(uint64_t* bar, unsigned parity KL_PTX_SITE) {
  uint32_t done = 0;
  KL_PTX_SM90(asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                           : "=r"(done) : "r"(detail::smem_address(bar)), "r"(parity) : "memory");)
#if defined(KL_PTX_TWIN)
  done = kl::sim::hopper::mbar_try_wait(bar, parity, kl_site);
#endif
  return done != 0;
}
// Waits for the phase of parity `parity`: the loop every consumer and producer writes.
template <class Guard = void>
KL_PTX_FN void mbarrier_wait_parity(uint64_t* bar, unsigned parity KL_PTX_SITE) {
#if defined(KL_PTX_TWIN)
  while (!mbarrier_try_wait_parity(bar, parity, kl_site)) {
  }
#else
  while (!mbarrier_try_wait_parity<Guard>(bar, parity)) {
  }
#endif
}

// ---- fences, elect, warpgroup registers, named barriers ----------------------------------------

// fence.proxy.async.shared::cta: orders this thread's generic-proxy shared-memory accesses before
// later async-proxy ones (a TMA store of what it wrote, a TMA load into what it read).
template <class Guard = void>
KL_PTX_FN void fence_proxy_async() {
  KL_PTX_SM90(asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");)
}
// fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the async proxy (TMA).
template <class Guard = void>
KL_PTX_FN void fence_mbarrier_init() {
  KL_PTX_SM90(asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");)
}
// elect.sync: true in exactly one lane of `mask` (the lowest), warp-wide.
template <class Guard = void>
KL_PTX_FN bool elect_sync(unsigned mask = 0xffffffffu KL_PTX_SITE) {
  uint32_t elected = 0;
  KL_PTX_SM90(asm volatile("{\n.reg .pred p;\nelect.sync _|p, %1;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(elected) : "r"(mask));)
#if defined(KL_PTX_TWIN)
  const auto lanes = kl::sim::warp_exchange(mask, 0, "elect.sync", kl_site);
  (void)lanes;
  elected = kl::sim::lane_id() == unsigned(__builtin_ctz(mask));
#endif
  return elected != 0;
}
// setmaxnreg.inc.sync.aligned.u32 N: the warpgroup asks for N registers per thread (24..256, multiple of 8).
template <unsigned N, class Guard = void>
KL_PTX_FN void setmaxnreg_inc(KL_PTX_SITE_ONLY) {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24 to 256, a multiple of 8");
  KL_PTX_SM90A_ONLY(asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::setmaxnreg(N, "setmaxnreg.inc", kl_site);
#endif
}
// setmaxnreg.dec.sync.aligned.u32 N: the warpgroup gives registers back (a producer warpgroup).
template <unsigned N, class Guard = void>
KL_PTX_FN void setmaxnreg_dec(KL_PTX_SITE_ONLY) {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24 to 256, a multiple of 8");
  KL_PTX_SM90A_ONLY(asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::setmaxnreg(N, "setmaxnreg.dec", kl_site);
#endif
}
// bar.sync id, count: waits at named barrier `id` (1-15; 0 is __syncthreads') until `count`
// threads (a multiple of 32) have arrived; bar.arrive arrives without waiting.
KL_PTX_FN void bar_sync(unsigned id, unsigned count KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#elif defined(KL_PTX_TWIN)
  kl::sim::detail::named_barrier(id, count, true, "bar.sync", kl_site);
#endif
}
KL_PTX_FN void bar_arrive(unsigned id, unsigned count KL_PTX_SITE) {
#if defined(KL_PTX_ASM)
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#elif defined(KL_PTX_TWIN)
  kl::sim::detail::named_barrier(id, count, false, "bar.arrive", kl_site);
#endif
}

// ---- TMA: 2-D bulk tensor copies ------------------------------------------------------------

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes: the box of `map`
// at (c0 inner, c1 outer) into shared memory; its bytes complete transactions on `bar`.
template <class Guard = void>
KL_PTX_FN void tma_load_2d(void* smem_dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar KL_PTX_SITE) {
  KL_PTX_SM90(asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          detail::smem_address(smem_dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(detail::smem_address(bar))
      : "memory");)
#if defined(KL_PTX_TWIN)
  const int coords[2] = {c0, c1};
  kl::sim::hopper::tma_load(smem_dst, map, 2, coords, bar, "cp.async.bulk.tensor.2d (load)", kl_site);
#endif
}
// The 3-D form: the box at (c0 inner, c1, c2 outer), e.g. (column, head, token) of a [tokens, heads, d] tensor.
template <class Guard = void>
KL_PTX_FN void tma_load_3d(void* smem_dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar KL_PTX_SITE) {
  KL_PTX_SM90(asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          detail::smem_address(smem_dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(detail::smem_address(bar))
      : "memory");)
#if defined(KL_PTX_TWIN)
  const int coords[3] = {c0, c1, c2};
  kl::sim::hopper::tma_load(smem_dst, map, 3, coords, bar, "cp.async.bulk.tensor.3d (load)", kl_site);
#endif
}
// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group: the box in shared memory to (c0, c1) of `map`.
template <class Guard = void>
KL_PTX_FN void tma_store_2d(const CUtensorMap* map, int c0, int c1, const void* smem_src KL_PTX_SITE) {
  KL_PTX_SM90(asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map), "r"(c0),
                           "r"(c1), "r"(detail::smem_address(smem_src))
                           : "memory");)
#if defined(KL_PTX_TWIN)
  const int coords[2] = {c0, c1};
  kl::sim::hopper::tma_store(map, 2, coords, smem_src, "cp.async.bulk.tensor.2d (store)", kl_site);
#endif
}
// cp.async.bulk.commit_group: closes this thread's bulk stores since the last commit into a group.
template <class Guard = void>
KL_PTX_FN void bulk_commit() {
  KL_PTX_SM90(asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::bulk_commit();
#endif
}
// cp.async.bulk.wait_group.read N: waits until at most N of this thread's bulk groups still read shared memory.
template <int N, class Guard = void>
KL_PTX_FN void bulk_wait_read() {
  KL_PTX_SM90(asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::bulk_wait(N);
#endif
}

// ---- wgmma (sm_90a): one warpgroup (4 warps, 128 threads) multiplies from shared memory -------

// The 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading- and stride-dimension byte offsets (each >> 4, 14 bits), swizzle mode in bits 62-63
// (0 none, 1 128-byte, 2 64-byte, 3 32-byte). K-major operands: with a swizzle, SBO is the
// distance between 8-row groups (8 x the swizzle width when packed) and LBO is unused.
enum class Swizzle : uint64_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };
KL_PTX_FN uint64_t smem_descriptor(const void* smem, uint32_t lbo_bytes, uint32_t sbo_bytes, Swizzle swizzle) {
#if defined(KL_PTX_ASM)
  const uint64_t address = detail::smem_address(smem);
#else
  const uint64_t address = __cvta_generic_to_shared(smem);
#endif
  return (address & 0x3FFFF) >> 4 | uint64_t(lbo_bytes >> 4 & 0x3FFF) << 16 | uint64_t(sbo_bytes >> 4 & 0x3FFF) << 32 |
         static_cast<uint64_t>(swizzle) << 62;
}

// wgmma.fence.sync.aligned: before the first wgmma, and between the warpgroup's own register
// accesses (accumulators, A fragments) and a wgmma that uses them.
template <class Guard = void>
KL_PTX_FN void wgmma_fence(KL_PTX_SITE_ONLY) {
  KL_PTX_SM90A_ONLY(asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::wgmma_fence(kl_site);
#endif
}
// wgmma.commit_group.sync.aligned: closes the warpgroup's wgmmas since the last commit into a group.
template <class Guard = void>
KL_PTX_FN void wgmma_commit(KL_PTX_SITE_ONLY) {
  KL_PTX_SM90A_ONLY(asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::wgmma_commit(kl_site);
#endif
}
// wgmma.wait_group.sync.aligned N: waits until at most N groups are pending; their results are then in the accumulators.
template <int N, class Guard = void>
KL_PTX_FN void wgmma_wait(KL_PTX_SITE_ONLY) {
  KL_PTX_SM90A_ONLY(asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");)
#if defined(KL_PTX_TWIN)
  kl::sim::hopper::wgmma_wait(N, kl_site);
#endif
}

// Pins accumulator registers to this point of the program (an empty asm that reads and writes
// each): the compiler would otherwise be free to move arithmetic on them across a wgmma.wait_group,
// whose asm names no register, into the window where the wgmma may still write them (CUTLASS's
// warpgroup_fence_operand). Place after a wait, on the accumulators the code then touches.
template <int N> KL_PTX_FN void fence_operands(float (&r)[N]) {
#if defined(KL_PTX_ASM)
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
#else
  (void)r;
#endif
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}: D (64 x N, N/2 f32 per thread) += A B
// (D = A B when scale_d is 0). _ss: A and B from shared memory through descriptors; _rs: A from
// registers (this thread's mma.sync-style fragment of its warp's 16 rows), B through a descriptor;
// _rs_mn: B MN-major (imm-trans-b 1: B's N elements contiguous, as a row-major V tile [keys][dv]
// lies for O += P V). MN-major with a swizzle: rows of the swizzle width along N for one k, 8 such
// rows (8 k) per atom, atoms SBO apart along K and LBO apart along N.
// Operand lists: the N/2 accumulators are %0.. in braces, then A, B and scale-d.
#define KL_WGMMA_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KL_WGMMA_D32_OUT "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define KL_WGMMA_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define KL_WGMMA_D64_OUT "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#if defined(KL_PTX_ASM) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_WGMMA_SS(INSTR, N, DECODE, D, A, B, SCALE, ...)                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n" INSTR " " D ", " A ", " B ", p, 1, 1, 0, 0;\n}\n" \
               : __VA_ARGS__                                                                                \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d)                                                    \
               : "memory");
#define KL_WGMMA_RS(INSTR, N, DECODE, D, A, B, SCALE, ...)                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n" INSTR " " D ", " A ", " B ", p, 1, 1, 0;\n}\n"    \
               : __VA_ARGS__                                                                                \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d)                    \
               : "memory");
#define KL_WGMMA_RS_MN(INSTR, N, DECODE, D, A, B, SCALE, ...)                                             \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n" INSTR " " D ", " A ", " B ", p, 1, 1, 1;\n}\n"    \
               : __VA_ARGS__                                                                                \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d)                    \
               : "memory");
#elif defined(KL_PTX_ASM)
#define KL_WGMMA_SS(...) static_assert(detail::kDependentFalse<Guard>, "wgmma needs sm_90a");
#define KL_WGMMA_RS(...) static_assert(detail::kDependentFalse<Guard>, "wgmma needs sm_90a");
#define KL_WGMMA_RS_MN(...) static_assert(detail::kDependentFalse<Guard>, "wgmma needs sm_90a");
#elif defined(KL_PTX_TWIN)
#define KL_WGMMA_SS(INSTR, N, DECODE, ...) kl::sim::hopper::wgmma<N>(d, {desc_a, desc_b, {}, scale_d, false, false}, DECODE, INSTR, kl_site);
#define KL_WGMMA_RS(INSTR, N, DECODE, ...) \
  kl::sim::hopper::wgmma<N>(d, {0, desc_b, {a[0], a[1], a[2], a[3]}, scale_d, true, false}, DECODE, INSTR, kl_site);
#define KL_WGMMA_RS_MN(INSTR, N, DECODE, ...) \
  kl::sim::hopper::wgmma<N>(d, {0, desc_b, {a[0], a[1], a[2], a[3]}, scale_d, true, true}, DECODE, INSTR, kl_site);
#else
#define KL_WGMMA_SS(...)
#define KL_WGMMA_RS(...)
#define KL_WGMMA_RS_MN(...)
#endif
#if defined(KL_PTX_TWIN)
#define KL_WGMMA_DECODE(TYPE) detail::TYPE##_value
#else
#define KL_WGMMA_DECODE(TYPE) 0
#endif
#define KL_PTX_WGMMA(N, TYPE, D, D_OUT, A_SS, B_SS, SCALE_SS, A_RS, B_RS, SCALE_RS)                                 \
  template <class Guard = void>                                                                                   \
  KL_PTX_FN void wgmma_m64n##N##k16_f32_##TYPE##_ss(float(&d)[N / 2], uint64_t desc_a, uint64_t desc_b,             \
                                                    int scale_d KL_PTX_SITE) {                                    \
    KL_WGMMA_SS("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE, N, KL_WGMMA_DECODE(TYPE), D,     \
                A_SS, B_SS, SCALE_SS, D_OUT)                                                                      \
  }                                                                                                               \
  template <class Guard = void>                                                                                   \
  KL_PTX_FN void wgmma_m64n##N##k16_f32_##TYPE##_rs(float(&d)[N / 2], const uint32_t(&a)[4], uint64_t desc_b,       \
                                                    int scale_d KL_PTX_SITE) {                                    \
    KL_WGMMA_RS("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE, N, KL_WGMMA_DECODE(TYPE), D,     \
                A_RS, B_RS, SCALE_RS, D_OUT)                                                                      \
  }                                                                                                               \
  template <class Guard = void>                                                                                   \
  KL_PTX_FN void wgmma_m64n##N##k16_f32_##TYPE##_rs_mn(float(&d)[N / 2], const uint32_t(&a)[4], uint64_t desc_b,    \
                                                       int scale_d KL_PTX_SITE) {                                 \
    KL_WGMMA_RS_MN("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE, N, KL_WGMMA_DECODE(TYPE), D,  \
                   A_RS, B_RS, SCALE_RS, D_OUT)                                                                   \
  }
KL_PTX_WGMMA(64, bf16, KL_WGMMA_D32, KL_WGMMA_D32_OUT, "%32", "%33", "%34", "{%32, %33, %34, %35}", "%36", "%37")
KL_PTX_WGMMA(64, f16, KL_WGMMA_D32, KL_WGMMA_D32_OUT, "%32", "%33", "%34", "{%32, %33, %34, %35}", "%36", "%37")
KL_PTX_WGMMA(128, bf16, KL_WGMMA_D64, KL_WGMMA_D64_OUT, "%64", "%65", "%66", "{%64, %65, %66, %67}", "%68", "%69")
KL_PTX_WGMMA(128, f16, KL_WGMMA_D64, KL_WGMMA_D64_OUT, "%64", "%65", "%66", "{%64, %65, %66, %67}", "%68", "%69")
#undef KL_PTX_WGMMA
#undef KL_WGMMA_DECODE
#undef KL_WGMMA_SS
#undef KL_WGMMA_RS
#undef KL_WGMMA_RS_MN
#undef KL_WGMMA_D32
#undef KL_WGMMA_D32_OUT
#undef KL_WGMMA_D64
#undef KL_WGMMA_D64_OUT

// ---- host: the tensor map a TMA instruction reads ----------------------------------------------
// A 2-D row-major tensor of `rows` x `cols` elements (`row_bytes` apart) read in boxes of
// box_rows x box_cols, swizzled into shared memory, zeros outside: cuTensorMapEncodeTiled, through
// the runtime's driver entry point (no -lcuda) on a GPU and the simulator's twin without one.
inline CUresult encode_tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, const void* base, uint64_t cols, uint64_t rows,
                                     uint64_t row_bytes, uint32_t box_cols, uint32_t box_rows, CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_cols, box_rows}, element_strides[2] = {1, 1};
#if defined(KERNELAB_SIM)
  return kl_sim_cuTensorMapEncodeTiled(map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
#else
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                              const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<Encode>(fn);
  }();
  if (!encode) return CUDA_ERROR_NOT_FOUND;
  return encode(map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
#endif
}

// A 3-D tensor (dims[0] innermost, contiguous; strides in bytes of dims 1 and 2) in boxes of box[0..2].
inline CUresult encode_tensor_map_3d(CUtensorMap* map, CUtensorMapDataType type, const void* base, const uint64_t (&dims)[3],
                                     const uint64_t (&strides)[2], const uint32_t (&box)[3], CUtensorMapSwizzle swizzle) {
  const cuuint64_t d[3] = {dims[0], dims[1], dims[2]}, st[2] = {strides[0], strides[1]};
  const cuuint32_t b[3] = {box[0], box[1], box[2]}, element_strides[3] = {1, 1, 1};
#if defined(KERNELAB_SIM)
  return kl_sim_cuTensorMapEncodeTiled(map, type, 3, const_cast<void*>(base), d, st, b, element_strides,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
#else
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return CUDA_ERROR_NOT_FOUND;
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                              const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  return reinterpret_cast<Encode>(fn)(map, type, 3, const_cast<void*>(base), d, st, b, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
#endif
}

}  // namespace kl::ptx

#undef KL_PTX_SM90
#undef KL_PTX_SM90A_ONLY
