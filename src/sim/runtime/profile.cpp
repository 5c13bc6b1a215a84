// The profiler (sim/profile.h): the __tsan_* hooks that instrumented kernels call, the grouping
// of accesses into warp-level instructions, ncu's counting rules, and the L2 model.
#include "sim/profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "sim/runtime/internal.h"
#include "sim/runtime/profile_internal.h"

namespace kl::sim::detail {
namespace {

enum class Kind : unsigned char { ld, st, atom, ldsm, ldgsts, mma_f16, mma_s8, mma_f8, wgmma };
enum class Space : unsigned char { none, global, shared };

// One lane's access, or one lane's part in an instruction that is not an access (mma).
struct Event {
  std::uintptr_t site;
  std::uint64_t address;
  std::uint64_t context;  // the lane's loop iterations when it got here (LoopContext)
  std::uint32_t occurrence;  // how many times before the lane reached `site` in that context (set by flush)
  std::uint8_t lane, bytes;
  Kind kind;
  Space space;
};

// Which iteration of which loops a lane is in, from the basic blocks it enters in the kernel's own
// frame (-fsanitize-coverage=trace-pc): a jump back to a lower address is a loop's next iteration,
// a jump past that loop's last block leaves it (-fno-reorder-blocks and
// -fno-reorder-blocks-and-partition keep a loop's blocks together, in source order). A warp-level instruction is then one site reached
// by the warp's lanes in the same iterations: lanes that skip an iteration's branch are not in it,
// as on a GPU, where divergent lanes wait at the branch's reconvergence point.
struct LoopContext {
  struct Loop {
    std::uintptr_t head, tail;  // the first block's address and the back edge's source block
    std::uint64_t iteration;
  };
  Loop loops[16];
  unsigned depth = 0;
  std::uintptr_t previous = 0, frame = 0;  // the last block entered; the kernel's frame (0: not yet seen)
  std::uint64_t hash = 0;

  void enter(std::uintptr_t pc) {
    const unsigned was = depth;
    const bool back_edge = pc <= previous;
    if (back_edge) {
      unsigned i = depth;
      while (i > 0 && loops[i - 1].head != pc) --i;
      if (i > 0) {
        depth = i, ++loops[i - 1].iteration, loops[i - 1].tail = std::max(loops[i - 1].tail, previous);
      } else if (depth < 16) {
        while (depth > 0 && pc < loops[depth - 1].head) --depth;  // an outer loop's header
        loops[depth++] = Loop{pc, previous, 1};
      }
    } else {
      while (depth > 0 && pc > loops[depth - 1].tail) --depth;  // left the loop
    }
    previous = pc;
    if (!back_edge && depth == was) return;  // the same iterations of the same loops: the same hash
    hash = 0;
    for (unsigned i = 0; i < depth; ++i) hash = (hash ^ loops[i].head ^ loops[i].iteration * 0x9e3779b97f4a7c15ull) * 0x100000001b3ull;
  }
};

// Least recently used, fully associative, 128-byte lines of four 32-byte sectors. A load or
// atomic of an absent sector reads it from DRAM; a store fills its sector without a read (the L2
// keeps byte masks); dirty sectors are written back when their line leaves, or at the end, and
// counted to the launch that wrote them.
class L2Model {
 public:
  void reset(std::uint64_t bytes) {
    capacity_ = bytes / 128, lines_.clear(), slot_of_.clear(), head_ = tail_ = kNone;
    free_.clear();
  }
  bool enabled() const { return capacity_ > 0; }
  void access(std::uint64_t sector, bool write, bool read, std::uint32_t launch, std::vector<LaunchProfile>& out) {
    const std::uint64_t line = sector >> 2;
    const unsigned bit = 1u << (sector & 3);
    auto it = slot_of_.find(line);
    std::uint32_t s;
    if (it == slot_of_.end()) {
      s = take_slot(out);
      lines_[s] = Line{line, 0, 0, {}, kNone, kNone};
      slot_of_.emplace(line, s);
    } else {
      s = it->second;
      unlink(s);
    }
    push_front(s);
    Line& L = lines_[s];
    if (read && !(L.valid & bit)) out[launch].counts.dram_read_bytes += 32;
    L.valid |= bit;
    if (write) L.dirty |= bit, L.writer[sector & 3] = launch;
  }
  void write_back_all(std::vector<LaunchProfile>& out) {
    for (std::uint32_t s = head_; s != kNone; s = lines_[s].next) write_back(lines_[s], out);
    reset(capacity_ * 128);
  }

