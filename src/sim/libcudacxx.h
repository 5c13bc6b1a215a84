// The toolkit's C++ API for asynchronous copies on the simulator: cuda::barrier in block scope
// (an mbarrier in shared memory on the GPU, hopper.h's here), cuda::memcpy_async into a barrier or
// a pipeline, cuda::pipeline (thread scope: cp.async groups; block scope: a produced/consumed
// barrier pair per stage), cuda::device's barrier_arrive_tx, barrier_expect_tx, memcpy_async_tx
// and barrier_native_handle, and cuda::device::experimental's TMA and bulk copies. The shadow
// headers <cuda/barrier> and <cuda/pipeline> include this instead of libcu++'s, whose device
// paths are inline PTX; the names and signatures follow libcu++ (CCCL) as the CUDA toolkit
// ships it. As with the PTX twins, a copy lands when a thread waits for it: its destination
// holds 0xFF bytes until then, so a program that reads early sees NaN, not the data by luck.
#pragma once
#include <cuda/__barrier/aligned_size.h>
#include <cuda/__barrier/async_contract_fulfillment.h>
#include <cuda/__fwd/barrier.h>
#include <cuda/std/__atomic/scopes.h>
#include <cuda/std/__barrier/empty_completion.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kl::sim::libcudacxx {

template <class Size>
inline constexpr ::std::size_t kAlignment = 1;
template <::std::size_t A>
inline constexpr ::std::size_t kAlignment<cuda::aligned_size_t<A>> = A;

// cuda::aligned_size_t<A> promises both addresses are A-aligned; the GPU faults where they are not.
template <class Size>
void check_copy(const void* dst, const void* src, Size size, const char* what, const Site& site) {
  constexpr ::std::size_t a = kAlignment<Size>;
  if (reinterpret_cast<::std::uintptr_t>(dst) % a || reinterpret_cast<::std::uintptr_t>(src) % a)
    hopper::fault(::std::string(what) + " with cuda::aligned_size_t<" + ::std::to_string(a) + "> and an address not " +
                      ::std::to_string(a) + "-byte aligned",
                  site);
  if (::std::size_t(size) >= (1u << 20))
    hopper::fault(::std::string(what) + " of " + ::std::to_string(::std::size_t(size)) +
                      " bytes: an mbarrier counts at most 2^20-1 transaction bytes per phase",
                  site);
}

// A copy whose completion the mbarrier `bar` tracks: expected in its current phase (when `expect`),
// landed as the TMA twin's bulk copies land.
inline void copy_into_barrier(void* dst, const void* src, std::size_t bytes, void* bar, bool expect, const char* what,
                              const Site& site) {
  if (bytes == 0) return;
  if (expect) hopper::mbar_expect_tx(bar, unsigned(bytes), site);  // libcu++ on sm_90: cp.async.bulk with expect_tx
  hopper::bulk_load(dst, src, bytes, bar, what, site);
}

}  // namespace kl::sim::libcudacxx

_LIBCUDACXX_BEGIN_NAMESPACE_CUDA

template <thread_scope Scope, class Completion>
class barrier {
  static_assert(Scope == thread_scope_block && ::std::is_same_v<Completion, cuda::std::__empty_completion>,
                "kernelab sim: cuda::barrier is simulated in block scope without a completion function");
};

// cuda::barrier<thread_scope_block>: an mbarrier. Default construction leaves it uninitialised, as
// a __shared__ barrier is until init(); waiting on it then is an error naming the barrier.
template <>
class barrier<thread_scope_block, cuda::std::__empty_completion> {
 public:
  using Site = kl::sim::Site;
  using arrival_token = ::std::uint64_t;

  barrier() = default;
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;
  explicit barrier(::std::ptrdiff_t expected, cuda::std::__empty_completion = {}, const Site& site = Site::current()) {
    kl::sim::hopper::mbar_init(&state_, unsigned(expected), site);
  }

  friend void init(barrier* b, ::std::ptrdiff_t expected, cuda::std::__empty_completion = {}, const Site& site = Site::current()) {
    if (expected < 0) kl::sim::hopper::fault("cuda::barrier init with a negative count", site);
    kl::sim::hopper::mbar_init(&b->state_, unsigned(expected), site);
  }

