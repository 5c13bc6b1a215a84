// Barriers and warp collectives: the only places a simulated thread hands over to the next.
//
// A block's threads run one after another, each until its next barrier or collective (a
// valid CUDA schedule for race-free code). A warp collective completes once every lane its
// mask names has deposited a value; the scheduler then resumes them with all 32 deposits.
// Every call records its call site (kl::sim::Site) for the error messages.
#pragma once
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>

#include "launch.h"

namespace kl::sim::detail {

using Site = kl::sim::Site;

enum class BarrierOp : unsigned char { sync, count, all, any };
enum class WarpOp : unsigned char {
  syncwarp, shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all, match_any, match_all, reduce, exchange
};
inline constexpr std::size_t kSlotBytes = 128;  // the most one lane can deposit in one collective

// Switch points, implemented by the scheduler. block_barrier returns the count/and/or result.
int block_barrier(BarrierOp op, int pred, const Site& where);
// Deposits this lane's `bytes` bytes; returns the 32 lanes' deposits (stride kSlotBytes),
// valid until this lane's next collective, and in `took_part` the lanes that did: those of
// `mask` less the exited ones (CUDA: "all non-exited threads named in mask"), except for the
// PTX twins' exchange, whose .aligned instructions need every lane. Other lanes hold stale bytes.
const unsigned char* warp_collective(WarpOp op, unsigned mask, const void* mine, std::size_t bytes, const char* what,
                                     const Site& where, unsigned* took_part = nullptr);
unsigned active_mask(const Site& where);
void yield_thread();                                  // __nanosleep: let the other threads run
// Hopper's block-level synchronisation (src/sim/hopper.h builds on these):
// bar.sync / bar.arrive on named barrier `id` (0-15) that completes when `count` threads
// (a multiple of 32) have arrived; `wait` false for bar.arrive.
void named_barrier(unsigned id, unsigned count, bool wait, const char* what, const Site& where);
// A collective of the `size` consecutive threads (a warpgroup: 128, aligned) that the caller
// belongs to: each deposits `bytes` (at most kSlotBytes) and gets back all `size` deposits
// (stride kSlotBytes) once every one of them has made the same call.
const unsigned char* group_collective(unsigned size, const void* mine, std::size_t bytes, const char* what,
                                      const Site& where);
// Blocks the caller until done(bar, parity) holds, re-asked whenever other threads have moved;
// when nothing else can move, the block is deadlocked and describe(bar) says what the barrier lacks.
struct MbarrierWait {
  bool (*done)(const void* bar, unsigned parity);
  std::string (*describe)(const void* bar);
};
void mbarrier_wait(const void* bar, unsigned parity, const MbarrierWait& how, const char* what, const Site& where);
// Asynchronous bulk copies into shared memory (TMA loads) that complete transactions on the
// mbarrier `bar`: queued, landed in issue order when a thread waits on that barrier.
void bulk_async(const void* bar, std::function<void()> land);
void land_bulk(const void* bar);
// Where p lies in the block's shared memory, for messages ("dynamic shared memory + 0x40").
std::string shared_name(const void* p);
// The shared-state-space address of p as the GPU would number it: dynamic shared memory starts
// at 1024 (after the 1 KB the sm_90 reserves); anything else keeps its host address. Swizzles XOR
// its bits, so a dynamic tile aligned to 1024 bytes swizzles as on the GPU.
std::uintptr_t shared_address(const void* p);
// The block's dynamic shared memory, addressed as shared_address numbers it (from 1024).
struct SharedWindow {
  unsigned char* host = nullptr;
  std::size_t bytes = 0;
  // The host pointer of `n` bytes at shared address `a`; null if they are not all inside.
  void* at(std::uintptr_t a, std::size_t n) const { return a >= 1024 && a - 1024 + n <= bytes ? host + (a - 1024) : nullptr; }
};
SharedWindow dynamic_shared_window();  // empty outside a kernel
// The host pointer of `bytes` at a shared address in the block's dynamic shared memory; null if outside it.
inline void* dynamic_shared_at(std::uintptr_t address, std::size_t bytes) { return dynamic_shared_window().at(address, bytes); }
[[noreturn]] void fault(const char* what, const Site& where);  // fails the launch naming this thread

inline unsigned thread_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned lane() { return thread_rank() & 31u; }

// `mask` becomes the lanes that took part: an exited lane votes nothing and shuffles nothing.
template <class T>
const unsigned char* deposit(WarpOp op, unsigned& mask, const T& v, const char* what, const Site& where) {
  // Bitwise copies, as registers are (__half2 has a user-written assignment, yet is plain bits).
  static_assert(std::is_trivially_destructible_v<T>, "a warp collective exchanges plain values");
  static_assert(sizeof(T) <= kSlotBytes, "a warp collective exchanges at most kSlotBytes per lane");
  return warp_collective(op, mask, static_cast<const void*>(&v), sizeof(T), what, where, &mask);
}

template <class T>
T slot(const unsigned char* slots, unsigned lane) {
  T v;
  std::memcpy(static_cast<void*>(&v), slots + lane * kSlotBytes, sizeof(T));
  return v;
}

// Warns once per kernel and site that a lane read a shuffle source that took no part.
void undefined_shuffle_source(const char* what, int src, const Site& where);

// Lane `src` of a shuffle: its deposit if it took part; the caller's own value when `src` is
// outside the segment (as PTX specifies) or took no part (PTX: undefined; warned, and the own
// value keeps the run deterministic).
template <class T>
T shfl_result(const unsigned char* slots, unsigned mask, int src, bool in_range, const T& own, const char* what,
              const Site& where) {
  if (!in_range || src < 0 || src >= 32) return own;
  if (mask >> src & 1u) return slot<T>(slots, unsigned(src));
  undefined_shuffle_source(what, src, where);
  return own;
}

inline void check_width(int width, const char* what, const Site& where) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) fault(what, where);
}

}  // namespace kl::sim::detail