 private:
  static constexpr std::uint32_t kNone = ~0u;
  struct Line {
    std::uint64_t line;
    unsigned valid, dirty;
    std::uint32_t writer[4];
    std::uint32_t prev, next;
  };
  static void write_back(Line& L, std::vector<LaunchProfile>& out) {
    for (int k = 0; k < 4; ++k)
      if (L.dirty >> k & 1u) out[L.writer[k]].counts.dram_write_bytes += 32;
    L.dirty = 0;
  }
  std::uint32_t take_slot(std::vector<LaunchProfile>& out) {
    if (!free_.empty()) {
      const std::uint32_t s = free_.back();
      free_.pop_back();
      return s;
    }
    if (lines_.size() < capacity_) {
      lines_.push_back({});
      return std::uint32_t(lines_.size() - 1);
    }
    const std::uint32_t victim = tail_;  // the least recently used line leaves
    unlink(victim);
    write_back(lines_[victim], out);
    slot_of_.erase(lines_[victim].line);
    return victim;
  }
  void unlink(std::uint32_t s) {
    Line& L = lines_[s];
    (L.prev == kNone ? head_ : lines_[L.prev].next) = L.next;
    (L.next == kNone ? tail_ : lines_[L.next].prev) = L.prev;
  }
  void push_front(std::uint32_t s) {
    Line& L = lines_[s];
    L.prev = kNone, L.next = head_;
    (head_ == kNone ? tail_ : lines_[head_].prev) = s;
    head_ = s;
  }
  std::uint64_t capacity_ = 0;
  std::vector<Line> lines_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of_;
  std::uint32_t head_ = kNone, tail_ = kNone;
};

struct Range {
  std::uintptr_t lo, hi;
};

// What one profile holds. Only the thread that runs the blocks (the launching one: profiled
// launches are serial) touches it while a launch runs.
struct Session {
  ProfileOptions options;
  std::vector<LaunchProfile> launches;
  L2Model l2;
  // The current launch.
  Worker* worker = nullptr;
  std::vector<Range> globals;  // device allocations, by address
  std::size_t last_global = 0;
  Range dynamic_smem{0, 0};
  const char* kernel_entry = nullptr;       // the kernel function's first byte
  std::vector<LoopContext> loops;           // per thread of the block
  std::vector<std::vector<Event>> warp_events;
};

std::mutex session_mutex;
Session* session = nullptr;            // between profile_begin and profile_end
thread_local Session* recording = nullptr;  // set on the thread running a profiled launch

bool in(const Range& r, std::uintptr_t a) { return a >= r.lo && a < r.hi; }

Space space_of(Session& s, std::uintptr_t a) {
  if (in(s.dynamic_smem, a)) return Space::shared;
  Worker& w = *s.worker;
  for (const Worker::SharedVariable& v : w.block_shared)
    if (a >= std::uintptr_t(v.address) && a < std::uintptr_t(v.address) + v.bytes) return Space::shared;
  if (s.last_global < s.globals.size() && in(s.globals[s.last_global], a)) return Space::global;
  auto it = std::upper_bound(s.globals.begin(), s.globals.end(), a, [](std::uintptr_t x, const Range& r) { return x < r.lo; });
  if (it == s.globals.begin()) return Space::none;
  --it;
  if (!in(*it, a)) return Space::none;
  s.last_global = std::size_t(it - s.globals.begin());
  return Space::global;
}

void record(Session& s, Kind kind, Space space, std::uintptr_t address, unsigned bytes, std::uintptr_t site) {
  const SimThread* t = s.worker->current;
  if (!t) return;
  s.warp_events[t->index / 32].push_back(
      Event{site, address, s.loops[t->index].hash, 0, std::uint8_t(t->index % 32), std::uint8_t(bytes), kind, space});
}

// A plain load or store from instrumented code: counted when it touches global or shared memory.
void access(std::uintptr_t address, std::size_t bytes, Kind kind, std::uintptr_t site) {
  Session* s = recording;
  if (!s) return;
  const Space space = space_of(*s, address);
  if (space == Space::none) return;
  if (bytes <= 16) return record(*s, kind, space, address, unsigned(bytes), site);
  // A wider copy (a struct) is 16-byte pieces, as many instructions.
  for (std::size_t off = 0; off < bytes; off += 16)
    record(*s, kind, space, address + off, unsigned(std::min<std::size_t>(16, bytes - off)), site ^ (off / 16) << 48);
}

// ---- counting one warp-level instruction -----------------------------------------------------

std::uint64_t sectors_of(const Event* e, const Event* end, std::vector<std::uint64_t>& scratch) {
  scratch.clear();
  for (; e != end; ++e)
    for (std::uint64_t x = e->address >> 5; x <= (e->address + e->bytes - 1) >> 5; ++x) scratch.push_back(x);
  std::sort(scratch.begin(), scratch.end());
  scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
  return scratch.size();
}

// Wavefronts of a shared-memory instruction: per phase, the most distinct 4-byte words any one
// of the 32 banks must deliver (the same word to several lanes is one broadcast).
void wavefronts_of(const Event* e, const Event* end, std::uint64_t& wavefronts, std::uint64_t& ideal) {
  unsigned widest = 0;
  for (const Event* x = e; x != end; ++x) widest = std::max<unsigned>(widest, x->bytes);
  const unsigned lanes_per_phase = widest <= 4 ? 32 : widest <= 8 ? 16 : 8;
  std::uint64_t words[4][128];  // a phase: at most 32 lanes x 4 words (or 8 x 16 bytes)
  unsigned count[4] = {};
  for (; e != end; ++e) {
    const unsigned phase = e->lane / lanes_per_phase;
    for (std::uint64_t word = e->address >> 2; word <= (e->address + e->bytes - 1) >> 2 && count[phase] < 128; ++word)
      words[phase][count[phase]++] = word;
  }
  for (unsigned phase = 0; phase < 4; ++phase) {
    if (count[phase] == 0) continue;
    std::uint64_t* w = words[phase];
    std::sort(w, w + count[phase]);
    unsigned per_bank[32] = {}, most = 0;
    for (unsigned i = 0; i < count[phase]; ++i)
      if (i == 0 || w[i] != w[i - 1]) most = std::max(most, ++per_bank[w[i] % 32]);
    wavefronts += most, ideal += 1;
  }
}

void count_instruction(Session& s, const Event* e, const Event* end, std::vector<std::uint64_t>& scratch) {
  LaunchProfile& lp = s.launches.back();
  ProfileCounts& c = lp.counts;
  const std::uint32_t launch = std::uint32_t(s.launches.size() - 1);
  const std::uint64_t lanes = std::uint64_t(end - e);
  switch (e->kind) {
    case Kind::mma_f16: ++c.mma_f16, c.tensor_flops += 2 * 16 * 8 * 16; return;
    case Kind::mma_s8: ++c.mma_s8, c.tensor_flops += 2 * 16 * 8 * 32; return;
    case Kind::mma_f8: ++c.mma_f8, c.tensor_flops += 2 * 16 * 8 * 32; return;
    // Each lane's share of its warp's 16 rows of m64nNkK, whatever the profiler's grouping: the twins
    // note bytes = N/8 x K/16 (k16 for 16-bit types, k32 for 8-bit), so N·K = 128·bytes.
    case Kind::wgmma:
      c.wgmma_lanes += lanes, c.tensor_flops += lanes * (2 * 16 * (128 * std::uint64_t(e->bytes)) / 32);
      return;
    case Kind::ldsm:
      ++c.ldsm_requests, wavefronts_of(e, end, c.ldsm_wavefronts, c.ldsm_ideal);
      for (const Event* x = e; x != end; ++x) c.ldsm_bytes += x->bytes;
      return;
    default: break;
  }
  c.memory_lanes += lanes;
  if (e->space == Space::shared) {
    if (e->kind == Kind::ld) ++c.shared_ld_requests, wavefronts_of(e, end, c.shared_ld_wavefronts, c.shared_ld_ideal);
    else if (e->kind == Kind::st) ++c.shared_st_requests, wavefronts_of(e, end, c.shared_st_wavefronts, c.shared_st_ideal);
    else ++c.shared_atom_requests;
    return;
  }
  const std::uint64_t sectors = sectors_of(e, end, scratch);
  std::uint64_t previous_line = ~0ull;
  for (std::uint64_t sector : scratch)  // sorted: a line's sectors are adjacent
    if (sector >> 2 != previous_line) ++c.global_lines, previous_line = sector >> 2;
  switch (e->kind) {
    case Kind::ld: ++c.global_ld_requests, c.global_ld_sectors += sectors; break;
    case Kind::st: ++c.global_st_requests, c.global_st_sectors += sectors; break;
    case Kind::atom: ++c.global_atom_requests, c.global_atom_sectors += sectors; break;
    case Kind::ldgsts:
      ++c.ldgsts_requests, c.ldgsts_sectors += sectors;
      for (const Event* x = e; x != end; ++x) c.ldgsts_bytes += x->bytes;
      break;
    default: break;
  }
  if (!s.l2.enabled()) return;
  const bool write = e->kind == Kind::st || e->kind == Kind::atom, read = e->kind != Kind::st;
  for (std::uint64_t sector : scratch) s.l2.access(sector, write, read, launch, s.launches);
}

// The usual case, found in linear time: every lane that recorded anything recorded the same
// sites in the same loop contexts in the same order, so the i-th events of the lanes are one
// instruction. `by_lane` receives the events bucketed by lane, in each lane's order.
bool lockstep(const std::vector<Event>& events, std::vector<const Event*> (&by_lane)[32]) {
  for (auto& l : by_lane) l.clear();
  for (const Event& e : events) by_lane[e.lane].push_back(&e);
  const std::vector<const Event*>* first = nullptr;
  for (const auto& l : by_lane) {
    if (l.empty()) continue;
    if (!first) {
      first = &l;
      continue;
    }
    if (l.size() != first->size()) return false;
    for (std::size_t i = 0; i < l.size(); ++i)
      if (l[i]->site != (*first)[i]->site || l[i]->context != (*first)[i]->context) return false;
  }
  return true;
}

// Counts every instruction recorded so far. Called when no lane can add to them: when the block's
// threads all wait at a barrier, and at the block's end.
void flush(Session& s) {
  std::vector<std::uint64_t> scratch;
  std::vector<const Event*> by_lane[32];
  Event group[32];
  for (std::vector<Event>& events : s.warp_events) {
    if (lockstep(events, by_lane)) {
      std::size_t length = 0;
      for (const auto& l : by_lane) length = std::max(length, l.size());
      for (std::size_t i = 0; i < length; ++i) {
        unsigned n = 0;
        for (const auto& l : by_lane)
          if (!l.empty()) group[n++] = *l[i];
        count_instruction(s, group, group + n, scratch);
      }
      events.clear();
      continue;
    }
    // Divergent lanes: sort into (site, context) runs. A lane at one site twice in the same loop
    // context (no back edge between) joins, on its n-th visit, the other lanes' n-th.
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return std::tie(a.site, a.context, a.lane) < std::tie(b.site, b.context, b.lane);
    });
    for (std::size_t i = 1; i < events.size(); ++i) {
      const Event &p = events[i - 1], &e = events[i];
      if (e.site == p.site && e.context == p.context && e.lane == p.lane) events[i].occurrence = p.occurrence + 1;
    }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return std::tie(a.site, a.context, a.occurrence) < std::tie(b.site, b.context, b.occurrence);
    });
    const auto same = [](const Event& a, const Event& b) {
      return a.site == b.site && a.context == b.context && a.occurrence == b.occurrence;
    };
    for (std::size_t i = 0, j; i < events.size(); i = j) {
      for (j = i + 1; j < events.size() && same(events[j], events[i]);) ++j;
      count_instruction(s, events.data() + i, events.data() + j, scratch);
    }
    events.clear();
  }
}