  [[nodiscard]] arrival_token arrive(::std::ptrdiff_t update = 1, const Site& site = Site::current()) {
    if (update <= 0) kl::sim::hopper::fault("cuda::barrier::arrive with an update below 1", site);
    return kl::sim::hopper::mbar_arrive(&state_, 0, "cuda::barrier::arrive", site, unsigned(update));
  }
  void wait(arrival_token&& token, const Site& site = Site::current()) const { wait_parity(token >> 63, site); }
  void wait_parity(bool parity, const Site& site = Site::current()) const {
    kl::sim::hopper::mbar_checked(&state_, "cuda::barrier::wait", site);
    kl::sim::detail::mbarrier_wait(&state_, parity, {kl::sim::hopper::mbar_phase_done, kl::sim::hopper::mbar_describe},
                                   "cuda::barrier::wait", site);
  }
  void arrive_and_wait(const Site& site = Site::current()) { wait(arrive(1, site), site); }
  void arrive_and_drop(const Site& site = Site::current()) { kl::sim::hopper::mbar_arrive_drop(&state_, site); }
  static constexpr ::std::ptrdiff_t max() noexcept { return (1 << 20) - 1; }

  // The timed waits block as wait does: the simulator has no clock, and a phase that can never
  // complete is a deadlock it reports, naming the barrier.
  template <class Rep, class Period>
  [[nodiscard]] bool try_wait_for(arrival_token&& token, const ::std::chrono::duration<Rep, Period>&,
                                  const Site& site = Site::current()) {
    wait(::std::move(token), site);
    return true;
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_wait_until(arrival_token&& token, const ::std::chrono::time_point<Clock, Duration>&,
                                    const Site& site = Site::current()) {
    wait(::std::move(token), site);
    return true;
  }
  template <class Rep, class Period>
  [[nodiscard]] bool try_wait_parity_for(bool parity, const ::std::chrono::duration<Rep, Period>&, const Site& site = Site::current()) {
    wait_parity(parity, site);
    return true;
  }
  template <class Clock, class Duration>
  [[nodiscard]] bool try_wait_parity_until(bool parity, const ::std::chrono::time_point<Clock, Duration>&,
                                           const Site& site = Site::current()) {
    wait_parity(parity, site);
    return true;
  }

  ::std::uint64_t* native_handle() { return &state_; }

 private:
  alignas(8) ::std::uint64_t state_;
};

_LIBCUDACXX_END_NAMESPACE_CUDA
_LIBCUDACXX_BEGIN_NAMESPACE_CUDA_DEVICE

inline ::std::uint64_t* barrier_native_handle(barrier<thread_scope_block>& b) { return b.native_handle(); }

// mbarrier.arrive.expect_tx: `arrive_count` arrivals and `tx` more transaction bytes in this phase.
[[nodiscard]] inline barrier<thread_scope_block>::arrival_token barrier_arrive_tx(
    barrier<thread_scope_block>& b, ::std::ptrdiff_t arrive_count, ::std::ptrdiff_t tx, const kl::sim::Site& site = kl::sim::Site::current()) {
  if (arrive_count < 1 || arrive_count > barrier<thread_scope_block>::max() || tx < 0 || tx > barrier<thread_scope_block>::max())
    kl::sim::hopper::fault("cuda::device::barrier_arrive_tx with an arrival count or transaction count out of range", site);
  return kl::sim::hopper::mbar_arrive(b.native_handle(), unsigned(tx), "cuda::device::barrier_arrive_tx", site, unsigned(arrive_count));
}

inline void barrier_expect_tx(barrier<thread_scope_block>& b, ::std::ptrdiff_t tx, const kl::sim::Site& site = kl::sim::Site::current()) {
  if (tx < 0 || tx > barrier<thread_scope_block>::max())
    kl::sim::hopper::fault("cuda::device::barrier_expect_tx with a transaction count out of range", site);
  kl::sim::hopper::mbar_expect_tx(b.native_handle(), unsigned(tx), site);
}

// A copy whose bytes complete transactions on b; the program expects them (barrier_arrive_tx).
template <class Size>
async_contract_fulfillment memcpy_async_tx(void* dst, const void* src, Size size, barrier<thread_scope_block>& b,
                                           const kl::sim::Site& site = kl::sim::Site::current()) {
  static_assert(kl::sim::libcudacxx::kAlignment<Size> >= 16, "cuda::device::memcpy_async_tx takes cuda::aligned_size_t<16> or more");
  kl::sim::libcudacxx::check_copy(dst, src, size, "cuda::device::memcpy_async_tx", site);
  kl::sim::libcudacxx::copy_into_barrier(dst, src, ::std::size_t(size), b.native_handle(), false, "cuda::device::memcpy_async_tx", site);
  return async_contract_fulfillment::async;
}

_LIBCUDACXX_END_NAMESPACE_CUDA_DEVICE
_LIBCUDACXX_BEGIN_NAMESPACE_CUDA_DEVICE_EXPERIMENTAL

using Bar = barrier<thread_scope_block>;
using Site = kl::sim::Site;

inline void cp_async_bulk_global_to_shared(void* dst, const void* src, ::std::uint32_t size, Bar& b, const Site& site = Site::current()) {
  kl::sim::hopper::check_bulk(dst, src, size, "cp_async_bulk_global_to_shared", site);
  kl::sim::hopper::bulk_load(dst, src, size, b.native_handle(), "cp_async_bulk_global_to_shared", site);
}
inline void cp_async_bulk_shared_to_global(void* dst, const void* src, ::std::uint32_t size, const Site& site = Site::current()) {
  kl::sim::hopper::check_bulk(dst, src, size, "cp_async_bulk_shared_to_global", site);
  kl::sim::hopper::bulk_store(dst, src, size);
}

inline void tensor_load(void* dst, const CUtensorMap* map, unsigned rank, const int* c, Bar& b, const char* what, const Site& site) {
  kl::sim::hopper::tma_load(dst, map, rank, c, b.native_handle(), what, site);
}
inline void cp_async_bulk_tensor_1d_global_to_shared(void* dst, const CUtensorMap* map, int c0, Bar& b, const Site& site = Site::current()) {
  const int c[] = {c0};
  tensor_load(dst, map, 1, c, b, "cp_async_bulk_tensor_1d_global_to_shared", site);
}
inline void cp_async_bulk_tensor_2d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, Bar& b,
                                                     const Site& site = Site::current()) {
  const int c[] = {c0, c1};
  tensor_load(dst, map, 2, c, b, "cp_async_bulk_tensor_2d_global_to_shared", site);
}
inline void cp_async_bulk_tensor_3d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, int c2, Bar& b,
                                                     const Site& site = Site::current()) {
  const int c[] = {c0, c1, c2};
  tensor_load(dst, map, 3, c, b, "cp_async_bulk_tensor_3d_global_to_shared", site);
}
inline void cp_async_bulk_tensor_1d_shared_to_global(const CUtensorMap* map, int c0, const void* src, const Site& site = Site::current()) {
  const int c[] = {c0};
  kl::sim::hopper::tma_store(map, 1, c, src, "cp_async_bulk_tensor_1d_shared_to_global", site);
}
inline void cp_async_bulk_tensor_2d_shared_to_global(const CUtensorMap* map, int c0, int c1, const void* src,
                                                     const Site& site = Site::current()) {
  const int c[] = {c0, c1};
  kl::sim::hopper::tma_store(map, 2, c, src, "cp_async_bulk_tensor_2d_shared_to_global", site);
}
inline void cp_async_bulk_tensor_3d_shared_to_global(const CUtensorMap* map, int c0, int c1, int c2, const void* src,
                                                     const Site& site = Site::current()) {
  const int c[] = {c0, c1, c2};
  kl::sim::hopper::tma_store(map, 3, c, src, "cp_async_bulk_tensor_3d_shared_to_global", site);
}
// Shared-memory writes made visible to the async proxy: the simulator's copies read memory when
// they land, after the program's writes, so there is nothing to order.
inline void fence_proxy_async_shared_cta() {}
inline void cp_async_bulk_commit_group() { kl::sim::hopper::bulk_commit(); }
template <int N>
void cp_async_bulk_wait_group_read() {
  static_assert(N >= 0 && N <= 63, "cp.async.bulk.wait_group takes 0 to 63");
  kl::sim::hopper::bulk_wait(unsigned(N));
}

