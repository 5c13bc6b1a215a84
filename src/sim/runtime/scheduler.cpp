// The block scheduler. A block's threads are fibers on one OS thread. Warp by warp (in
// launch order, or reversed for the race check), each ready thread runs until its next
// barrier or warp collective; a warp collective completes when every lane of its mask has
// arrived, a barrier when every thread of the block has. When nothing can move, the block
// is deadlocked and the message says who waits where.
#include <algorithm>
#include <boost/context/detail/fcontext.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>

#include "sim/runtime/internal.h"
#include "sim/runtime/profile_internal.h"

namespace kl::sim::detail {
namespace {

thread_local Worker* tls_worker = nullptr;

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

const char* barrier_name(BarrierOp op) {
  switch (op) {
    case BarrierOp::sync: return "__syncthreads()";
    case BarrierOp::count: return "__syncthreads_count()";
    case BarrierOp::all: return "__syncthreads_and()";
    case BarrierOp::any: return "__syncthreads_or()";
  }
  return "a barrier";
}

bool same_site(const Site& a, const Site& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

// Hands the OS thread back to the scheduler; returns when the scheduler resumes this fiber.
void to_scheduler(Worker& w, SimThread& me, bool for_good) {
  asan_start_switch(for_good ? nullptr : &me.fake_stack, w.os_stack_bottom, w.os_stack_size);
  const bctx::transfer_t t = bctx::jump_fcontext(w.scheduler, nullptr);
  w.scheduler = t.fctx;
  asan_finish_switch(me.fake_stack, nullptr, nullptr);
}

[[noreturn]] void fail_here(Worker& w, SimThread& me, const std::string& kind, const std::string& what) {
  w.launch->fail(kind, kind + " in " + where_text(w, me) + ": " + what);
  w.block_failed = true;
  me.wait = Wait::exited;
  to_scheduler(w, me, true);
  std::abort();  // never resumed
}

[[noreturn]] void fiber_main(bctx::transfer_t t) {
  Worker& w = *static_cast<Worker*>(t.data);
  w.scheduler = t.fctx;
  asan_finish_switch(nullptr, &w.os_stack_bottom, &w.os_stack_size);
  SimThread& me = *w.current;
  try {
    w.launch->kernel->body(w.launch->kernel->closure);
  } catch (const std::exception& e) {
    fail_here(w, me, "fault", std::string("the kernel threw an exception: ") + e.what());
  } catch (...) {
    fail_here(w, me, "fault", "the kernel threw an exception");
  }
  me.wait = Wait::exited;
  to_scheduler(w, me, true);
  std::abort();
}

void resume(Worker& w, SimThread& t) {
  w.current = &t;
  threadIdx = t.tid;
  const Stack& s = w.stacks[t.index];
  asan_start_switch(&w.scheduler_fake_stack, s.lo, s.size);
  const bctx::transfer_t r = bctx::jump_fcontext(t.ctx, &w);
  t.ctx = r.fctx;
  asan_finish_switch(w.scheduler_fake_stack, nullptr, nullptr);
  w.current = nullptr;
}

// The calling fiber, or a clear stop when device code runs outside a kernel.
SimThread& self(const char* what, const Site& where) {
  Worker* w = tls_worker;
  if (!w || !w->current) {
    std::fprintf(stderr, "kernelab sim: %s called outside a kernel at %s\n", what, site_text(where).c_str());
    std::abort();
  }
  return *w->current;
}

std::string lane_text(const SimThread& t) {
  return "thread " + dim_text(t.tid) + " (warp " + std::to_string(t.index / 32) + " lane " +
         std::to_string(t.index % 32) + ")";
}

// What a program relies on that CUDA allows but a reader may not expect: said once per kernel and site,
// on stderr when KERNELAB_SIM_NOTES is set (`sim run -v`).
void note_once(Launch& L, const Site& where, const std::string& what) {
  static std::mutex m;
  static std::set<std::string> said;
  if (!std::getenv("KERNELAB_SIM_NOTES")) return;
  std::lock_guard lock(m);
  if (!said.insert(L.name + " " + site_text(where)).second) return;
  std::fprintf(stderr, "kernelab sim: note: kernel '%s': %s\n", L.name.c_str(), what.c_str());
}

void note_exited_lanes(Worker& w, const SimThread& t) {
  note_once(*w.launch, t.where, std::string(t.what) + " at " + site_text(t.where) + " with mask " + hex(t.mask) +
                           " names lanes that have exited: they take no part, as CUDA specifies");
}

// Lanes of the warp starting at `first` that a collective with `mask` waits for: those that
// exist, less the exited ones (CUDA: "all non-exited threads named in mask" execute it), but
// for the PTX twins' exchange: their .sync.aligned instructions need every lane of the mask.
unsigned awaited(const Worker& w, unsigned first, unsigned count, unsigned mask, WarpOp op) {
  unsigned m = count >= 32 ? mask : mask & ((1u << count) - 1u);
  if (op != WarpOp::exchange)
    for (unsigned l = 0; l < count; ++l)
      if (w.threads[first + l].wait == Wait::exited) m &= ~(1u << l);
  return m;
}

bool same_collective(const SimThread& a, const SimThread& b) {
  return b.wait == Wait::warp && a.mask == b.mask && a.op == b.op &&
         (a.op != WarpOp::exchange || a.what == b.what || std::strcmp(a.what, b.what) == 0);
}

// Completes every collective whose lanes have all arrived; returns how many completed.
int complete_collectives(Worker& w, unsigned first, unsigned count) {
  int done = 0;
  WarpSlots& slots = w.warps[first / 32];
  for (unsigned l = 0; l < count; ++l) {
    SimThread& t = w.threads[first + l];
    if (t.wait != Wait::warp) continue;
    const unsigned m = awaited(w, first, count, t.mask, t.op);
    bool all_here = true;
    for (unsigned j = 0; j < count && all_here; ++j)
      if (m >> j & 1u) all_here = same_collective(t, w.threads[first + j]);
    if (!all_here) continue;
    const unsigned named = count >= 32 ? t.mask : t.mask & ((1u << count) - 1u);
    if (m != named) note_exited_lanes(w, t);
    for (unsigned j = 0; j < count; ++j) {
      if (!(m >> j & 1u)) continue;
      std::memcpy(slots.result[j], slots.deposit[j], w.threads[first + j].bytes);
      w.threads[first + j].wait = Wait::ready;
      w.threads[first + j].value = int(m);
    }
    ++done;
  }
  return done;
}

// Nothing else can move: the lanes waiting at one __activemask() call are the warp's
// converged set there (divergent branches calling it at different places get their own).
bool complete_activemask(Worker& w, unsigned first, unsigned count) {
  const SimThread* at = nullptr;
  unsigned m = 0;
  for (unsigned l = 0; l < count; ++l) {
    const SimThread& t = w.threads[first + l];
    if (t.wait != Wait::activemask || (at && !same_site(t.where, at->where))) continue;
    at = at ? at : &t;
    m |= 1u << l;
  }
  for (unsigned l = 0; l < count; ++l)
    if (m >> l & 1u) w.threads[first + l].wait = Wait::ready, w.threads[first + l].value = int(m);
  return m != 0;
}

// Why the first waiting collective of the warp cannot complete.
std::string stuck_collective(const Worker& w, unsigned first, unsigned count) {
  for (unsigned l = 0; l < count; ++l) {
    const SimThread& t = w.threads[first + l];
    if (t.wait != Wait::warp) continue;
    const std::string head = std::string(t.what) + " at " + site_text(t.where) + " by " + lane_text(t) +
                             " with mask " + hex(t.mask) + " waits for lane ";
    const unsigned m = awaited(w, first, count, t.mask, t.op);
    for (unsigned j = 0; j < count; ++j) {
      const SimThread& o = w.threads[first + j];
      if (!(m >> j & 1u) || same_collective(t, o)) continue;
      const std::string who = std::to_string(j) + " (thread " + dim_text(o.tid) + ")";
      if (o.wait == Wait::exited) return head + who + ", which has exited";
      if (o.wait == Wait::barrier)
        return head + who + ", which waits at " + barrier_name(o.bop) + " at " + site_text(o.where);
      if (o.wait == Wait::warp)
        return head + who + ", which waits at " + o.what + " at " + site_text(o.where) + " with mask " + hex(o.mask);
      return head + who + ", which does not take part";
    }
  }
  return "a warp collective cannot complete";
}

enum class WarpState { settled, yielded, failed };

// Warps with a thread waiting at the block barrier: its bar.sync, one instruction a warp.
unsigned warps_at_barrier(const Worker& w, const Launch& L) {
  unsigned n = 0;
  for (unsigned first = 0; first < L.threads; first += 32)
    for (unsigned i = first; i < std::min(first + 32, L.threads); ++i)
      if (w.threads[i].wait == Wait::barrier) {
        ++n;
        break;
      }
  return n;
}

// Runs the warp's threads until each waits at a block barrier or has exited (settled), or
// until only threads that yielded in __nanosleep are left to run: they may be waiting for
// another warp, so the other warps get their turn first.
WarpState run_warp(Worker& w, Launch& L, unsigned warp) {
  const unsigned first = warp * 32, count = std::min(32u, L.threads - first);
  const bool reverse = L.order == Order::reverse;
  for (;;) {
    bool any_ready = false;
    for (unsigned k = 0; k < count; ++k) {
      SimThread& t = w.threads[first + (reverse ? count - 1 - k : k)];
      if (t.wait != Wait::ready) continue;
      resume(w, t);
      if (w.block_failed) return WarpState::failed;
      any_ready = any_ready || t.wait == Wait::ready;
    }
    if (complete_collectives(w, first, count) > 0) continue;
    if (any_ready) return WarpState::yielded;
    if (complete_activemask(w, first, count)) continue;
    for (unsigned l = 0; l < count; ++l)
      if (w.threads[first + l].wait == Wait::warp) {
        w.launch->fail("deadlock", "deadlock in kernel '" + L.name + "' block " + dim_text(w.block) + ": " +
                                       stuck_collective(w, first, count));
        return WarpState::failed;
      }
    return WarpState::settled;
  }
}

std::string stuck_sync(const Worker& w, const Launch& L);

// Every thread waits at a barrier or has exited: release the barrier (1), finish (0) or fail (-1).
int release_barrier(Worker& w, Launch& L) {
  if (const std::string stuck = stuck_sync(w, L); !stuck.empty()) {
    L.fail("deadlock", "deadlock in kernel '" + L.name + "' block " + dim_text(w.block) + ": " + stuck);
    return -1;
  }
  const SimThread *at = nullptr, *elsewhere = nullptr, *gone = nullptr;
  unsigned waiting = 0, count = 0;
  bool all = true, any = false;
  for (unsigned i = 0; i < L.threads; ++i) {
    const SimThread& t = w.threads[i];
    if (t.wait == Wait::exited) {
      gone = gone ? gone : &t;
      continue;
    }
    ++waiting;
    if (!at) at = &t;
    else if (!elsewhere && (!same_site(t.where, at->where) || t.bop != at->bop)) elsewhere = &t;
    count += t.value != 0, all = all && t.value != 0, any = any || t.value != 0;
  }
  if (!at) return 0;
  const std::string head = "deadlock in kernel '" + L.name + "' block " + dim_text(w.block) + ": ";
  if (elsewhere) {
    L.fail("deadlock", head + "threads wait at different barriers: thread " + dim_text(at->tid) + " at " +
                           barrier_name(at->bop) + " at " + site_text(at->where) + ", thread " +
                           dim_text(elsewhere->tid) + " at " + barrier_name(elsewhere->bop) + " at " +
                           site_text(elsewhere->where));
    return -1;
  }
  if (gone)  // since Volta a block barrier waits for the threads that have not exited only
    note_once(L, at->where, "thread " + dim_text(gone->tid) + " exited before " + barrier_name(at->bop) + " at " + site_text(at->where) +
                     ", where " + std::to_string(waiting) +
                     " threads wait: released without it, as GPUs since Volta do (older GPUs may hang)");
  const int result = at->bop == BarrierOp::count ? int(count) : at->bop == BarrierOp::all ? all : any;
  for (unsigned i = 0; i < L.threads; ++i)
    if (w.threads[i].wait != Wait::exited) w.threads[i].wait = Wait::ready, w.threads[i].value = result;
  return 1;
}

// What thread o is doing, for a deadlock message about another thread's wait.
std::string doing(const SimThread& o) {
  switch (o.wait) {
    case Wait::exited: return "has exited";
    case Wait::barrier: return std::string("waits at ") + barrier_name(o.bop) + " at " + site_text(o.where);
    case Wait::ready: return "is still running";
    default: return std::string("waits at ") + (o.what ? o.what : "a collective") + " at " + site_text(o.where);
  }
}

// Completes the warpgroup collectives every member has reached and wakes the mbarrier waiters
// whose phase has completed. True if any thread can run now.
bool wake_waiters(Worker& w, Launch& L) {
  for (unsigned i = 0; i < L.threads; ++i) {
    SimThread& t = w.threads[i];
    if (t.wait == Wait::group) {
      const unsigned size = t.mask, base = i / size * size;
      bool all = true;
      for (unsigned j = base; j < base + size && all; ++j)
        all = w.threads[j].wait == Wait::group && std::strcmp(w.threads[j].what, t.what) == 0;
      if (!all) continue;
      for (unsigned j = base; j < base + size; ++j) {
        std::memcpy(w.group_result[j].data(), w.group_deposit[j].data(), w.threads[j].bytes);
        w.threads[j].wait = Wait::ready;
      }
    } else if (t.wait == Wait::mbarrier && t.mbar_how.done(t.mbar, unsigned(t.value))) {
      t.wait = Wait::ready;
    }
  }
  for (unsigned i = 0; i < L.threads; ++i)
    if (w.threads[i].wait == Wait::ready) return true;
  return false;
}

// Nothing can move: threads waiting at a warpgroup collective, a named barrier or an mbarrier
// wait for good. The message names each distinct wait (collectives first: a warpgroup split
// between two instructions is usually the cause of the rest), its barrier and what it lacks.
std::string stuck_sync(const Worker& w, const Launch& L) {
  std::vector<std::string> found;
  std::set<std::string> seen;
  auto add = [&](const std::string& key, const std::string& text) {
    if (seen.insert(key).second) found.push_back(text);
  };
  auto head = [](const SimThread& t) { return std::string(t.what ? t.what : "") + " at " + site_text(t.where) + " by " + lane_text(t); };
  for (unsigned i = 0; i < L.threads; ++i) {
    const SimThread& t = w.threads[i];
    if (t.wait != Wait::group) continue;
    const unsigned base = i / t.mask * t.mask;
    for (unsigned j = base; j < base + t.mask; ++j) {
      const SimThread& o = w.threads[j];
      if (o.wait == Wait::group && std::strcmp(o.what, t.what) == 0) continue;
      add("group " + std::to_string(base), head(t) + ": all " + std::to_string(t.mask) + " threads of its warpgroup (warps " +
                                               std::to_string(base / 32) + "-" + std::to_string((base + t.mask) / 32 - 1) +
                                               ") must make it, and thread " + dim_text(o.tid) + " (warp " + std::to_string(j / 32) +
                                               ") " + doing(o));
      break;
    }
  }
  for (unsigned i = 0; i < L.threads; ++i) {
    const SimThread& t = w.threads[i];
    if (t.wait == Wait::named) {
      const NamedBarrier& b = w.named[unsigned(t.value)];
      add("named " + std::to_string(t.value), head(t) + " waits at named barrier " + std::to_string(t.value) + ", where " +
                                                   std::to_string(b.arrived) + " of " + std::to_string(b.expected) +
                                                   " threads have arrived");
    } else if (t.wait == Wait::mbarrier) {
      add("mbarrier " + shared_name(t.mbar) + site_text(t.where),
          head(t) + " waits for the phase of parity " + std::to_string(t.value) + " of the mbarrier at " + shared_name(t.mbar) +
              ", which never completes: " + t.mbar_how.describe(t.mbar));
    }
  }
  std::string out;
  for (std::size_t k = 0; k < found.size() && k < 3; ++k) out += (k ? "; " : "") + found[k];
  if (found.size() > 3) out += "; and " + std::to_string(found.size() - 3) + " more";
  return out;
}

}  // namespace

Worker* current_worker() { return tls_worker; }

// A worker's stacks and shared memory window go when its OS thread ends (the race check
// runs its passes on short-lived threads).
struct WorkerOwner {
  ~WorkerOwner() {
    if (!tls_worker) return;
    for (const Stack& s : tls_worker->stacks) release_stack(s);
    if (tls_worker->smem_guard) release_smem_window(tls_worker->smem_guard);
    delete tls_worker;
    tls_worker = nullptr;
  }
};

Worker& worker() {
  thread_local WorkerOwner owner;
  if (!tls_worker) tls_worker = new Worker();
  return *tls_worker;
}

void prepare(Worker& w, Launch& L) {
  if (w.threads.size() < L.threads) w.threads.resize(L.threads);
  while (w.stacks.size() < L.threads) w.stacks.push_back(new_stack(stack_bytes()));
  if (w.warps.size() < (L.threads + 31) / 32) w.warps.resize((L.threads + 31) / 32);
  if (w.async.size() < L.threads) w.async.resize(L.threads);
  if (w.group_deposit.size() < L.threads) w.group_deposit.resize(L.threads), w.group_result.resize(L.threads);
  if (!w.smem_guard) w.smem_guard = new_smem_window();
  // The launch's bytes end where the guard page starts: one byte too far faults.
  const std::size_t rounded = (L.smem + 15) & ~std::size_t(15);  // 16-byte aligned start
  dynamic_smem = w.smem_guard - rounded;
  // Under AddressSanitizer the bytes around the launch's (the alignment slack, the unused
  // front of the window) are poisoned too, so any access outside it is reported.
  asan_poison(w.smem_guard - kMaxDynamicSmem, kMaxDynamicSmem);
  asan_unpoison(dynamic_smem, L.smem);
  w.launch = &L;
}

void run_block(Worker& w, Launch& L, unsigned long long b) {
  const dim3 g = L.grid, d = L.block;
  w.block = uint3{unsigned(b % g.x), unsigned(b / g.x % g.y), unsigned(b / (1ull * g.x * g.y))};
  blockIdx = w.block, blockDim = d, gridDim = g;
  w.block_failed = false;
  w.block_shared.clear();
  // Dynamic shared memory starts as 0xFF bytes (NaN as a float) in every block, not as the
  // block before left it, so a read before any write shows up (static: poison_shared_once).
  std::memset(dynamic_smem, 0xff, L.smem);
  for (unsigned i = 0; i < L.threads; ++i) {
    SimThread& t = w.threads[i];
    t = SimThread{};
    w.async[i] = AsyncCopies{};
    t.index = i;
    t.tid = uint3{i % d.x, i / d.x % d.y, i / (d.x * d.y)};
    const Stack& s = w.stacks[i];
    // Stacks are whole pages apart, so their tops would share a few cache sets and evict each other
    // at every switch: each starts a different 64-byte line into its top page instead.
    const std::size_t stagger = i % 64 * 64;
    t.ctx = bctx::make_fcontext(s.lo + s.size - stagger, s.size - stagger, fiber_main);
  }
  w.named = {};
  w.bulk.clear();
  const unsigned warps = (L.threads + 31) / 32;
  if (L.profiled) profile_block_start(w);
  for (int state = 1; state == 1;) {
    for (bool again = true; again && !w.block_failed;) {  // until every warp has settled
      again = false;
      for (unsigned k = 0; k < warps && !w.block_failed; ++k) {
        const WarpState s = run_warp(w, L, L.order == Order::reverse ? warps - 1 - k : k);
        w.block_failed = s == WarpState::failed;
        again = again || s == WarpState::yielded;
      }
      if (!again && !w.block_failed) again = wake_waiters(w, L);
    }
    const unsigned at_barrier = L.profiled ? warps_at_barrier(w, L) : 0;
    state = w.block_failed ? -1 : release_barrier(w, L);
    if (state == 1 && L.profiled) profile_barrier(w, at_barrier);
  }
  // Bulk stores still in flight complete before the grid does.
  for (unsigned i = 0; i < L.threads && !w.block_failed; ++i)
    for (const BulkStore& b : w.async[i].bulk_stores) b.land();
  if (L.profiled) profile_block_end(w);
  if (L.failed && asan_present())  // abandoned fibers leave their frames' poison behind
    for (unsigned i = 0; i < L.threads; ++i) asan_unpoison(w.stacks[i].lo, w.stacks[i].size);
}

// ---- the switch points device code calls ------------------------------------------------------

int block_barrier(BarrierOp op, int pred, const Site& where) {
  SimThread& me = self(barrier_name(op), where);
  me.wait = Wait::barrier, me.bop = op, me.value = pred, me.where = where;
  to_scheduler(*tls_worker, me, false);
  return me.value;
}

const unsigned char* warp_collective(WarpOp op, unsigned mask, const void* mine, std::size_t bytes, const char* what,
                                     const Site& where, unsigned* took_part) {
  SimThread& me = self(what, where);
  Worker& w = *tls_worker;
  const unsigned lane = me.index % 32;
  if (!(mask >> lane & 1u))
    fail_here(w, me, "warp collective",
              std::string(what) + " at " + site_text(where) + " with mask " + hex(mask) + ", which leaves out the calling lane " +
                  std::to_string(lane));
  me.wait = Wait::warp, me.op = op, me.mask = mask, me.what = what, me.where = where, me.bytes = unsigned(bytes);
  WarpSlots& slots = w.warps[me.index / 32];
  if (bytes) std::memcpy(slots.deposit[lane], mine, bytes);
  to_scheduler(w, me, false);
  if (took_part) *took_part = unsigned(me.value);
  return &slots.result[0][0];
}

// A shuffle that reads a lane which took no part (exited, or not in the mask) reads a value
// PTX leaves undefined: a bug of the program whenever the reader uses it, so said without -v.
void undefined_shuffle_source(const char* what, int src, const Site& where) {
  static std::mutex m;
  static std::set<std::string> said;
  SimThread& me = self(what, where);
  const Launch& L = *tls_worker->launch;
  std::lock_guard lock(m);
  if (!said.insert(L.name + " " + site_text(where)).second) return;
  std::fprintf(stderr,
               "kernelab sim: warning: kernel '%s': %s at %s: %s reads lane %d, which took no part (it has exited "
               "or is not in the mask); CUDA leaves that value undefined, the simulator returns the reader's own\n",
               L.name.c_str(), what, site_text(where).c_str(), lane_text(me).c_str(), src);
}

unsigned active_mask(const Site& where) {
  SimThread& me = self("__activemask()", where);
  me.wait = Wait::activemask, me.where = where;
  to_scheduler(*tls_worker, me, false);
  return unsigned(me.value);
}

void yield_thread() {
  SimThread& me = self("__nanosleep()", Site::current());
  to_scheduler(*tls_worker, me, false);
}

void named_barrier(unsigned id, unsigned count, bool wait, const char* what, const Site& where) {
  SimThread& me = self(what, where);
  Worker& w = *tls_worker;
  const Launch& L = *w.launch;
  if (id >= 16) fail_here(w, me, "fault", std::string(what) + " at " + site_text(where) + " on barrier " + std::to_string(id) + ": ids are 0-15");
  if (count == 0 || count % 32 != 0 || count > (L.threads + 31) / 32 * 32)
    fail_here(w, me, "fault", std::string(what) + " at " + site_text(where) + " with thread count " + std::to_string(count) +
                                  ": a multiple of 32, at most the block's " + std::to_string(L.threads) + " threads");
  NamedBarrier& b = w.named[id];
  if (b.arrived == 0) b.expected = count, b.where = where, b.what = what;
  else if (b.expected != count)
    fail_here(w, me, "fault", std::string(what) + " at " + site_text(where) + " expects " + std::to_string(count) +
                                  " threads at barrier " + std::to_string(id) + ", which " + b.what + " at " + site_text(b.where) +
                                  " opened for " + std::to_string(b.expected));
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    for (SimThread& t : w.threads)
      if (t.wait == Wait::named && unsigned(t.value) == id) t.wait = Wait::ready;
    return;
  }
  if (!wait) return;
  me.wait = Wait::named, me.value = int(id), me.what = what, me.where = where;
  to_scheduler(w, me, false);
}

const unsigned char* group_collective(unsigned size, const void* mine, std::size_t bytes, const char* what, const Site& where) {
  SimThread& me = self(what, where);
  Worker& w = *tls_worker;
  const unsigned base = me.index / size * size;
  if (base + size > w.launch->threads)
    fail_here(w, me, "fault", std::string(what) + " at " + site_text(where) + " needs all " + std::to_string(size) +
                                  " threads of a warpgroup, and the block has " + std::to_string(w.launch->threads));
  me.wait = Wait::group, me.mask = size, me.what = what, me.where = where, me.bytes = unsigned(bytes);
  if (bytes) std::memcpy(w.group_deposit[me.index].data(), mine, bytes);
  to_scheduler(w, me, false);
  return w.group_result[base].data();
}

void mbarrier_wait(const void* bar, unsigned parity, const MbarrierWait& how, const char* what, const Site& where) {
  SimThread& me = self(what, where);
  if (how.done(bar, parity)) return;
  me.wait = Wait::mbarrier, me.mbar = bar, me.value = int(parity), me.mbar_how = how, me.what = what, me.where = where;
  to_scheduler(*tls_worker, me, false);
}

void bulk_async(const void* bar, std::function<void()> land) { worker().bulk.push_back({bar, std::move(land)}); }

void land_bulk(const void* bar) {
  std::vector<BulkLoad>& q = worker().bulk;
  std::vector<BulkLoad> kept;
  for (BulkLoad& b : q)
    if (b.bar == bar) b.land();
    else kept.push_back(std::move(b));
  q = std::move(kept);
}

namespace {
bool in_dynamic_window(const void* p) {
  const Worker* w = tls_worker;
  const char* c = static_cast<const char*>(p);
  return w && w->launch && c >= static_cast<const char*>(dynamic_smem) && c < static_cast<const char*>(dynamic_smem) + w->launch->smem;
}
}  // namespace

std::uintptr_t shared_address(const void* p) {
  if (in_dynamic_window(p)) return 1024 + std::uintptr_t(static_cast<const char*>(p) - static_cast<const char*>(dynamic_smem));
  return reinterpret_cast<std::uintptr_t>(p);
}

SharedWindow dynamic_shared_window() {
  const Worker* w = tls_worker;
  if (!w || !w->launch) return {};
  return {static_cast<unsigned char*>(dynamic_smem), w->launch->smem};
}

std::string shared_name(const void* p) {
  char b[64];
  if (in_dynamic_window(p))
    std::snprintf(b, sizeof b, "dynamic shared memory + 0x%zx", std::size_t(static_cast<const char*>(p) - static_cast<const char*>(dynamic_smem)));
  else
    std::snprintf(b, sizeof b, "static shared memory %p", p);
  return b;
}

AsyncCopies& async_copies() { return tls_worker->async[self("cp.async", Site::current()).index]; }

// CUDA's device-side assert: the message as a GPU prints it, the kernel stops, and the
// context's error becomes cudaErrorAssert (launch.cpp). The program decides what follows.
[[noreturn]] void device_assert(const char* expr, const char* file, unsigned line, const char* function) {
  SimThread& me = *tls_worker->current;
  const uint3 b = tls_worker->block;
  std::fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line, function,
               b.x, b.y, b.z, me.tid.x, me.tid.y, me.tid.z, expr);
  fail_here(*tls_worker, me, "assert", std::string("device-side assert `") + expr + "` at " + file + ":" + std::to_string(line));
}

void fault(const char* what, const Site& where) {
  SimThread& me = self(what, where);
  fail_here(*tls_worker, me, "fault", std::string(what) + " at " + site_text(where));
}

void Launch::fail(std::string kind, std::string message) {
  std::lock_guard lock(error_mutex);
  if (error.empty()) error = std::move(message), error_kind = std::move(kind);
  failed = true;
}

std::string dim_text(uint3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

std::string site_text(const Site& s) {
  std::string f = s.file_name();
  return (f.empty() ? "?" : f) + ":" + std::to_string(s.line());
}

std::string where_text(const Worker& w, const SimThread& t) {
  return "kernel '" + (w.launch ? w.launch->name : std::string("?")) + "' block " + dim_text(w.block) + " thread " +
         dim_text(t.tid);
}

}  // namespace kl::sim::detail

namespace kl::sim {

void poison_shared_once(void* p, std::size_t bytes) {
  detail::Worker& w = detail::worker();
  if (std::ranges::find(w.block_shared, static_cast<const void*>(p), &detail::Worker::SharedVariable::address) != w.block_shared.end())
    return;
  w.block_shared.push_back({p, bytes});
  std::memset(p, 0xff, bytes);
}

}  // namespace kl::sim