namespace kl::sim {

// The warp-wide exchange that the PTX twins (ldmatrix, mma.sync, movmatrix...) build on:
// every lane named in `mask` calls it with its value (up to 128 bytes of plain data);
// each gets back all 32 lanes' values once the last of them has arrived (lanes outside the
// mask: value-initialised). It is a warp collective like __shfl_sync, with its checks: a
// lane in the mask that exits or waits elsewhere is reported. Example, an mma twin:
//   auto a = kl::sim::warp_exchange(0xffffffffu, a_frag, "mma.sync A");   // a[l]: lane l's regs
template <class T>
std::array<T, 32> warp_exchange(unsigned mask, const T& mine, const char* what = "warp_exchange",
                                const kl::sim::Site& where = kl::sim::Site::current()) {
  const unsigned char* slots = detail::deposit(detail::WarpOp::exchange, mask, mine, what, where);
  std::array<T, 32> all;  // each written once: zeroing it all first was 14% of the mma.sync twin's samples
  for (unsigned l = 0; l < 32; ++l) all[l] = mask >> l & 1u ? detail::slot<T>(slots, l) : T{};
  return all;
}

inline unsigned lane_id() { return detail::lane(); }
inline unsigned warp_id() { return detail::thread_rank() / 32u; }

}  // namespace kl::sim

// ---- CUDA's block and warp synchronisation -------------------------------------------------