// A basic block entered by instrumented code: loop bookkeeping, in the kernel's own frame only
// (the frame of the block at the kernel's entry; callees and the launch's wrappers are left out).
void block_entered(std::uintptr_t pc, std::uintptr_t frame) {
  Session* s = recording;
  if (!s || !s->worker->current) return;
  LoopContext& L = s->loops[s->worker->current->index];
  if (!L.frame) {
    const std::uintptr_t entry = reinterpret_cast<std::uintptr_t>(s->kernel_entry);
    if (pc < entry || pc >= entry + 512) return;
    L.frame = frame;
  }
  if (frame == L.frame) L.enter(pc);
}

// `kernelab sim run --profile`: the program profiles every launch and writes them, one record a
// line, to the file KERNELAB_SIM_PROFILE names when it exits.
void write_environment_profile() {
  const char* path = std::getenv("KERNELAB_SIM_PROFILE");
  const std::vector<LaunchProfile> launches = profile_end();
  if (FILE* f = path ? std::fopen(path, "w") : nullptr) {
    for (const LaunchProfile& l : launches) std::fprintf(f, "%s\n", profile_record(l).c_str());
    std::fclose(f);
  }
}

void profile_from_environment() {
  const char* path = std::getenv("KERNELAB_SIM_PROFILE");
  if (!path || !*path) return;
  ProfileOptions o;
  if (const char* l2 = std::getenv("KERNELAB_SIM_PROFILE_L2_BYTES")) o.l2_bytes = std::strtoull(l2, nullptr, 10);
  if (const char* b = std::getenv("KERNELAB_SIM_PROFILE_BLOCKS")) o.max_blocks = std::strtoull(b, nullptr, 10);
  profile_begin(o);
  std::atexit(write_environment_profile);
}

}  // namespace

