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
KL_SIM_UNCOUNTED T atomic_update(T* address, F f) {  // CAS loop for the operations without a builtin
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}

template <class T, class Bits, class F>
KL_SIM_UNCOUNTED T atomic_update_bits(T* address, F f) {  // the same on a type without builtins (__half...)
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

// Each atomic is one counted instruction at its caller's site (the profiler's atomics).
#define KL_SIM_ATOMIC KL_SIM_UNCOUNTED inline
#define KL_SIM_NOTE_ATOMIC(a) \
  ::kl::sim::detail::profile_note(::kl::sim::detail::Counted::atomic, a, sizeof *(a), KL_SIM_CALL_SITE)

#define KL_SIM_ATOMIC_INT(T)                                                                    \
  KL_SIM_ATOMIC T atomicAdd(T* a, T v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }  \
  KL_SIM_ATOMIC T atomicExch(T* a, T v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
  KL_SIM_ATOMIC T atomicMin(T* a, T v) {                                                       \
    KL_SIM_NOTE_ATOMIC(a);                                                                     \
    return kl::sim::detail::atomic_update(a, [v](T o) { return v < o ? v : o; });               \
  }                                                                                            \
  KL_SIM_ATOMIC T atomicMax(T* a, T v) {                                                       \
    KL_SIM_NOTE_ATOMIC(a);                                                                     \
    return kl::sim::detail::atomic_update(a, [v](T o) { return v > o ? v : o; });               \
  }                                                                                            \
  KL_SIM_ATOMIC T atomicAnd(T* a, T v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
  KL_SIM_ATOMIC T atomicOr(T* a, T v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }   \
  KL_SIM_ATOMIC T atomicXor(T* a, T v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
  KL_SIM_ATOMIC T atomicCAS(T* a, T compare, T v) {                                            \
    KL_SIM_NOTE_ATOMIC(a);                                                                     \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    return compare;                                                                            \
  }
KL_SIM_ATOMIC_INT(int)
KL_SIM_ATOMIC_INT(unsigned int)
KL_SIM_ATOMIC_INT(unsigned long long int)
#undef KL_SIM_ATOMIC_INT

KL_SIM_ATOMIC int atomicSub(int* a, int v) { return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
KL_SIM_ATOMIC unsigned int atomicSub(unsigned int* a, unsigned int v) {
  return KL_SIM_NOTE_ATOMIC(a), __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);
}
KL_SIM_ATOMIC long long atomicMin(long long* a, long long v) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update(a, [v](long long o) { return v < o ? v : o; });
}
KL_SIM_ATOMIC long long atomicMax(long long* a, long long v) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update(a, [v](long long o) { return v > o ? v : o; });
}
KL_SIM_ATOMIC unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  KL_SIM_NOTE_ATOMIC(a);
  __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}
// ((old >= val) ? 0 : old + 1) and (((old == 0) || (old > val)) ? val : old - 1), as CUDA defines them.
KL_SIM_ATOMIC unsigned int atomicInc(unsigned int* a, unsigned int val) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update(a, [val](unsigned o) { return o >= val ? 0u : o + 1; });
}
KL_SIM_ATOMIC unsigned int atomicDec(unsigned int* a, unsigned int val) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update(a, [val](unsigned o) { return (o == 0 || o > val) ? val : o - 1; });
}

// Floating point: a compare-and-swap loop on the bits (counted in float_atomics for the race check).
#define KL_SIM_ATOMIC_FLOAT(T, Bits)                                                                    \
  KL_SIM_ATOMIC T atomicAdd(T* a, T v) {                                                               \
    KL_SIM_NOTE_ATOMIC(a);                                                                             \
    return kl::sim::detail::atomic_update_bits<T, Bits>(a, [v](T o) { return o + v; });                 \
  }                                                                                                    \
  KL_SIM_ATOMIC T atomicExch(T* a, T v) {                                                              \
    KL_SIM_NOTE_ATOMIC(a);                                                                             \
    Bits b, old;                                                                                       \
    std::memcpy(&b, &v, sizeof b);                                                                     \
    old = __atomic_exchange_n(reinterpret_cast<Bits*>(a), b, __ATOMIC_SEQ_CST);                        \
    std::memcpy(&v, &old, sizeof v);                                                                   \
    return v;                                                                                          \
  }
KL_SIM_ATOMIC_FLOAT(float, std::uint32_t)
KL_SIM_ATOMIC_FLOAT(double, std::uint64_t)
#undef KL_SIM_ATOMIC_FLOAT
// sm_90's vector adds: one instruction, each component its own atomic update.
KL_SIM_ATOMIC float2 atomicAdd(float2* a, float2 v) {
  KL_SIM_NOTE_ATOMIC(a);
  const auto add = [](float* p, float x) {
    return kl::sim::detail::atomic_update_bits<float, std::uint32_t>(p, [x](float o) { return o + x; });
  };
  return make_float2(add(&a->x, v.x), add(&a->y, v.y));
}
KL_SIM_ATOMIC float4 atomicAdd(float4* a, float4 v) {
  KL_SIM_NOTE_ATOMIC(a);
  const auto add = [](float* p, float x) {
    return kl::sim::detail::atomic_update_bits<float, std::uint32_t>(p, [x](float o) { return o + x; });
  };
  return make_float4(add(&a->x, v.x), add(&a->y, v.y), add(&a->z, v.z), add(&a->w, v.w));
}

// The 16-bit float atomics of sm_70/sm_80 and their pairs.
KL_SIM_ATOMIC __half atomicAdd(__half* a, __half v) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update_bits<__half, unsigned short>(a, [v](__half o) { return __hadd(o, v); });
}
KL_SIM_ATOMIC __half2 atomicAdd(__half2* a, __half2 v) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update_bits<__half2, unsigned>(a, [v](__half2 o) { return __hadd2(o, v); });
}
KL_SIM_ATOMIC __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
  KL_SIM_NOTE_ATOMIC(a);
  return kl::sim::detail::atomic_update_bits<__nv_bfloat16, unsigned short>(a, [v](__nv_bfloat16 o) { return __hadd(o, v); });
}
KL_SIM_ATOMIC __nv_bfloat162 atomicAdd(__nv_bfloat162* a, __nv_bfloat162 v) {
  KL_SIM_NOTE_ATOMIC(a);
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
#undef KL_SIM_ATOMIC
#undef KL_SIM_NOTE_ATOMIC