_LIBCUDACXX_END_NAMESPACE_CUDA_DEVICE_EXPERIMENTAL
_LIBCUDACXX_BEGIN_NAMESPACE_CUDA


// memcpy_async into a barrier: the copy completes in the barrier's current phase (libcu++ on
// sm_90: cp.async.bulk with expect_tx, or cp.async with cp.async.mbarrier.arrive.noinc).
template <thread_scope Scope, class Completion, class Size>
async_contract_fulfillment memcpy_async(void* dst, const void* src, Size size, barrier<Scope, Completion>& b,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  kl::sim::libcudacxx::check_copy(dst, src, size, "cuda::memcpy_async", site);
  kl::sim::libcudacxx::copy_into_barrier(dst, src, ::std::size_t(size), b.native_handle(), true, "cuda::memcpy_async", site);
  return async_contract_fulfillment::async;
}
// The group form: one copy for the whole group (made by its first thread).
template <class Group, thread_scope Scope, class Completion, class Size>
async_contract_fulfillment memcpy_async(const Group& group, void* dst, const void* src, Size size, barrier<Scope, Completion>& b,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  if (group.thread_rank() == 0) memcpy_async(dst, src, size, b, site);
  return async_contract_fulfillment::async;
}

_LIBCUDACXX_END_NAMESPACE_CUDA