// ---- the scheduler's calls ---------------------------------------------------------------------

bool profiled_launch(Launch& L) {
  static std::once_flag from_environment;
  std::call_once(from_environment, profile_from_environment);
  std::lock_guard lock(session_mutex);
  Session* s = session;
  if (!s) return false;
  LaunchProfile p;
  p.name = L.name, p.kernel = L.kernel->address, p.grid = L.grid, p.block = L.block, p.smem = L.smem;
  p.blocks_total = L.blocks;
  if (s->options.max_blocks && L.blocks > s->options.max_blocks) L.blocks = s->options.max_blocks;
  p.blocks_run = L.blocks;
  s->launches.push_back(std::move(p));
  s->globals.clear();
  for (const Allocation& a : live_allocations())
    if (std::strcmp(a.kind, "cudaMallocHost") != 0)
      s->globals.push_back(Range{std::uintptr_t(a.base), std::uintptr_t(a.base) + a.bytes});
  s->last_global = 0;
  s->kernel_entry = static_cast<const char*>(L.kernel->address);
  s->warp_events.assign((L.threads + 31) / 32, {});
  s->loops.assign(L.threads, {});
  return true;
}

void profile_block_start(Worker& w) {
  Session* s = session;
  if (!s) return;
  s->worker = &w;
  s->dynamic_smem = Range{std::uintptr_t(dynamic_smem), std::uintptr_t(dynamic_smem) + w.launch->smem};
  std::fill(s->loops.begin(), s->loops.end(), LoopContext{});
  recording = s;
}

