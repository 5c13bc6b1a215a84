// Memory the runtime maps for itself (fiber stacks, the dynamic shared memory window, both
// ending in PROT_NONE guard pages), the crash handlers that turn a fault in a kernel into a
// message naming the simulated thread, and the AddressSanitizer hooks. The sanitizer
// interface is declared weak: this library is built once and links into programs with and
// without -fsanitize=address; the hooks are live only in the latter.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sim/runtime/internal.h"

extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size) __attribute__((weak));
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old)
    __attribute__((weak));
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile* addr, size_t size) __attribute__((weak));
void __asan_poison_memory_region(void const volatile* addr, size_t size) __attribute__((weak));
}

namespace kl::sim::detail {
namespace {

std::size_t page_size() {
  static const std::size_t p = std::size_t(sysconf(_SC_PAGESIZE));
  return p;
}

// Guard pages, for telling the user what a fault hit. Read in a signal handler: a fixed
// array filled under a mutex, its count published last.
struct Guard {
  const char* lo;
  const char* hi;
  bool smem;  // dynamic shared memory window (else a fiber stack)
};
std::array<Guard, 1 << 16> guards;
std::atomic<std::size_t> guard_count{0};
std::mutex guard_mutex;

void add_guard(const char* lo, std::size_t bytes, bool smem) {
  std::lock_guard lock(guard_mutex);
  const std::size_t n = guard_count.load();
  if (n == guards.size()) return;  // only the message gets vaguer
  guards[n] = Guard{lo, lo + bytes, smem};
  guard_count.store(n + 1);
}

void remove_guard(const char* lo) {
  std::lock_guard lock(guard_mutex);
  for (std::size_t i = 0, n = guard_count.load(); i < n; ++i)
    if (guards[i].lo == lo) {
      guards[i] = guards[n - 1];  // a fault report reading this meanwhile only words itself vaguer
      guard_count.store(n - 1);
      return;
    }
}

char* map_with_guard(std::size_t usable, bool guard_below, bool smem) {
  const std::size_t page = page_size(), total = usable + page;
  auto* base = static_cast<char*>(mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "kernelab sim: cannot map %zu bytes for the simulator\n", total);
    std::abort();
  }
  char* guard = guard_below ? base : base + usable;
  mprotect(guard, page, PROT_NONE);
  add_guard(guard, page, smem);
  return guard_below ? base + page : guard;
}

void write_err(const char* s) {
  for (std::size_t n = std::strlen(s); n > 0;) {
    const ssize_t k = write(2, s, n);
    if (k <= 0) return;
    s += k, n -= std::size_t(k);
  }
}

// Names the simulated thread this OS thread was running, if any.
void describe_current(const char* event, const void* address) {
  Worker* w = current_worker();
  if (!w || !w->current || !w->launch) return;
  char buf[768];
  const SimThread& t = *w->current;
  const char* what = "";
  char detail[256] = "";
  for (std::size_t i = 0, n = guard_count.load(); address && i < n; ++i) {
    const Guard& g = guards[i];
    if (address < g.lo || address >= g.hi) continue;
    if (g.smem) {
      const auto offset = static_cast<const char*>(address) - static_cast<const char*>(dynamic_smem);
      std::snprintf(detail, sizeof detail, ": access to byte %td of dynamic shared memory, beyond the launch's %zu bytes",
                    offset, w->launch->smem);
      what = detail;
    } else {
      what = ": stack overflow of the simulated thread (raise KERNELAB_SIM_STACK_KB)";
    }
  }
  std::snprintf(buf, sizeof buf, "kernelab sim: %s in kernel '%s' block (%u,%u,%u) thread (%u,%u,%u)%s\n", event,
                w->launch->name.c_str(), w->block.x, w->block.y, w->block.z, t.tid.x, t.tid.y, t.tid.z, what);
  write_err(buf);
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  const char* name = sig == SIGSEGV ? "invalid memory access (SIGSEGV)"
                     : sig == SIGBUS ? "bus error (SIGBUS)"
                     : sig == SIGFPE ? "arithmetic fault (SIGFPE)"
                                     : "abort (SIGABRT)";
  describe_current(name, sig == SIGABRT ? nullptr : info->si_addr);
  signal(sig, SIG_DFL);  // returning re-raises with the default action: the program dies as it would have
  if (sig == SIGABRT) raise(sig);
}

void on_sanitizer_death() { describe_current("the access reported above was made", nullptr); }

// A fault on a fiber stack's guard page needs a stack of its own to report from.
void ensure_altstack() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  stack_t ss{};
  ss.ss_size = 64 * 1024;
  ss.ss_sp = std::malloc(ss.ss_size);
  sigaltstack(&ss, nullptr);
}

}  // namespace

bool asan_present() { return __sanitizer_start_switch_fiber != nullptr; }

void asan_unpoison(const void* p, std::size_t n) {
  if (__asan_unpoison_memory_region) __asan_unpoison_memory_region(p, n);
}
void asan_poison(const void* p, std::size_t n) {
  if (__asan_poison_memory_region) __asan_poison_memory_region(p, n);
}
void asan_start_switch(void** fake_stack, const void* bottom, std::size_t size) {
  if (__sanitizer_start_switch_fiber) __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void asan_finish_switch(void* fake_stack, const void** bottom_old, std::size_t* size_old) {
  if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake_stack, bottom_old, size_old);
}

std::size_t stack_bytes() {
  std::size_t b = options().stack_bytes;
  if (b == 0) b = asan_present() ? 256 * 1024 : 64 * 1024;
  const std::size_t page = page_size();
  return (b + page - 1) / page * page;
}

Stack new_stack(std::size_t bytes) {
  ensure_altstack();
  return Stack{map_with_guard(bytes, true, false), bytes};
}

void release_stack(const Stack& s) {
  remove_guard(s.lo - page_size());
  munmap(s.lo - page_size(), s.size + page_size());
}

void release_smem_window(char* guard) {
  const std::size_t page = page_size(), usable = (kMaxDynamicSmem + page - 1) / page * page;
  remove_guard(guard);
  munmap(guard - usable, usable + page);
}

char* new_smem_window() {
  ensure_altstack();
  const std::size_t page = page_size();
  return map_with_guard((kMaxDynamicSmem + page - 1) / page * page, false, true);
}

// Installed at the first launch, only where the program has no handler of its own (under
// AddressSanitizer its handler reports, and the death callback adds the simulated thread).
void install_crash_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) {
      struct sigaction old{};
      sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
      struct sigaction sa{};
      sa.sa_sigaction = on_fatal_signal;
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
  });
  ensure_altstack();
}

}  // namespace kl::sim::detail
