// CUDA's atomic functions. Blocks run on several OS threads at once, so every one of them
// is a real atomic read-modify-write (GCC __atomic builtins, or std::atomic_ref for the
// floating types); the same functions serve global and shared memory. The overload set is
// CUDA's, so a call that nvcc rejects is rejected here too.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kl::sim::detail {
// Floating-point atomics of the current launch: their order changes the rounding, which
// the race check must not call a race.
inline std::atomic<unsigned long long> float_atomics{0};

template <class T, class F>
T atomic_update(T* address, F f) {  // CAS loop for the operations without a builtin
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}

template <class T, class Bits, class F>
T atomic_update_bits(T* address, F f) {  // the same on a type without builtins (__half...)
  static_assert(sizeof(T) == sizeof(Bits));
  float_atomics.fetch_add(1, std::memory_order_relaxed);
  Bits* word = reinterpret_cast<Bits*>(address);
  Bits old = __atomic_load_n(word, __ATOMIC_RELAXED);
  for (;;) {
    T v;
    std::memcpy(static_cast<void*>(&v), &old, sizeof v);
    const T next = f(v);
    Bits next_bits;
    std::memcpy(&next_bits, static_cast<const void*>(&next), sizeof next);
    if (__atomic_compare_exchange_n(word, &old, next_bits, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return v;
  }
}
}  // namespace kl::sim::detail

#define KL_SIM_ATOMIC_INT(T)                                                                                   \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }                          \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }                        \
  inline T atomicMin(T* a, T v) { return kl::sim::detail::atomic_update(a, [v](T o) { return v < o ? v : o; }); } \
  inline T atomicMax(T* a, T v) { return kl::sim::detail::atomic_update(a, [v](T o) { return v > o ? v : o; }); } \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }                          \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }                            \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }                          \
  inline T atomicCAS(T* a, T compare, T v) {                                                                   \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                   \
    return compare;                                                                                            \
  }
KL_SIM_ATOMIC_INT(int)
KL_SIM_ATOMIC_INT(unsigned int)
KL_SIM_ATOMIC_INT(unsigned long long int)
#undef KL_SIM_ATOMIC_INT

inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline long long atomicMin(long long* a, long long v) {
  return kl::sim::detail::atomic_update(a, [v](long long o) { return v < o ? v : o; });
}
inline long long atomicMax(long long* a, long long v) {
  return kl::sim::detail::atomic_update(a, [v](long long o) { return v > o ? v : o; });
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}
// ((old >= val) ? 0 : old + 1) and (((old == 0) || (old > val)) ? val : old - 1), as CUDA defines them.
inline unsigned int atomicInc(unsigned int* a, unsigned int val) {
  return kl::sim::detail::atomic_update(a, [val](unsigned o) { return o >= val ? 0u : o + 1; });
}
inline unsigned int atomicDec(unsigned int* a, unsigned int val) {
  return kl::sim::detail::atomic_update(a, [val](unsigned o) { return (o == 0 || o > val) ? val : o - 1; });
}

#define KL_SIM_ATOMIC_FLOAT(T)                                                   \
  inline T atomicAdd(T* a, T v) {                                               \
    kl::sim::detail::float_atomics.fetch_add(1, std::memory_order_relaxed);     \
    return std::atomic_ref<T>(*a).fetch_add(v, std::memory_order_seq_cst);      \
  }                                                                             \
  inline T atomicExch(T* a, T v) { return std::atomic_ref<T>(*a).exchange(v); }
KL_SIM_ATOMIC_FLOAT(float)
KL_SIM_ATOMIC_FLOAT(double)
#undef KL_SIM_ATOMIC_FLOAT
// sm_90's vector adds: each component is one atomic, as on the GPU.
inline float2 atomicAdd(float2* a, float2 v) { return make_float2(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y)); }
inline float4 atomicAdd(float4* a, float4 v) {
  return make_float4(atomicAdd(&a->x, v.x), atomicAdd(&a->y, v.y), atomicAdd(&a->z, v.z), atomicAdd(&a->w, v.w));
}

// The 16-bit float atomics of sm_70/sm_80 and their pairs.
inline __half atomicAdd(__half* a, __half v) {
  return kl::sim::detail::atomic_update_bits<__half, unsigned short>(a, [v](__half o) { return __hadd(o, v); });
}
inline __half2 atomicAdd(__half2* a, __half2 v) {
  return kl::sim::detail::atomic_update_bits<__half2, unsigned>(a, [v](__half2 o) { return __hadd2(o, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
  return kl::sim::detail::atomic_update_bits<__nv_bfloat16, unsigned short>(a, [v](__nv_bfloat16 o) { return __hadd(o, v); });
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* a, __nv_bfloat162 v) {
  return kl::sim::detail::atomic_update_bits<__nv_bfloat162, unsigned>(a, [v](__nv_bfloat162 o) { return __hadd2(o, v); });
}

// The _block and _system scopes mean the same on one simulated device.
#define KL_SIM_ATOMIC_SCOPES(NAME)                                                            \
  template <class... A>                                                                       \
  inline auto NAME##_block(A... a) -> decltype(NAME(a...)) { return NAME(a...); }              \
  template <class... A>                                                                       \
  inline auto NAME##_system(A... a) -> decltype(NAME(a...)) { return NAME(a...); }
KL_SIM_ATOMIC_SCOPES(atomicAdd)
KL_SIM_ATOMIC_SCOPES(atomicSub)
KL_SIM_ATOMIC_SCOPES(atomicExch)
KL_SIM_ATOMIC_SCOPES(atomicMin)
KL_SIM_ATOMIC_SCOPES(atomicMax)
KL_SIM_ATOMIC_SCOPES(atomicAnd)
KL_SIM_ATOMIC_SCOPES(atomicOr)
KL_SIM_ATOMIC_SCOPES(atomicXor)
KL_SIM_ATOMIC_SCOPES(atomicCAS)
KL_SIM_ATOMIC_SCOPES(atomicInc)
KL_SIM_ATOMIC_SCOPES(atomicDec)
#undef KL_SIM_ATOMIC_SCOPES