void profile_barrier(Worker&, unsigned warps_at_barrier) {
  Session* s = recording;
  if (!s) return;
  flush(*s);
  s->launches.back().counts.block_barriers += warps_at_barrier;
}

void profile_block_end(Worker&) {
  Session* s = recording;
  if (!s) return;
  flush(*s);
  recording = nullptr;
}

void profile_note(Counted what, const void* address, unsigned bytes, std::uintptr_t site) {
  Session* s = recording;
  if (!s) return;
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(address);
  switch (what) {
    case Counted::atomic: {
      const Space space = space_of(*s, a);
      if (space != Space::none) record(*s, Kind::atom, space, a, bytes, site);
      return;
    }
    case Counted::ldmatrix: return record(*s, Kind::ldsm, Space::shared, a, bytes, site);
    case Counted::cp_async: return record(*s, Kind::ldgsts, Space::global, a, bytes, site);
    case Counted::mma_f16: return record(*s, Kind::mma_f16, Space::none, 0, 0, site);
    case Counted::mma_s8: return record(*s, Kind::mma_s8, Space::none, 0, 0, site);
    case Counted::mma_f8: return record(*s, Kind::mma_f8, Space::none, 0, 0, site);
    case Counted::wgmma: return record(*s, Kind::wgmma, Space::none, 0, bytes, site);
  }
}

