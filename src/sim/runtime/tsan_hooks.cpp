// The hooks GCC's -fsanitize=thread and -fsanitize-coverage=trace-pc instrumentation calls, supplied here instead of libtsan:
// kernels compiled for profiling are instrumented at compile time only and linked without the
// sanitizer's runtime. A load or store goes to the profiler (counted only while a profiled launch
// runs and only in global or shared memory); an atomic is performed, not counted (CUDA's atomics
// count themselves, in atomics.h); the rest do nothing.
#include <cstddef>
#include <cstdint>

#include "sim/runtime/profile_internal.h"

#define KL_SITE reinterpret_cast<std::uintptr_t>(__builtin_return_address(0))
using kl::sim::detail::profile_access;

extern "C" {

// -fsanitize-coverage=trace-pc: every basic block; its caller's frame tells the kernel from its callees.
void __sanitizer_cov_trace_pc() {
  kl::sim::detail::profile_block(KL_SITE, reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)));
}

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_read_range(void* p, std::size_t n) { profile_access(p, n, false, KL_SITE); }
void __tsan_write_range(void* p, std::size_t n) { profile_access(p, n, true, KL_SITE); }

#define KL_TSAN_ACCESS(N)                                                                     \
  void __tsan_read##N(void* p) { profile_access(p, N, false, KL_SITE); }                     \
  void __tsan_write##N(void* p) { profile_access(p, N, true, KL_SITE); }                     \
  void __tsan_unaligned_read##N(void* p) { profile_access(p, N, false, KL_SITE); }           \
  void __tsan_unaligned_write##N(void* p) { profile_access(p, N, true, KL_SITE); }           \
  void __tsan_volatile_read##N(void* p) { profile_access(p, N, false, KL_SITE); }            \
  void __tsan_volatile_write##N(void* p) { profile_access(p, N, true, KL_SITE); }            \
  void __tsan_unaligned_volatile_read##N(void* p) { profile_access(p, N, false, KL_SITE); }  \
  void __tsan_unaligned_volatile_write##N(void* p) { profile_access(p, N, true, KL_SITE); }
void __tsan_read1(void* p) { profile_access(p, 1, false, KL_SITE); }
void __tsan_write1(void* p) { profile_access(p, 1, true, KL_SITE); }
void __tsan_volatile_read1(void* p) { profile_access(p, 1, false, KL_SITE); }
void __tsan_volatile_write1(void* p) { profile_access(p, 1, true, KL_SITE); }
KL_TSAN_ACCESS(2)
KL_TSAN_ACCESS(4)
KL_TSAN_ACCESS(8)
KL_TSAN_ACCESS(16)
#undef KL_TSAN_ACCESS

// The atomics: memory orders are ignored (every operation is sequentially consistent).
#define KL_TSAN_ATOMIC(N, T)                                                                                       \
  T __tsan_atomic##N##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); }               \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); }                \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }      \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }      \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }      \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }      \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }        \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }      \
  T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) { return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); }    \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {                              \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                         \
  }                                                                                                                \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {                                \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                          \
  }                                                                                                                \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                                    \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                               \
    return c;                                                                                                      \
  }
KL_TSAN_ATOMIC(8, std::int8_t)
KL_TSAN_ATOMIC(16, std::int16_t)
KL_TSAN_ATOMIC(32, std::int32_t)
KL_TSAN_ATOMIC(64, std::int64_t)
#undef KL_TSAN_ATOMIC
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
