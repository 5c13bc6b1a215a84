// What the runtime's files share: the fibers of a block, the per-OS-thread worker that runs
// blocks, the launch they belong to, and the memory registry. Not part of the public API.
#pragma once
#include <array>
#include <atomic>
#include <functional>
#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <mutex>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cuda_sim.h"

namespace kl::sim::detail {

namespace bctx = boost::context::detail;

enum class Wait : unsigned char { ready, barrier, warp, activemask, exited, named, group, mbarrier };

// One simulated CUDA thread: a fiber and what it waits for.
struct SimThread {
  bctx::fcontext_t ctx = nullptr;
  uint3 tid{};
  unsigned index = 0;  // rank in the block
  Wait wait = Wait::ready;
  BarrierOp bop{};
  WarpOp op{};
  const char* what = nullptr;  // the collective's name, for messages and matching
  unsigned mask = 0;
  unsigned bytes = 0;          // deposited by a warp collective
  int value = 0;               // barrier predicate in, count/and/or or active mask out; named barrier id; mbarrier parity
  Site where{};
  const void* mbar = nullptr;  // the mbarrier waited on, and how
  MbarrierWait mbar_how{};
  void* fake_stack = nullptr;  // AddressSanitizer's per-fiber bookkeeping
};

struct WarpSlots {
  alignas(16) unsigned char deposit[32][kSlotBytes];
  alignas(16) unsigned char result[32][kSlotBytes];
};

// One kernel launch, shared by the workers running its blocks.
struct Launch {
  const Kernel* kernel = nullptr;
  std::string name;
  dim3 grid, block;
  unsigned threads = 0;  // per block
  unsigned long long blocks = 0;
  std::size_t smem = 0;
  Order order = Order::forward;
  bool profiled = false;  // counted by the profiler: blocks run serially
  std::atomic<unsigned long long> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::string error;      // the first failure
  std::string error_kind; // "deadlock", "warp collective", "fault"
  void fail(std::string kind, std::string message);
};

struct Stack {
  char* lo = nullptr;  // usable [lo, lo + size); a PROT_NONE guard page lies below lo
  std::size_t size = 0;
};

// The state of one OS thread that runs blocks (the launching thread or a pool thread).
struct NamedBarrier {
  unsigned arrived = 0, expected = 0;
  Site where{};  // the first arrival of the current round
  const char* what = nullptr;
};
struct BulkLoad {
  const void* bar;
  std::function<void()> land;
};

struct Worker {
  std::vector<SimThread> threads;
  std::array<NamedBarrier, 16> named{};  // bar.sync / bar.arrive, per block
  std::vector<std::array<unsigned char, kSlotBytes>> group_deposit, group_result;  // per thread
  std::vector<BulkLoad> bulk;  // TMA loads not landed yet, per block
  std::vector<Stack> stacks;
  std::vector<AsyncCopies> async;  // per simulated thread, like stacks: kept across blocks
  std::vector<WarpSlots> warps;
  char* smem_guard = nullptr;  // first byte of the PROT_NONE page after dynamic shared memory
  bctx::fcontext_t scheduler = nullptr;
  SimThread* current = nullptr;
  Launch* launch = nullptr;
  uint3 block{};
  bool block_failed = false;
  struct SharedVariable {
    const void* address;
    std::size_t bytes;
  };
  std::vector<SharedVariable> block_shared;  // the static shared variables poison_shared_once filled in this block
  const void* os_stack_bottom = nullptr;  // AddressSanitizer: the scheduler's stack
  std::size_t os_stack_size = 0;
  void* scheduler_fake_stack = nullptr;
};

Worker& worker();                 // this OS thread's, created on first use
Worker* current_worker();         // null on a thread that never ran a block
void prepare(Worker& w, Launch& launch);  // stacks, slots and shared memory for this launch
void run_block(Worker& w, Launch& launch, unsigned long long linear_block);
[[noreturn]] void device_assert(const char* expr, const char* file, unsigned line, const char* function);

// memory.cpp: fiber stacks, the dynamic shared memory window, signals and sanitizer hooks.
Stack new_stack(std::size_t bytes);
void release_stack(const Stack& s);
void release_smem_window(char* guard);
std::size_t stack_bytes();
char* new_smem_window();          // kMaxDynamicSmem usable bytes, then a guard page
void install_crash_handlers();
bool asan_present();
void asan_unpoison(const void* p, std::size_t n);
void asan_poison(const void* p, std::size_t n);
void asan_start_switch(void** fake_stack, const void* bottom, std::size_t size);
void asan_finish_switch(void* fake_stack, const void** bottom_old, std::size_t* size_old);

inline constexpr std::size_t kMaxDynamicSmem = 227 * 1024;  // the largest opt-in limit per block (H100)
inline constexpr std::size_t kDefaultSmem = 48 * 1024;      // without cudaFuncSetAttribute

// The device the program sees: H100 SXM-like (hardware database h100-sxm) unless `sim run --gpu` describes one of the hardware
// database in KERNELAB_SIM_DEVICE ("key=value;..." as the driver writes it).
struct SimDevice {
  std::string name = "kernelab SIMT simulator";
  int sms = 132, cc_major = 9, cc_minor = 0, threads_per_sm = 2048, blocks_per_sm = 32, regs_per_sm = 65536,
      regs_per_block = 65536, clock_khz = 1980000;
  std::size_t smem_per_sm = 228 * 1024, smem_optin = kMaxDynamicSmem, reserved_smem = 1024,
              l2_bytes = 50ull << 20, memory_bytes = 80ull << 30;
};
const SimDevice& sim_device();

// "kernel 'k' block (1,0,0) thread (3,0,0)", the context of every message.
std::string where_text(const Worker& w, const SimThread& t);
std::string site_text(const Site& s);
std::string dim_text(uint3 d);

// launch.cpp: findings and errors.
void record_finding(std::string_view kind, const std::string& message);
void note_message(const std::string& message);  // a refused call's reason, for last_message()
void set_error(cudaError_t e, bool sticky);
cudaError_t sticky_error();
cudaError_t take_last_error(bool clear);  // cudaGetLastError / cudaPeekAtLastError
void reset_errors();                      // cudaDeviceReset
extern thread_local bool in_race_check;   // launches inside check_races run as they are told

// api.cpp: the allocations the runtime made (cudaMalloc, cudaMallocHost...).
struct Allocation {
  const char* base;
  std::size_t bytes;
  const char* kind;  // "cudaMalloc", "cudaMallocHost", "cudaMallocManaged", "__device__ symbol"
};
bool find_allocation(const void* p, Allocation* out);     // live allocation containing p
bool find_freed(const void* p, Allocation* out);          // a freed one that contained p
std::vector<Allocation> live_allocations();               // device-reachable, in address order
std::size_t dynamic_smem_limit(const void* kernel);       // cudaFuncSetAttribute's, else 48 KiB
bool stream_is_valid(cudaStream_t s);                     // 0 or created and not destroyed
void check_guard_bytes(const std::string& kernel);        // after a launch: writes past a buffer's end

}  // namespace kl::sim::detail