void profile_bulk(const void* global, std::size_t bytes, bool store, bool instruction) {
  Session* s = recording;
  if (!s) return;
  ProfileCounts& c = s->launches.back().counts;
  if (instruction) ++(store ? c.tma_st_requests : c.tma_ld_requests);
  (store ? c.tma_st_bytes : c.tma_ld_bytes) += bytes;
  if (!s->l2.enabled() || bytes == 0) return;
  const std::uint64_t a = reinterpret_cast<std::uintptr_t>(global);
  for (std::uint64_t sector = a >> 5; sector <= (a + bytes - 1) >> 5; ++sector)
    s->l2.access(sector, store, !store, std::uint32_t(s->launches.size() - 1), s->launches);
}

void profile_access(const void* address, std::size_t bytes, bool store, std::uintptr_t site) {
  access(reinterpret_cast<std::uintptr_t>(address), bytes, store ? Kind::st : Kind::ld, site);
}

void profile_block(std::uintptr_t pc, std::uintptr_t frame) { block_entered(pc, frame); }

}  // namespace kl::sim::detail

namespace kl::sim {

const std::vector<std::uint64_t ProfileCounts::*>& ProfileCounts::fields() {
  using C = ProfileCounts;
  static const std::vector<std::uint64_t C::*> f = {
      &C::global_ld_requests, &C::global_ld_sectors,  &C::global_st_requests,   &C::global_st_sectors,
      &C::global_atom_requests, &C::global_atom_sectors, &C::ldgsts_requests,   &C::ldgsts_sectors,
      &C::shared_ld_requests, &C::shared_ld_wavefronts, &C::shared_ld_ideal,   &C::shared_st_requests,
      &C::shared_st_wavefronts, &C::shared_st_ideal,  &C::shared_atom_requests, &C::ldsm_requests,
      &C::ldsm_wavefronts,    &C::ldsm_ideal,         &C::memory_lanes,         &C::mma_f16,
      &C::mma_s8,             &C::mma_f8,             &C::tensor_flops,         &C::dram_read_bytes,
      &C::dram_write_bytes,   &C::global_lines,       &C::ldgsts_bytes,         &C::ldsm_bytes,
      &C::wgmma_lanes,        &C::tma_ld_requests,    &C::tma_ld_bytes,         &C::tma_st_requests,
      &C::tma_st_bytes,       &C::block_barriers};
  return f;
}

void ProfileCounts::add(const ProfileCounts& o) {
  for (auto f : fields()) this->*f += o.*f;
}

std::vector<KernelProfile> profile_by_kernel(const std::vector<LaunchProfile>& launches) {
  std::vector<KernelProfile> out;
  for (const LaunchProfile& l : launches) {
    auto it = std::find_if(out.begin(), out.end(), [&](const KernelProfile& k) { return k.name == l.name; });
    if (it == out.end()) {
      out.push_back(KernelProfile{l.name, 0, l.grid, l.block, 0, 0, {}});
      it = out.end() - 1;
    }
    ++it->launches;
    it->blocks_total += l.blocks_total, it->blocks_run += l.blocks_run;
    it->counts.add(l.counts);
  }
  return out;
}

// name \t grid x,y,z \t block x,y,z \t smem \t blocks total \t blocks run \t the counts, space separated
std::string profile_record(const LaunchProfile& p) {
  std::string name = p.name;
  std::replace(name.begin(), name.end(), '\t', ' ');
  std::replace(name.begin(), name.end(), '\n', ' ');
  std::string s = name + '\t' + std::to_string(p.grid.x) + ',' + std::to_string(p.grid.y) + ',' + std::to_string(p.grid.z) +
                  '\t' + std::to_string(p.block.x) + ',' + std::to_string(p.block.y) + ',' + std::to_string(p.block.z) +
                  '\t' + std::to_string(p.smem) + '\t' + std::to_string(p.blocks_total) + '\t' + std::to_string(p.blocks_run) + '\t';
  for (auto f : ProfileCounts::fields()) s += std::to_string(p.counts.*f) + ' ';
  return s;
}

bool parse_profile_record(const std::string& line, LaunchProfile& out) {
  const std::size_t tab = line.find('\t');
  if (tab == std::string::npos) return false;
  out.name = line.substr(0, tab);
  unsigned long long smem = 0;
  int used = 0;
  if (std::sscanf(line.c_str() + tab + 1, "%u,%u,%u\t%u,%u,%u\t%llu\t%" SCNu64 "\t%" SCNu64 "\t%n", &out.grid.x, &out.grid.y,
                  &out.grid.z, &out.block.x, &out.block.y, &out.block.z, &smem, &out.blocks_total, &out.blocks_run, &used) != 9)
    return false;
  out.smem = smem;
  const char* p = line.c_str() + tab + 1 + used;
  for (auto f : ProfileCounts::fields()) {
    char* end = nullptr;
    out.counts.*f = std::strtoull(p, &end, 10);
    if (end == p) return false;
    p = end;
  }
  return true;
}

std::uint64_t ProfileCounts::memory_requests() const {
  return global_ld_requests + global_st_requests + global_atom_requests + ldgsts_requests + shared_ld_requests +
         shared_st_requests + shared_atom_requests;
}

void profile_begin(const ProfileOptions& options) {
  std::lock_guard lock(detail::session_mutex);
  delete detail::session;
  detail::session = new detail::Session();
  detail::session->options = options;
  detail::session->l2.reset(options.l2_bytes);
}

std::vector<LaunchProfile> profile_end() {
  std::lock_guard lock(detail::session_mutex);
  if (!detail::session) return {};
  detail::Session* s = detail::session;
  detail::session = nullptr;
  if (s->l2.enabled()) s->l2.write_back_all(s->launches);
  std::vector<LaunchProfile> out = std::move(s->launches);
  delete s;
  return out;
}

bool profiling() {
  std::lock_guard lock(detail::session_mutex);
  return detail::session != nullptr;
}

ProfileOptions profile_options() {
  std::lock_guard lock(detail::session_mutex);
  return detail::session ? detail::session->options : ProfileOptions{};
}

void profile_add(const std::vector<LaunchProfile>& launches) {
  std::lock_guard lock(detail::session_mutex);
  if (detail::session) detail::session->launches.insert(detail::session->launches.end(), launches.begin(), launches.end());
}

const std::vector<MetricDefinition>& profile_metric_definitions() {
  static const std::vector<MetricDefinition> d = {
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "global load instructions (warp-level) with at least one active lane"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "distinct 32-byte sectors those loads' active lanes touch, summed over instructions"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "global store instructions"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sectors of the global stores"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "global atomic instructions (ncu splits those whose result is unused into op_red)"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum", "sectors of the global atomics"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum", "cp.async instructions (LDGSTS), global side"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", "sectors the cp.async instructions read"},
      {"sim__ldgsts_bytes.sum", "bytes the cp.async instructions copy"},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared-memory load wavefronts: per phase, the most distinct 4-byte words one bank serves"},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "shared-memory store wavefronts"},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "load wavefronts beyond one per active phase"},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "store wavefronts beyond one per active phase"},
      {"smsp__inst_executed_op_shared_atom.sum", "shared-memory atomic instructions"},
      {"smsp__inst_executed_op_ldsm.sum", "ldmatrix instructions"},
      {"sim__ldsm_bytes.sum", "bytes the ldmatrix instructions read (16 per row address)"},
      {"sim__ldsm_bank_conflicts.sum", "ldmatrix wavefronts beyond one per 8-row phase"},
      {"sm__inst_executed_pipe_tensor_op_hmma.sum", "mma.sync f16/bf16 instructions (warp-level)"},
      {"sm__inst_executed_pipe_tensor_op_imma.sum", "mma.sync s8 instructions"},
      {"sim__inst_executed_mma_fp8.sum", "mma.sync fp8 (e4m3, e5m2) instructions"},
      {"sm__inst_executed_pipe_tensor_op_gmma.sum", "wgmma.mma_async instructions, warp-level (4 per warpgroup instruction)"},
      {"sim__tensor_flops.sum", "FLOPs (OPs for s8) of the mma and wgmma instructions: 2·m·n·k each"},
      {"sim__tma_ld_requests.sum", "TMA and bulk loads (cp.async.bulk[.tensor] global -> shared), one thread's instruction each"},
      {"sim__tma_ld_bytes.sum", "bytes those loads read inside the tensor (out-of-bounds elements are zero-filled, not read)"},
      {"sim__tma_st_requests.sum", "TMA and bulk stores (shared -> global)"},
      {"sim__tma_st_bytes.sum", "bytes those stores write inside the tensor"},
      {"sim__block_barriers.sum", "block barriers (__syncthreads and its _count, _and, _or forms): per barrier, the warps with a thread at it"},
      {"sim__sectors_per_global_request.ratio", "global load+store sectors over their requests (4 is a coalesced 4-byte warp access)"},
      {"sim__bank_conflicts_per_shared_request.ratio", "shared load+store bank conflicts over their requests"},
      {"sim__active_lanes_per_memory_inst.ratio", "active lanes per global or shared memory instruction (32: no divergence)"},
      {"model__dram_bytes_read.sum", "modelled: sectors read from DRAM by an LRU L2 of the GPU's size, empty at the start"},
      {"model__dram_bytes_write.sum", "modelled: dirty sectors the L2 writes back (on eviction or at the end)"},
  };
  return d;
}