// ---- pipelines --------------------------------------------------------------------------------
_LIBCUDACXX_BEGIN_NAMESPACE_CUDA

enum class pipeline_role { producer, consumer };

template <thread_scope Scope>
class pipeline;

// A stage is a pair of barriers: `produced` completes when the producers have committed the
// stage and its copies have landed, `consumed` when the consumers have released it.
template <thread_scope Scope, ::std::uint8_t Stages>
class pipeline_shared_state {
  static_assert(Scope == thread_scope_block, "kernelab sim: cuda::pipeline_shared_state is simulated in block scope");
  static_assert(Stages >= 1, "a pipeline has at least one stage");

 public:
  pipeline_shared_state() = default;
  pipeline_shared_state(const pipeline_shared_state&) = delete;
  pipeline_shared_state& operator=(const pipeline_shared_state&) = delete;

  barrier<Scope> produced[Stages], consumed[Stages];
  unsigned refcount, producers;
};

template <>
class pipeline<thread_scope_block> {
 public:
  using Site = kl::sim::Site;
  using Bar = barrier<thread_scope_block>;

  pipeline(Bar* produced, Bar* consumed, unsigned* refcount, ::std::uint8_t stages)
      : produced_(produced), consumed_(consumed), refcount_(refcount), stages_(stages) {}
  pipeline(pipeline&& o) noexcept
      : produced_(o.produced_), consumed_(o.consumed_), refcount_(o.refcount_), stages_(o.stages_), head_(o.head_), tail_(o.tail_),
        consumed_parity_(o.consumed_parity_), produced_parity_(o.produced_parity_), active_(o.active_) {
    o.active_ = false;
  }
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;
  ~pipeline() {
    if (active_) quit();
  }

  // Leaves the pipeline; true for the last thread to leave.
  bool quit() {
    active_ = false;
    return --*refcount_ == 0;
  }
  void producer_acquire(const Site& site = Site::current()) { consumed_[head_].wait_parity(consumed_parity_, site); }
  void producer_commit(const Site& site = Site::current()) {
    (void)produced_[head_].arrive(1, site);
    if (++head_ == stages_) head_ = 0, consumed_parity_ = !consumed_parity_;
  }
  void consumer_wait(const Site& site = Site::current()) { produced_[tail_].wait_parity(produced_parity_, site); }
  void consumer_release(const Site& site = Site::current()) {
    (void)consumed_[tail_].arrive(1, site);
    if (++tail_ == stages_) tail_ = 0, produced_parity_ = !produced_parity_;
  }
  template <class Rep, class Period>
  bool consumer_wait_for(const ::std::chrono::duration<Rep, Period>&, const Site& site = Site::current()) {
    consumer_wait(site);
    return true;
  }
  template <class Clock, class Duration>
  bool consumer_wait_until(const ::std::chrono::time_point<Clock, Duration>&, const Site& site = Site::current()) {
    consumer_wait(site);
    return true;
  }

  Bar& producing() { return produced_[head_]; }  // the stage a producer's copies complete in

 private:
  Bar* produced_;
  Bar* consumed_;
  unsigned* refcount_;
  ::std::uint8_t stages_, head_ = 0, tail_ = 0;
  bool consumed_parity_ = true, produced_parity_ = false, active_ = true;
};

// A thread's own pipeline: its cp.async groups, one per committed stage.
template <>
class pipeline<thread_scope_thread> {
 public:
  pipeline() = default;
  pipeline(pipeline&&) = default;
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  bool quit() { return true; }
  void producer_acquire() {}
  void producer_commit() {
    ++kl::sim::detail::async_copies().committed;
    ++head_;
  }
  void consumer_wait() { wait_prior(head_ - tail_ - 1); }
  void consumer_release() { ++tail_; }
  template <class Rep, class Period>
  bool consumer_wait_for(const ::std::chrono::duration<Rep, Period>&) {
    consumer_wait();
    return true;
  }
  template <class Clock, class Duration>
  bool consumer_wait_until(const ::std::chrono::time_point<Clock, Duration>&) {
    consumer_wait();
    return true;
  }
  // The stages but the newest `prior` have landed (cuda::pipeline_consumer_wait_prior).
  void wait_prior(unsigned prior) {
    kl::sim::detail::land_cp_async(prior);
    if (head_ - tail_ > prior) tail_ = head_ - prior;
  }

 private:
  unsigned head_ = 0, tail_ = 0;
};

inline pipeline<thread_scope_thread> make_pipeline() { return {}; }