inline void __syncthreads(const kl::sim::Site& w = kl::sim::Site::current()) {
  kl::sim::detail::block_barrier(kl::sim::detail::BarrierOp::sync, 0, w);
}
inline int __syncthreads_count(int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  return kl::sim::detail::block_barrier(kl::sim::detail::BarrierOp::count, pred != 0, w);
}
inline int __syncthreads_and(int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  return kl::sim::detail::block_barrier(kl::sim::detail::BarrierOp::all, pred != 0, w);
}
inline int __syncthreads_or(int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  return kl::sim::detail::block_barrier(kl::sim::detail::BarrierOp::any, pred != 0, w);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const kl::sim::Site& w = kl::sim::Site::current()) {
  kl::sim::detail::warp_collective(kl::sim::detail::WarpOp::syncwarp, mask, nullptr, 0, "__syncwarp", w);
}
inline unsigned __activemask(const kl::sim::Site& w = kl::sim::Site::current()) {
  return kl::sim::detail::active_mask(w);
}
inline void __nanosleep(unsigned) { kl::sim::detail::yield_thread(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
[[noreturn]] inline void __trap(const kl::sim::Site& w = kl::sim::Site::current()) {
  kl::sim::detail::fault("__trap()", w);
}

// ---- Shuffles, with the lane arithmetic of PTX shfl.sync (segments of `width` lanes) -------

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  check_width(width, "__shfl_sync with a width that is not a power of 2 in 1..32", w);
  const unsigned char* s = deposit(WarpOp::shfl_idx, mask, var, "__shfl_sync", w);
  const int first = int(lane()) & ~(width - 1);
  return shfl_result(s, mask, first | (srcLane & (width - 1)), true, var, "__shfl_sync", w);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  check_width(width, "__shfl_up_sync with a width that is not a power of 2 in 1..32", w);
  const unsigned char* s = deposit(WarpOp::shfl_up, mask, var, "__shfl_up_sync", w);
  const int first = int(lane()) & ~(width - 1), src = int(lane()) - int(delta);
  return shfl_result(s, mask, src, src >= first, var, "__shfl_up_sync", w);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  check_width(width, "__shfl_down_sync with a width that is not a power of 2 in 1..32", w);
  const unsigned char* s = deposit(WarpOp::shfl_down, mask, var, "__shfl_down_sync", w);
  const int last = (int(lane()) & ~(width - 1)) + width - 1, src = int(lane()) + int(delta);
  return shfl_result(s, mask, src, src <= last, var, "__shfl_down_sync", w);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  check_width(width, "__shfl_xor_sync with a width that is not a power of 2 in 1..32", w);
  const unsigned char* s = deposit(WarpOp::shfl_xor, mask, var, "__shfl_xor_sync", w);
  const int last = (int(lane()) & ~(width - 1)) + width - 1, src = int(lane()) ^ (laneMask & 31);
  return shfl_result(s, mask, src, src <= last, var, "__shfl_xor_sync", w);
}

// ---- Votes, matches and warp reductions (over the lanes of the mask) ------------------------

inline unsigned __ballot_sync(unsigned mask, int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  const unsigned char* s = deposit(WarpOp::ballot, mask, int(pred != 0), "__ballot_sync", w);
  unsigned bits = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && slot<int>(s, l)) bits |= 1u << l;
  return bits;
}
inline int __any_sync(unsigned mask, int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  const unsigned char* s = deposit(WarpOp::any, mask, int(pred != 0), "__any_sync", w);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && slot<int>(s, l)) return 1;
  return 0;
}
inline int __all_sync(unsigned mask, int pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  const unsigned char* s = deposit(WarpOp::all, mask, int(pred != 0), "__all_sync", w);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && !slot<int>(s, l)) return 0;
  return 1;
}
template <class T>
unsigned __match_any_sync(unsigned mask, T value, const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  const unsigned char* s = deposit(WarpOp::match_any, mask, value, "__match_any_sync", w);
  unsigned same = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && std::memcmp(s + l * kSlotBytes, static_cast<const void*>(&value), sizeof(T)) == 0) same |= 1u << l;
  return same;
}
template <class T>
unsigned __match_all_sync(unsigned mask, T value, int* pred,
                          const kl::sim::Site& w = kl::sim::Site::current()) {
  using namespace kl::sim::detail;
  const unsigned char* s = deposit(WarpOp::match_all, mask, value, "__match_all_sync", w);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && std::memcmp(s + l * kSlotBytes, static_cast<const void*>(&value), sizeof(T)) != 0) return *pred = 0, 0u;
  return *pred = 1, mask;
}

namespace kl::sim::detail {
template <class T, class Op>
T warp_reduce(unsigned mask, T v, Op op, const char* what, const Site& where) {
  const unsigned char* s = deposit(WarpOp::reduce, mask, v, what, where);
  bool first = true;
  T r{};
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    r = first ? slot<T>(s, l) : op(r, slot<T>(s, l));
    first = false;
  }
  return r;
}
}  // namespace kl::sim::detail

#define KL_SIM_WARP_REDUCE(NAME, T, EXPR)                                                        \
  inline T NAME(unsigned mask, T v, const kl::sim::Site& w = kl::sim::Site::current()) { \
    return kl::sim::detail::warp_reduce(mask, v, [](T a, T b) -> T { return EXPR; }, #NAME, w);     \
  }
KL_SIM_WARP_REDUCE(__reduce_add_sync, unsigned, a + b)
KL_SIM_WARP_REDUCE(__reduce_add_sync, int, int(unsigned(a) + unsigned(b)))
KL_SIM_WARP_REDUCE(__reduce_min_sync, unsigned, a < b ? a : b)
KL_SIM_WARP_REDUCE(__reduce_min_sync, int, a < b ? a : b)
KL_SIM_WARP_REDUCE(__reduce_max_sync, unsigned, a > b ? a : b)
KL_SIM_WARP_REDUCE(__reduce_max_sync, int, a > b ? a : b)
KL_SIM_WARP_REDUCE(__reduce_and_sync, unsigned, a & b)
KL_SIM_WARP_REDUCE(__reduce_or_sync, unsigned, a | b)
KL_SIM_WARP_REDUCE(__reduce_xor_sync, unsigned, a ^ b)
#undef KL_SIM_WARP_REDUCE