std::vector<Metric> profile_metrics(const ProfileCounts& c, double k) {
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double gl_req = double(c.global_ld_requests + c.global_st_requests);
  const double conflicts_ld = double(c.shared_ld_wavefronts - c.shared_ld_ideal);
  const double conflicts_st = double(c.shared_st_wavefronts - c.shared_st_ideal);
  const std::vector<double> values = {
      k * double(c.global_ld_requests),
      k * double(c.global_ld_sectors),
      k * double(c.global_st_requests),
      k * double(c.global_st_sectors),
      k * double(c.global_atom_requests),
      k * double(c.global_atom_sectors),
      k * double(c.ldgsts_requests),
      k * double(c.ldgsts_sectors),
      k * double(c.ldgsts_bytes),
      k * double(c.shared_ld_wavefronts),
      k * double(c.shared_st_wavefronts),
      k * conflicts_ld,
      k * conflicts_st,
      k * double(c.shared_atom_requests),
      k * double(c.ldsm_requests),
      k * double(c.ldsm_bytes),
      k * double(c.ldsm_wavefronts - c.ldsm_ideal),
      k * double(c.mma_f16),
      k * double(c.mma_s8),
      k * double(c.mma_f8),
      k * double(c.wgmma_lanes) / 32,
      k * double(c.tensor_flops),
      k * double(c.tma_ld_requests),
      k * double(c.tma_ld_bytes),
      k * double(c.tma_st_requests),
      k * double(c.tma_st_bytes),
      k * double(c.block_barriers),
      ratio(double(c.global_ld_sectors + c.global_st_sectors), gl_req),
      ratio(conflicts_ld + conflicts_st, double(c.shared_ld_requests + c.shared_st_requests)),
      ratio(double(c.memory_lanes), double(c.memory_requests())),
      k * double(c.dram_read_bytes),
      k * double(c.dram_write_bytes),
  };
  std::vector<Metric> out;
  const auto& defs = profile_metric_definitions();
  for (std::size_t i = 0; i < defs.size(); ++i) out.push_back(Metric{defs[i].name, values[i]});
  return out;
}

}  // namespace kl::sim