template <::std::uint8_t Prior>
void pipeline_consumer_wait_prior(pipeline<thread_scope_thread>& p) {
  p.wait_prior(Prior);
}

namespace kl_detail {
// Thread 0 of the group sets the stages' barriers up; the whole group waits for it.
template <class Group, ::std::uint8_t Stages>
pipeline<thread_scope_block> make(const Group& group, pipeline_shared_state<thread_scope_block, Stages>* state, unsigned producers,
                                  unsigned consumers, const kl::sim::Site& site) {
  if (group.thread_rank() == 0) {
    for (unsigned s = 0; s < Stages; ++s) {
      init(&state->produced[s], producers, {}, site);
      init(&state->consumed[s], consumers, {}, site);
    }
    state->refcount = unsigned(group.size());
  }
  group.sync();
  return {state->produced, state->consumed, &state->refcount, Stages};
}
}  // namespace kl_detail

// Every thread of the group both produces and consumes.
template <class Group, thread_scope Scope, ::std::uint8_t Stages>
pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, Stages>* state,
                              const kl::sim::Site& site = kl::sim::Site::current()) {
  return kl_detail::make(group, state, unsigned(group.size()), unsigned(group.size()), site);
}
// The group's first `producer_count` threads produce, the others consume.
template <class Group, thread_scope Scope, ::std::uint8_t Stages>
pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, Stages>* state, ::std::size_t producer_count,
                              const kl::sim::Site& site = kl::sim::Site::current()) {
  if (producer_count == 0 || producer_count >= group.size())
    kl::sim::hopper::fault("cuda::make_pipeline with " + ::std::to_string(producer_count) + " producers in a group of " +
                               ::std::to_string(group.size()) + ": at least one producer and one consumer",
                           site);
  return kl_detail::make(group, state, unsigned(producer_count), unsigned(group.size() - producer_count), site);
}
// Each thread names its role; the counts come from the group.
template <class Group, thread_scope Scope, ::std::uint8_t Stages>
pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, Stages>* state, pipeline_role role,
                              const kl::sim::Site& site = kl::sim::Site::current()) {
  if (group.thread_rank() == 0) state->producers = 0;
  group.sync();
  if (role == pipeline_role::producer) ++state->producers;  // one block's fibers run one at a time
  group.sync();
  const unsigned producers = state->producers;
  if (producers == 0 || producers >= group.size())
    kl::sim::hopper::fault("cuda::make_pipeline with " + ::std::to_string(producers) + " producers in a group of " +
                               ::std::to_string(group.size()) + ": at least one producer and one consumer",
                           site);
  group.sync();  // every thread has read the count before a later pipeline may reset it
  return kl_detail::make(group, state, producers, unsigned(group.size()) - producers, site);
}

// memcpy_async into a pipeline: the copy completes in the producer's current stage.
template <class Size>
async_contract_fulfillment memcpy_async(void* dst, const void* src, Size size, pipeline<thread_scope_block>& p,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  return memcpy_async(dst, src, size, p.producing(), site);
}
template <class Group, class Size>
async_contract_fulfillment memcpy_async(const Group& group, void* dst, const void* src, Size size, pipeline<thread_scope_block>& p,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  if (group.thread_rank() == 0) memcpy_async(dst, src, size, p.producing(), site);
  return async_contract_fulfillment::async;
}
// In a thread's pipeline the copy is a cp.async in its open group.
template <class Size>
async_contract_fulfillment memcpy_async(void* dst, const void* src, Size size, pipeline<thread_scope_thread>&,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  kl::sim::libcudacxx::check_copy(dst, src, size, "cuda::memcpy_async", site);
  for (::std::size_t off = 0; off < ::std::size_t(size); off += 16)  // cp.asyncs of up to 16 bytes
    kl::sim::detail::profile_note(kl::sim::detail::Counted::cp_async, static_cast<const char*>(src) + off,
                                  unsigned(::std::min<::std::size_t>(16, ::std::size_t(size) - off)),
                                  kl::sim::detail::site_key(site) ^ off / 16 << 48);
  ::std::memset(dst, 0xff, ::std::size_t(size));
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  q.pending.push_back({dst, src, ::std::size_t(size), q.committed});
  return async_contract_fulfillment::async;
}
template <class Group, class Size>
async_contract_fulfillment memcpy_async(const Group& group, void* dst, const void* src, Size size, pipeline<thread_scope_thread>& p,
                                        const kl::sim::Site& site = kl::sim::Site::current()) {
  if (group.thread_rank() == 0) memcpy_async(dst, src, size, p, site);
  return async_contract_fulfillment::async;
}

_LIBCUDACXX_END_NAMESPACE_CUDA
