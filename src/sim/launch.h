// kl::sim: launching a kernel on the simulator, its options, the race check, and the
// per-fiber built-in variables. Included by cuda_sim.h after the toolkit's headers.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#if __cplusplus >= 202002L
#include <source_location>
#endif
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// Set by the scheduler each time it switches into a fiber (threadIdx) or starts a block
// (the others). A fiber never moves to another OS thread, so these are exact.
inline thread_local uint3 threadIdx{};
inline thread_local uint3 blockIdx{};
inline thread_local dim3 blockDim{};
inline thread_local dim3 gridDim{};
inline constexpr int warpSize = 32;

namespace kl::sim {

// Where device code called the simulator (messages name it): std::source_location's interface,
// on GCC's builtins in C++17 (no column there).
struct Site {
  const char* file = "";
  unsigned ln = 0, col = 0;
#if __cplusplus >= 202002L
  static constexpr Site current(std::source_location s = std::source_location::current()) {
    return Site{s.file_name(), unsigned(s.line()), unsigned(s.column())};
  }
#else
  static constexpr Site current(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE()) { return Site{f, l, 0}; }
#endif
  constexpr const char* file_name() const { return file; }
  constexpr unsigned line() const { return ln; }
  constexpr unsigned column() const { return col; }
};

// A read-only view of contiguous elements (std::span's part that the simulator uses; C++17 has none).
template <class T>
struct Span {
  const T* ptr = nullptr;
  std::size_t count = 0;
  Span() = default;
  Span(const T* p, std::size_t n) : ptr(p), count(n) {}
  template <class C, class = decltype(std::data(std::declval<const C&>()))>
  Span(const C& c) : ptr(std::data(c)), count(std::size(c)) {}
  const T* begin() const { return ptr; }
  const T* end() const { return ptr + count; }
  std::size_t size() const { return count; }
  const T& operator[](std::size_t i) const { return ptr[i]; }
};

// The order in which the threads of a block run between two barriers (and blocks run,
// when serial). CUDA allows any order; a race-free kernel gives the same result in both.
enum class Order { forward, reverse };

struct Options {
  unsigned os_threads = 0;   // OS threads running blocks; 0: KERNELAB_SIM_THREADS or the cores (at most 16)
  Order order = Order::forward;
  bool serial = false;       // blocks one at a time on the calling thread, in block order
  bool race_check = false;   // run every launch forward and reverse over all cudaMalloc'd memory
  bool check_pointer_args = true;  // a pointer argument outside every allocation fails the launch
  std::size_t stack_bytes = 0;     // fiber stack; 0: KERNELAB_SIM_STACK_KB or 64 KiB (256 under ASan)
};
// Process-wide; read from the KERNELAB_SIM_* environment on first use.
Options& options();

// The message of the last problem the simulator found or refused (empty if none), and how
// many problems (deadlocks, races, faults, bad pointers) it has found in this process.
std::string last_message();
int findings();
// Forgets the sticky error of a failed kernel without cudaDeviceReset (which also frees all
// memory): for tests that plant failures.
void clear_errors();

// Race check for library use: `launches` runs twice on the same inputs, once with every
// barrier interval's threads (and the blocks) in forward order and once in reverse; the
// caller names the global memory those launches can write. Differences are a race.
struct Buffer {
  const void* ptr;
  std::size_t bytes;
  const char* what = nullptr;  // for the message, e.g. "cudaMalloc"
};
struct RaceResult {
  bool race = false;
  std::string message;  // what differs, where; a note when only float atomics' rounding differs
};
RaceResult check_races(Span<Buffer> buffers, const std::function<void()>& launches,
                       std::string_view what = "launch");

namespace detail {

struct PointerArg {
  unsigned index;   // 1-based position in the kernel's parameter list
  const void* ptr;
};

// A launch with its parameters bound: body(closure) runs the kernel in the current fiber.
struct Kernel {
  const char* name;      // as written at the launch site, or null
  const void* address;   // the kernel function (cudaFuncSetAttribute's key)
  void (*body)(void*);
  void* closure;
  Span<PointerArg> pointer_args;
};
cudaError_t launch(const Kernel& kernel, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream);
// Stream capture (cudaStreamBeginCapture): work issued to a capturing stream is recorded into
// its graph, to run when the graph is launched (on the stream given then), not now.
using Work = std::function<cudaError_t(cudaStream_t)>;
bool capturing(cudaStream_t stream);
cudaError_t capture(cudaStream_t stream, Work work);

// Accesses that device code makes through the simulator's own functions (atomics, the PTX
// twins) rather than plain loads and stores: they report themselves to the profiler, which
// ignores them unless a profile runs. `site` tells instructions apart: a return address or
// site_key(a source location). The functions that report are not instrumented themselves
// (KL_SIM_UNCOUNTED), so nothing is counted twice.
enum class Counted : unsigned char { atomic, ldmatrix, cp_async, mma_f16, mma_s8, mma_f8, wgmma };  // wgmma: bytes = N/8 x K/16
void profile_note(Counted what, const void* address, unsigned bytes, std::uintptr_t site);
// A TMA or bulk copy's global side: `instruction` for the call that issues it, then its bytes
// inside the tensor, a contiguous piece at a time (null and 0 for none).
void profile_bulk(const void* global, std::size_t bytes, bool store, bool instruction);
inline std::uintptr_t site_key(const kl::sim::Site& s) {
  return reinterpret_cast<std::uintptr_t>(s.file_name()) ^ std::uintptr_t(s.line()) << 40 ^
         std::uintptr_t(s.column()) << 56 ^ std::uintptr_t(1) << 63;
}
#define KL_SIM_UNCOUNTED __attribute__((no_sanitize_thread))
// A twin of one instruction (wgmma, TMA, mbarrier, mma.sync, ldmatrix, cp.async) is a call, as the
// instruction is one: inlined into a kernel's unrolled loops it made the profiling build of the
// Hopper attention rung 58 s of compile (the kernel 112 KB of x86 a head dim), 9.5 s out of line.
#define KL_SIM_TWIN [[gnu::noinline]] inline
#define KL_SIM_CALL_SITE reinterpret_cast<std::uintptr_t>(__builtin_return_address(0))

// The dynamic shared memory of the block running on this OS thread; the rewriter turns
// `extern __shared__ T s[];` into `static thread_local T*& s = kl::sim::dynamic_shared<T>();`.
inline thread_local void* dynamic_smem = nullptr;
void require_serial_blocks();

// The cp.async copies the calling simulated thread has issued and no wait has performed
// yet, in issue order: the state of src/cuda/ptx.h's twins. Emptied when the thread starts.
struct AsyncCopy {
  void* dst;
  const void* src;
  std::size_t bytes;
  unsigned group;  // its commit group
};
// A bulk store (cp.async.bulk.tensor shared -> global) lands when a wait_group.read covers its group.
struct BulkStore {
  std::function<void()> land;
  unsigned group;
};
// A wgmma.mma_async issued and not yet waited for: it reads shared memory and writes the
// accumulators when a wgmma.wait_group covers its group (src/sim/hopper.h).
struct PendingWgmma {
  std::function<void()> run;
  unsigned group;
};
struct AsyncCopies {
  std::vector<AsyncCopy> pending;
  unsigned committed = 0;  // groups closed by a commit; the open one is number `committed`
  std::vector<BulkStore> bulk_stores;
  unsigned bulk_committed = 0;
  std::vector<PendingWgmma> wgmma;
  unsigned wgmma_committed = 0;
  bool wgmma_fenced = false;  // a wgmma.fence since the thread started or last waited
};
AsyncCopies& async_copies();
// cp.async.wait_group n: performs, in issue order, the calling thread's copies of every committed
// group but the newest n (reading their sources now).
KL_SIM_UNCOUNTED inline void land_cp_async(unsigned n) {
  AsyncCopies& q = async_copies();
  std::size_t kept = 0;
  for (const AsyncCopy& c : q.pending) {
    if (c.group + n < q.committed) std::memcpy(c.dst, c.src, c.bytes);
    else q.pending[kept++] = c;
  }
  q.pending.resize(kept);
}

template <class T>
T implicit(T v) {  // copy-initialisation: the conversions a CUDA launch allows, no more
  return v;
}
// NULL (GCC's __null, an integer once forwarded) for a pointer parameter: a null pointer, as nvcc takes it.
template <class T, class A>
T launch_argument(A&& a) {
  if constexpr (std::is_pointer_v<T> && std::is_integral_v<std::remove_cv_t<std::remove_reference_t<A>>>)
    return a == 0 ? nullptr : reinterpret_cast<T>(static_cast<std::uintptr_t>(a));
  else
    return implicit<T>(std::forward<A>(a));
}

// The object-pointer parameters among `params`, with their 1-based positions, into `out`.
template <class Tuple>
void collect_pointer_args(PointerArg* out, const Tuple& params) {
  unsigned k = 0, index = 0;
  std::apply(
      [&](const auto&... v) {
        auto note = [&](const auto& x) {
          using V = std::decay_t<decltype(x)>;
          ++index;
          if constexpr (std::is_pointer_v<V> && std::is_object_v<std::remove_pointer_t<V>>)
            out[k++] = {index, const_cast<const void*>(static_cast<const volatile void*>(x))};
        };
        (note(v), ...);
        (void)note;  // a kernel without parameters
      },
      params);
}

template <class... P>
constexpr unsigned count_pointer_params(const std::tuple<P...>*) {
  return (0u + ... + (std::is_pointer_v<P> && std::is_object_v<std::remove_pointer_t<P>> ? 1u : 0u));
}

// A launch of `call(params...)` in every simulated thread (each gets its own copies, as kernel
// parameters are): the arguments already converted, owned by the launch, since a stream being
// captured into a CUDA Graph keeps the launch to replay it. `address`: the kernel's, if known.
template <class Call, class Params>
cudaError_t launch_closure(const char* name, const void* address, Call call, Params params, dim3 grid, dim3 block,
                           std::size_t smem, cudaStream_t stream) {
  struct Closure {
    Call call;
    Params params;
  };
  auto c = std::make_shared<Closure>(Closure{std::move(call), std::move(params)});
  auto go = [c, name, address, grid, block, smem](cudaStream_t on) {
    constexpr unsigned n_ptr = count_pointer_params(static_cast<const Params*>(nullptr));
    PointerArg ptrs[n_ptr == 0 ? 1 : n_ptr];
    collect_pointer_args(ptrs, c->params);
    const Kernel k{name, address,
                   [](void* p) {
                     auto* cl = static_cast<Closure*>(p);
                     std::apply(cl->call, cl->params);  // by value: each thread copies
                   },
                   c.get(), Span<PointerArg>(ptrs, n_ptr)};
    return launch(k, grid, block, smem, on);
  };
  if (capturing(stream)) return capture(stream, std::move(go));
  return go(stream);
}

}  // namespace detail

// Static shared memory: fills p[0, bytes) with 0xFF bytes (NaN in fp32, fp16 and bf16) at
// the first call for p in the block running on this OS thread; later calls in that block do
// nothing. `sim run` puts a call after every block-scope __shared__ declaration, and so does
// kernelab's KL_SHARED, so that a read before any write shows up in every block.
void poison_shared_once(void* p, std::size_t bytes);

template <class T>
T*& dynamic_shared() {
  return reinterpret_cast<T*&>(detail::dynamic_smem);
}

// kernel<<<grid, block, smem, stream>>>(args...) as a call; `name` labels error messages.
// The arguments are converted to the parameter types now, like CUDA copies them at launch;
// every simulated thread then calls the kernel with its own copy.
template <class... P, class... A>
cudaError_t launch_named(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, std::size_t smem,
                         cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with a different number of arguments than it has parameters");
  return detail::launch_closure(name, reinterpret_cast<const void*>(kernel), kernel,
                                std::tuple<std::decay_t<P>...>{detail::launch_argument<std::decay_t<P>>(std::forward<A>(args))...},
                                grid, block, smem, stream);
}

// A kernel expression launched as an ordinary call launches it: a template whose arguments are
// deduced from the launch's arguments, a kernel overloaded with host functions. `call(args...)`
// calls it (deduction, overload resolution, conversions as in a call); the kernel's address is
// not known here (messages use `name`).
template <class Call, class... A>
cudaError_t launch_call(const char* name, Call call, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, A&&... args) {
  return detail::launch_closure(name, nullptr, call, std::tuple<std::decay_t<A>...>{std::forward<A>(args)...}, grid, block, smem,
                                stream);
}

namespace detail {
template <class F, class S>
F kernel_pointer(F f, S) {  // deduces F only from a single function, not an overload set or a template
  return f;
}
template <class T>
struct TypeTag {
  using type = T;
};
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;
template <class F>
struct Arity : std::integral_constant<std::size_t, std::size_t(-1)> {};  // not one function
template <class... P>
struct Arity<void (*)(P...)> : std::integral_constant<std::size_t, sizeof...(P)> {};
}  // namespace detail

// `kernel<<<...>>>(args)` as `sim run` rewrites it: launch_any("kernel", KL_SIM_KERNEL(kernel), ...).
// The kernel's address when the name is one function (or a specialisation named in full), else
// the overload or specialisation whose parameters are exactly the arguments' types; else a call
// (which also fills in a kernel's default arguments).
template <class Single, class Exact, class Call, class... A>
cudaError_t launch_any(const char* name, Single single, Exact exact, Call call, dim3 grid, dim3 block, std::size_t smem,
                       cudaStream_t stream, A&&... args) {
  using ExactType = detail::TypeTag<void(std::decay_t<A>...)>;
  if constexpr (detail::Arity<decltype(single(0))>::value == sizeof...(A))
    return launch_named(name, single(0), grid, block, smem, stream, std::forward<A>(args)...);
  else if constexpr (!std::is_null_pointer_v<decltype(exact(ExactType{}))>)
    return launch_named(name, exact(ExactType{}), grid, block, smem, stream, std::forward<A>(args)...);
  else
    return launch_call(name, call, grid, block, smem, stream, std::forward<A>(args)...);
}

template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, A&&... args) {
  return launch_named(nullptr, kernel, grid, block, smem, stream, std::forward<A>(args)...);
}

}  // namespace kl::sim

// The three ways launch_any may reach a kernel expression (a macro: the expression may hold
// commas, k<float, 4>).
#define KL_SIM_KERNEL(...)                                                                              \
  ::kl::sim::detail::Overloaded{[=](auto kl_s) -> decltype(::kl::sim::detail::kernel_pointer(__VA_ARGS__, kl_s)) { \
                                  return ::kl::sim::detail::kernel_pointer(__VA_ARGS__, kl_s);                    \
                                },                                                                                \
                                [](...) { return nullptr; }},                                                     \
      ::kl::sim::detail::Overloaded{                                                                              \
          [=](auto kl_t) -> decltype(static_cast<typename decltype(kl_t)::type*>(__VA_ARGS__)) {                  \
            return static_cast<typename decltype(kl_t)::type*>(__VA_ARGS__);                                      \
          },                                                                                                      \
          [](...) { return nullptr; }},                                                                           \
      [=](auto... kl_a) { __VA_ARGS__(kl_a...); }
