// Hopper's asynchronous machinery on the simulator, behind the twins of src/cuda/ptx.h: mbarrier
// phases and transaction counts, TMA tensor maps and their 2-D bulk copies (swizzled, out of
// bounds zero-filled), wgmma.mma_async with shared-memory matrix descriptors, and the checks the
// hardware leaves to the programmer (a whole warpgroup, a fence before the mma, waits on the
// right phase). What each instruction does follows the PTX ISA (sections "mbarrier",
// "cp.async.bulk.tensor", "Asynchronous Warpgroup Level Matrix Multiply-Accumulate") and the
// driver API's cuTensorMapEncodeTiled.
//
// Asynchrony is kept where a wrong program would notice it: a TMA load lands when a thread
// waits on its mbarrier (its destination holds 0xFF bytes until then), a wgmma reads shared
// memory and writes its accumulators at the wgmma.wait_group that covers it, a TMA store reads
// shared memory at the cp.async.bulk.wait_group that covers it.
#pragma once
#include <cuda.h>

#include <array>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace kl::sim::hopper {

using Site = kl::sim::Site;
[[noreturn]] inline void fault(const std::string& what, const Site& site) { kl::sim::detail::fault(what.c_str(), site); }

// ---- mbarrier -------------------------------------------------------------------------------
// The 8 bytes hold: bits 0-19 arrivals pending in this phase, 20-39 the expected count, 40-61 the
// transaction count (signed), 62 set only in never-initialised (0xFF-poisoned) memory, 63 the
// phase's parity.
struct Mbarrier {
  unsigned pending, expected, parity;
  long long tx;
  bool uninitialised;
};
inline Mbarrier mbar_read(const void* bar) {
  std::uint64_t v;
  std::memcpy(&v, bar, 8);
  long long tx = static_cast<long long>(v >> 40 & 0x3FFFFF);
  if (tx & 0x200000) tx -= 0x400000;
  return {unsigned(v & 0xFFFFF), unsigned(v >> 20 & 0xFFFFF), unsigned(v >> 63), tx, (v >> 62 & 1) != 0};
}
inline void mbar_write(void* bar, const Mbarrier& m) {
  const std::uint64_t v = std::uint64_t(m.pending) | std::uint64_t(m.expected) << 20 |
                          (std::uint64_t(m.tx) & 0x3FFFFF) << 40 | std::uint64_t(m.parity) << 63;
  std::memcpy(bar, &v, 8);
}
inline std::string mbar_describe(const void* bar) {
  const Mbarrier m = mbar_read(bar);
  if (m.uninitialised) return "it was never initialised (mbarrier.init)";
  return std::to_string(m.pending) + " of " + std::to_string(m.expected) + " arrivals pending, " + std::to_string(m.tx) +
         " transaction bytes outstanding";
}
// Out of line: inlined into a kernel's loop, GCC 12 raises -Warray-bounds false positives on the string concatenation.
[[noreturn, gnu::cold, gnu::noinline]] inline void fault_after(const char* what, const char* rest, const Site& site) {
  fault(std::string(what) + rest, site);
}
inline Mbarrier mbar_checked(const void* bar, const char* what, const Site& site) {
  if (reinterpret_cast<std::uintptr_t>(bar) % 8) fault_after(what, " on an mbarrier not 8-byte aligned", site);
  const Mbarrier m = mbar_read(bar);
  if (m.uninitialised) fault_after(what, " on an mbarrier never initialised (mbarrier.init)", site);
  return m;
}
// The phase completes when its arrivals and its transaction bytes are all in.
inline void mbar_settle(void* bar, Mbarrier m) {
  if (m.pending == 0 && m.tx == 0) m.parity ^= 1u, m.pending = m.expected;
  mbar_write(bar, m);
}
KL_SIM_TWIN void mbar_init(void* bar, unsigned count, const Site& site) {
  if (reinterpret_cast<std::uintptr_t>(bar) % 8) fault("mbarrier.init on an address not 8-byte aligned", site);
  if (count == 0 || count >= (1u << 20)) fault("mbarrier.init with count " + std::to_string(count) + ": 1 to 2^20-1", site);
  mbar_write(bar, {count, count, 0, 0, false});
}
// mbarrier.arrive(.expect_tx) with `count` arrivals: the state before the arrival is the token.
KL_SIM_TWIN std::uint64_t mbar_arrive(void* bar, unsigned tx_bytes, const char* what, const Site& site, unsigned count = 1) {
  std::uint64_t token;
  std::memcpy(&token, bar, 8);
  Mbarrier m = mbar_checked(bar, what, site);
  if (count == 0 || m.pending < count) fault_after(what, ": more arrivals than the mbarrier's count in this phase", site);
  m.tx += tx_bytes;
  m.pending -= count;
  mbar_settle(bar, m);
  return token;
}
// mbarrier.arrive_drop: one arrival now, and one fewer expected in every later phase.
KL_SIM_TWIN void mbar_arrive_drop(void* bar, const Site& site) {
  Mbarrier m = mbar_checked(bar, "mbarrier.arrive_drop", site);
  if (m.pending == 0 || m.expected == 0) fault("mbarrier.arrive_drop: more arrivals than the mbarrier's count in this phase", site);
  --m.expected;
  --m.pending;
  mbar_settle(bar, m);
}
KL_SIM_TWIN void mbar_expect_tx(void* bar, unsigned tx_bytes, const Site& site) {
  Mbarrier m = mbar_checked(bar, "mbarrier.expect_tx", site);
  m.tx += tx_bytes;
  mbar_write(bar, m);
}
inline void mbar_complete_tx(void* bar, unsigned tx_bytes) {
  Mbarrier m = mbar_read(bar);
  m.tx -= tx_bytes;
  mbar_settle(bar, m);
}
// The phase of parity `parity` has completed once the barrier has moved to the other parity. The
// copies bound to the barrier land as late as they may: once all arrivals are in and only their
// bytes are outstanding. A phase that completes without them (their bytes never expected) leaves
// them queued, and the reader sees 0xFF bytes.
inline bool mbar_phase_done(const void* bar, unsigned parity) {
  const Mbarrier m = mbar_read(bar);
  if (m.parity != (parity & 1u)) return true;
  if (m.pending != 0) return false;
  kl::sim::detail::land_bulk(bar);
  return mbar_read(bar).parity != (parity & 1u);
}
// mbarrier.try_wait.parity: lands the TMA copies bound to the barrier, then waits (a scheduling
// point: the producer runs) until the phase completes; never gives up, so the caller's retry
// loop runs once. A phase that can never complete is a deadlock naming the barrier.
KL_SIM_TWIN bool mbar_try_wait(const void* bar, unsigned parity, const Site& site) {
  mbar_checked(bar, "mbarrier.try_wait.parity", site);
  kl::sim::detail::mbarrier_wait(bar, parity, {mbar_phase_done, mbar_describe}, "mbarrier.try_wait.parity", site);
  return true;
}

// ---- swizzled shared memory -----------------------------------------------------------------
// Swizzle modes as wgmma descriptors number them: 0 none, 1 128-byte, 2 64-byte, 3 32-byte. The
// 16-byte chunk bits [4, 4+b) of a shared address are XORed with bits [7, 7+b), b = 3, 2, 1: within
// each 8 x (swizzle width) atom, row r's chunks are permuted by r (128 B), r/2 (64 B), r/4 (32 B).
inline std::uintptr_t swizzle(std::uintptr_t address, unsigned mode) {
  const unsigned bits = mode == 1 ? 3 : mode == 2 ? 2 : mode == 3 ? 1 : 0;
  const std::uintptr_t mask = (std::uintptr_t(1) << bits) - 1;
  return address ^ ((address >> 7 & mask) << 4);
}
// The host pointer of byte `offset` of a tile at `base`, swizzled with `mode`: by its shared address
// in dynamic shared memory (the callers have checked that the tile lies in the window); by its host
// address in static shared memory, aligned as the program declared it.
inline unsigned char* swizzled(const void* base, std::uintptr_t offset, unsigned mode) {
  const std::uintptr_t a = kl::sim::detail::shared_address(base) + offset;
  if (void* p = kl::sim::detail::dynamic_shared_at(swizzle(a, mode), 1)) return static_cast<unsigned char*>(p);
  return reinterpret_cast<unsigned char*>(swizzle(reinterpret_cast<std::uintptr_t>(base) + offset, mode));
}

// ---- TMA: tensor maps and 2-D bulk tensor copies ---------------------------------------------
// The simulator's tensor map, stored in the opaque CUtensorMap.
struct TensorMap {
  std::uint64_t magic;
  const void* base;
  unsigned rank, element_bytes, swizzle_mode;  // swizzle_mode numbered as the descriptors (1 = 128 B)
  std::uint64_t dims[3], strides[3];           // strides in bytes; strides[0] = element size
  unsigned box[3];
};
inline constexpr unsigned kMaxRank = 3;  // the simulated tensor maps (the driver's go to 5)
inline constexpr std::uint64_t kTensorMapMagic = 0x6b6c2d746d6170ull;  // "kl-tmap"
static_assert(sizeof(TensorMap) <= sizeof(CUtensorMap), "the twin's tensor map fits CUtensorMap");

inline const TensorMap& tensor_map(const void* p, const char* what, const Site& site) {
  const TensorMap* m = static_cast<const TensorMap*>(p);
  if (reinterpret_cast<std::uintptr_t>(p) % 64 || m->magic != kTensorMapMagic)
    fault(std::string(what) + " with a tensor map that cuTensorMapEncodeTiled did not make (or not 64-byte aligned)", site);
  return *m;
}

inline bool in_dynamic_shared(const void* p) { return kl::sim::detail::dynamic_shared_at(kl::sim::detail::shared_address(p), 1); }

inline std::size_t box_bytes(const TensorMap& m) {
  std::size_t bytes = m.element_bytes;
  for (unsigned i = 0; i < m.rank; ++i) bytes *= m.box[i];
  return bytes;
}

// The shared-memory box lies in the block's dynamic shared memory (static shared memory is the
// program's to size) and is aligned as its swizzle needs.
inline void tma_check_smem(const void* smem, const TensorMap& m, const char* what, const Site& site) {
  const std::uintptr_t at = kl::sim::detail::shared_address(smem);
  if (in_dynamic_shared(smem) && !kl::sim::detail::dynamic_shared_at(at, box_bytes(m)))
    fault(std::string(what) + " with a box that runs past the block's dynamic shared memory", site);
  const std::uintptr_t align = m.swizzle_mode == 0 ? 128 : m.swizzle_mode == 1 ? 1024 : m.swizzle_mode == 2 ? 512 : 256;
  if (at % align)
    fault(std::string(what) + " with a shared-memory box not " + std::to_string(align) + "-byte aligned (as its swizzle needs)", site);
}

inline const TensorMap& tensor_map_of_rank(const void* map, unsigned rank, const char* what, const Site& site) {
  const TensorMap& m = tensor_map(map, what, site);
  if (m.rank != rank)
    fault(std::string(what) + " with a tensor map of rank " + std::to_string(m.rank) + " (the instruction's is " + std::to_string(rank) + ")", site);
  return m;
}

// Calls f(smem_offset, global_element_or_null) for each element of the box at `coords`, in shared
// memory order (dimension 0 fastest); the global element is null outside the tensor.
template <class F>
void for_each_box_element(const TensorMap& m, const int* coords, F f) {
  const unsigned b1 = m.rank > 1 ? m.box[1] : 1, b2 = m.rank > 2 ? m.box[2] : 1;
  std::uintptr_t offset = 0;
  for (unsigned z = 0; z < b2; ++z)
    for (unsigned y = 0; y < b1; ++y)
      for (unsigned x = 0; x < m.box[0]; ++x, offset += m.element_bytes) {
        const unsigned at[3] = {x, y, z};
        const char* g = static_cast<const char*>(m.base);
        for (unsigned i = 0; i < m.rank && g; ++i) {
          const long long c = coords[i] + static_cast<long long>(at[i]);
          g = c < 0 || c >= static_cast<long long>(m.dims[i]) ? nullptr : g + c * m.strides[i];
        }
        f(offset, g);
      }
}

// The profiler's count of one TMA instruction and the tensor bytes it moves.
inline void profile_box(const TensorMap& m, const int* coords, bool store) {
  kl::sim::detail::profile_bulk(nullptr, 0, store, true);
  for_each_box_element(m, coords, [&](std::uintptr_t, const char* g) {
    if (g) kl::sim::detail::profile_bulk(g, m.element_bytes, store, false);
  });
}

// cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes: the box at
// `coords` into shared memory, elements outside the tensor as zeros; its bytes (the whole box)
// complete transactions on bar when it lands.
KL_SIM_TWIN void tma_load(void* smem, const void* map, unsigned rank, const int* coords, void* bar, const char* what, const Site& site) {
  const TensorMap& m = tensor_map_of_rank(map, rank, what, site);
  tma_check_smem(smem, m, what, site);
  mbar_checked(bar, what, site);
  const std::size_t bytes = box_bytes(m);
  std::memset(smem, 0xff, bytes);
  const std::array<int, kMaxRank> c{coords[0], rank > 1 ? coords[1] : 0, rank > 2 ? coords[2] : 0};
  profile_box(m, c.data(), false);
  kl::sim::detail::bulk_async(bar, [m, smem, c, bar, bytes] {
    for_each_box_element(m, c.data(), [&](std::uintptr_t offset, const char* g) {
      unsigned char* dst = swizzled(smem, offset, m.swizzle_mode);
      if (g) std::memcpy(dst, g, m.element_bytes);
      else std::memset(dst, 0, m.element_bytes);
    });
    mbar_complete_tx(bar, unsigned(bytes));
  });
}

// cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group: the box from shared memory to `coords`,
// elements outside the tensor dropped; joins the thread's open bulk group and reads shared memory
// when a cp.async.bulk.wait_group covers it.
KL_SIM_TWIN void tma_store(const void* map, unsigned rank, const int* coords, const void* smem, const char* what, const Site& site) {
  const TensorMap& m = tensor_map_of_rank(map, rank, what, site);
  tma_check_smem(smem, m, what, site);
  const std::array<int, kMaxRank> c{coords[0], rank > 1 ? coords[1] : 0, rank > 2 ? coords[2] : 0};
  profile_box(m, c.data(), true);
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  q.bulk_stores.push_back({[m, smem, c] {
                             for_each_box_element(m, c.data(), [&](std::uintptr_t offset, const char* g) {
                               if (g) std::memcpy(const_cast<char*>(g), swizzled(smem, offset, m.swizzle_mode), m.element_bytes);
                             });
                           },
                           q.bulk_committed});
}

// cp.async.bulk (non-tensor): `bytes` contiguous bytes, multiples of 16 at 16-byte-aligned addresses.
inline void check_bulk(const void* dst, const void* src, std::size_t bytes, const char* what, const Site& site) {
  if (bytes == 0 || bytes % 16 || reinterpret_cast<std::uintptr_t>(dst) % 16 || reinterpret_cast<std::uintptr_t>(src) % 16)
    fault(std::string(what) + " of " + std::to_string(bytes) + " bytes: a non-zero multiple of 16 between 16-byte-aligned addresses", site);
}
// Global -> shared, completing `bytes` transactions on bar when it lands (at a wait on bar);
// the destination holds 0xFF bytes until then.
KL_SIM_TWIN void bulk_load(void* smem, const void* src, std::size_t bytes, void* bar, const char* what, const Site& site) {
  mbar_checked(bar, what, site);
  kl::sim::detail::profile_bulk(src, bytes, false, true);
  std::memset(smem, 0xff, bytes);
  kl::sim::detail::bulk_async(bar, [smem, src, bytes, bar] {
    std::memcpy(smem, src, bytes);
    mbar_complete_tx(bar, unsigned(bytes));
  });
}
// Shared -> global, in the thread's open bulk group.
KL_SIM_TWIN void bulk_store(void* dst, const void* smem, std::size_t bytes) {
  kl::sim::detail::profile_bulk(dst, bytes, true, true);
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  q.bulk_stores.push_back({[dst, smem, bytes] { std::memcpy(dst, smem, bytes); }, q.bulk_committed});
}
inline void bulk_commit() { ++kl::sim::detail::async_copies().bulk_committed; }
// cp.async.bulk.wait_group(.read) n: the stores of every committed group but the newest n land.
KL_SIM_TWIN void bulk_wait(unsigned n) {
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  std::vector<kl::sim::detail::BulkStore> kept;
  for (kl::sim::detail::BulkStore& b : q.bulk_stores)
    if (b.group + n < q.bulk_committed) b.land();
    else kept.push_back(std::move(b));
  q.bulk_stores = std::move(kept);
}

// ---- warpgroup-wide instructions --------------------------------------------------------------
// A warpgroup collective's 128 deposits, read in place until the warpgroup's next collective
// (a copy for each thread was a 128-element allocation at every wgmma).
template <class T>
class GroupDeposits {
 public:
  explicit GroupDeposits(const unsigned char* slots) : slots_(slots) {}
  T operator[](unsigned i) const {
    T v;
    std::memcpy(static_cast<void*>(&v), slots_ + i * kl::sim::detail::kSlotBytes, sizeof(T));
    return v;
  }
  struct iterator {
    const GroupDeposits* deposits;
    unsigned i;
    T operator*() const { return (*deposits)[i]; }
    iterator& operator++() { return ++i, *this; }
    bool operator!=(const iterator& o) const { return i != o.i; }
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, 128}; }

 private:
  const unsigned char* slots_;
};

// Every thread of the caller's warpgroup makes the call; each gets all 128 deposits.
template <class T>
GroupDeposits<T> warpgroup_exchange(const T& mine, const char* what, const Site& site) {
  static_assert(sizeof(T) <= kl::sim::detail::kSlotBytes, "a warpgroup exchange deposits at most kSlotBytes per thread");
  static_assert(std::is_trivially_copyable_v<T>, "a warpgroup exchange deposits plain values");
  return GroupDeposits<T>(kl::sim::detail::group_collective(128, &mine, sizeof(T), what, site));
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 n: the whole warpgroup, one n in 24..256, a multiple of 8.
KL_SIM_TWIN void setmaxnreg(unsigned n, const char* what, const Site& site) {
  if (n < 24 || n > 256 || n % 8) fault(std::string(what) + " " + std::to_string(n) + ": 24 to 256, a multiple of 8", site);
  for (unsigned v : warpgroup_exchange(n, what, site))
    if (v != n) fault(std::string(what) + ": the warpgroup's threads asked for different counts (" + std::to_string(n) +
                          " and " + std::to_string(v) + ")", site);
}

// ---- wgmma ------------------------------------------------------------------------------------
// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in
// bits 0-13, leading-dimension byte offset >> 4 in 16-29, stride-dimension byte offset >> 4 in
// 32-45, swizzle mode in 62-63 (0 none, 1 128 B, 2 64 B, 3 32 B).
struct Descriptor {
  std::uintptr_t start, lbo, sbo;
  unsigned swizzle_mode;
};
inline Descriptor decode(std::uint64_t d) {
  return {std::uintptr_t(d & 0x3FFF) << 4, std::uintptr_t(d >> 16 & 0x3FFF) << 4, std::uintptr_t(d >> 32 & 0x3FFF) << 4,
          unsigned(d >> 62)};
}
// The shared address of element (mn, k) of a K-major operand (row mn of A, column mn of B), 2-byte
// elements. No swizzle: 8x16-byte core matrices, SBO apart along M/N and LBO apart along K.
// Swizzled: rows of the swizzle width, 8-row atoms SBO apart, the chunks XOR-permuted.
inline std::uintptr_t operand_address(const Descriptor& d, unsigned mn, unsigned k) {
  const std::uintptr_t kb = 2 * k;
  std::uintptr_t a;
  if (d.swizzle_mode == 0) {
    a = d.start + mn / 8 * d.sbo + kb / 16 * d.lbo + mn % 8 * 16 + kb % 16;
  } else {
    const std::uintptr_t width = d.swizzle_mode == 1 ? 128 : d.swizzle_mode == 2 ? 64 : 32;
    a = swizzle(d.start + mn / 8 * d.sbo + mn % 8 * width + kb, d.swizzle_mode);
  }
  return a;
}

// The shared address of element (mn, k) of an MN-major operand (B with imm-trans-b: N contiguous).
// No swizzle: 8 x 16-byte core matrices whose 16 bytes run along MN, the 8 k rows 16 bytes apart,
// SBO apart along MN and LBO apart along K. Swizzled: a row of the swizzle width holds W/2
// consecutive MN elements of one k, 8 k rows per atom, atoms SBO apart along K and LBO apart along MN.
inline std::uintptr_t operand_address_mn(const Descriptor& d, unsigned mn, unsigned k) {
  std::uintptr_t a;
  if (d.swizzle_mode == 0) {
    a = d.start + mn / 8 * d.sbo + k / 8 * d.lbo + k % 8 * 16 + mn % 8 * 2;
  } else {
    const std::uintptr_t width = d.swizzle_mode == 1 ? 128 : d.swizzle_mode == 2 ? 64 : 32, per_row = width / 2;
    a = swizzle(d.start + mn / per_row * d.lbo + k / 8 * d.sbo + k % 8 * width + mn % per_row * 2, d.swizzle_mode);
  }
  return a;
}

// The calling thread's share of a wgmma: rows 16w + g and 16w + g + 8 of A (line j = 0, 1) and
// columns 8(j/2) + 2t + j%2 of B (line j < N/4), lane 4g + t of warp w of the warpgroup; its
// accumulator d[i] takes A's line (i%4)/2 and B's line 2(i/4) + i%2. The 128 threads' shares
// together cover both operands.
inline unsigned a_line_row(unsigned tid, unsigned j) { return 16 * (tid / 32) + tid % 32 / 4 + 8 * j; }
inline unsigned b_line_col(unsigned tid, unsigned j) { return 8 * (j / 2) + 2 * (tid % 4) + j % 2; }

// The thread's Lines x K elements of an operand, `bytes` each, in the block's dynamic shared memory:
// element (j, k) is element k % run of run (j*K + k) / run, whose `run` elements lie side by side (a
// K-major operand's 16-byte chunk, which a swizzle moves whole; 1 for MN-major).
template <unsigned Lines, unsigned K>
struct OperandShare {
  std::array<std::uint32_t, Lines * K> start;  // each run's offset in dynamic shared memory
  unsigned run, bytes;
  // out[j*K + k] = value(the bytes of element (j, k)).
  template <class Value, class Out>
  void read(const unsigned char* smem, Value value, Out* out) const {
    const unsigned n = run, runs = Lines * K / n, step = bytes;
    for (unsigned r = 0; r < runs; ++r)
      for (unsigned e = 0; e < n; ++e) out[r * n + e] = value(smem + start[r] + e * step);
  }
};
// Where the thread's share lies, element (j, k) at shared address address(mn_of(j), k): found once at
// issue, a fault if any of it lies outside the block's dynamic shared memory.
template <unsigned Lines, unsigned K, class MnOf, class Address>
OperandShare<Lines, K> operand_share(unsigned bytes, unsigned run, MnOf mn_of, Address address, const char* operand,
                                     const char* what, const Site& site) {
  const kl::sim::detail::SharedWindow window = kl::sim::detail::dynamic_shared_window();
  OperandShare<Lines, K> share;
  share.run = run, share.bytes = bytes;
  for (unsigned j = 0; j < Lines; ++j)
    for (unsigned k = 0; k < K; k += run) {
      const void* p = window.at(address(mn_of(j), k), run * bytes);
      if (!p)
        fault(std::string(what) + ": the " + operand + " descriptor names bytes outside the block's dynamic shared memory "
                                  "(the simulator's wgmma reads extern __shared__ tiles only)", site);
      share.start[(j * K + k) / run] = std::uint32_t(static_cast<const unsigned char*>(p) - window.host);
    }
  return share;
}

struct WgmmaCall {
  std::uint64_t desc_a, desc_b;
  std::uint32_t a[4];  // A's fragment when A comes from registers
  int scale_d;
  bool a_in_registers;
  bool b_mn_major;  // imm-trans-b: B's N elements contiguous
};

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}: D (64 x N, f32, N/2 per thread) =
// A (64 x 16) B (16 x N) + (scale_d ? D : 0). Issue checks the warpgroup, its fence and the
// operands; the multiply runs at the wgmma.wait_group that covers it.
//   D:  thread (warp w, lane g*4+t), d[i]: row 16w + g + 8((i%4)/2), column 8(i/4) + 2t + i%2
//   A from registers: a[r], half e: row 16w + g + 8(r&1), column 2t + e + 8(r>>1) (as mma.sync's A)
template <int N, class Decode>
KL_SIM_TWIN void wgmma(float* d, const WgmmaCall& call, Decode decode_element, const char* what, const Site& site) {
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  if (!q.wgmma_fenced)
    fault(std::string(what) + " with no wgmma.fence before it since the warpgroup's last wgmma.wait_group (or the kernel's start)",
          site);
  const GroupDeposits<WgmmaCall> all = warpgroup_exchange(call, what, site);
  for (const WgmmaCall& o : all)
    if (o.desc_a != call.desc_a || o.desc_b != call.desc_b || o.scale_d != call.scale_d)
      fault(std::string(what) + ": the warpgroup's threads passed different descriptors or scale-d", site);
  const unsigned tid = kl::sim::detail::thread_rank() % 128;
  const Descriptor da = decode(call.desc_a), db = decode(call.desc_b);
  const auto a_row = [tid](unsigned j) { return a_line_row(tid, j); };
  const auto b_col = [tid](unsigned j) { return b_line_col(tid, j); };
  OperandShare<2, 16> a_at{};
  std::array<float, 32> a_held{};  // A from registers: its values at issue
  if (!call.a_in_registers) {
    a_at = operand_share<2, 16>(2, 8, a_row, [&](unsigned mn, unsigned k) { return operand_address(da, mn, k); }, "A", what, site);
  } else {
    // Element (row, k) is in register (row%16)/8 + 2(k/8) of the thread of warp row/16, g = row%8, t = (k%8)/2.
    for (unsigned j = 0; j < 2; ++j)
      for (unsigned k = 0; k < 16; ++k) {
        const unsigned row = a_row(j), owner = 32 * (row / 16) + 4 * (row % 8) + (k % 8) / 2, r = (row % 16) / 8 + 2 * (k / 8);
        a_held[j * 16 + k] = decode_element(all[owner].a[r] >> (16 * (k % 2)) & 0xFFFF);
      }
  }
  const OperandShare<N / 4, 16> b_at = operand_share<N / 4, 16>(
      2, call.b_mn_major ? 1 : 8, b_col,
      [&](unsigned mn, unsigned k) { return call.b_mn_major ? operand_address_mn(db, mn, k) : operand_address(db, mn, k); }, "B",
      what, site);
  kl::sim::detail::profile_note(kl::sim::detail::Counted::wgmma, nullptr, unsigned(N / 8), kl::sim::detail::site_key(site));
  q.wgmma.push_back({[=] {
                       const unsigned char* smem = kl::sim::detail::dynamic_shared_window().host;
                       const auto element = [&](const unsigned char* p) {
                         std::uint16_t bits;
                         std::memcpy(&bits, p, 2);
                         return decode_element(bits);
                       };
                       std::array<float, 32> av = a_held;
                       if (!call.a_in_registers) a_at.read(smem, element, av.data());
                       std::array<float, N / 4 * 16> bv;
                       b_at.read(smem, element, bv.data());
                       // d[4c + 2h + p] adds A line h times B line 2c + p, its 16 products in k
                       // order; k outermost, so that the N/2 sums proceed side by side.
                       std::array<float, N / 2> acc;
                       for (int i = 0; i < N / 2; ++i) acc[i] = call.scale_d ? d[i] : 0.0f;
                       for (unsigned k = 0; k < 16; ++k) {
                         const float a0 = av[k], a1 = av[16 + k];
                         for (unsigned c = 0; c < N / 8; ++c) {
                           const float b0 = bv[2 * c * 16 + k], b1 = bv[(2 * c + 1) * 16 + k];
                           float* x = &acc[4 * c];
                           x[0] = x[0] + a0 * b0, x[1] = x[1] + a0 * b1, x[2] = x[2] + a1 * b0, x[3] = x[3] + a1 * b1;
                         }
                       }
                       for (int i = 0; i < N / 2; ++i) d[i] = acc[i];
                     },
                     q.wgmma_committed});
}

KL_SIM_TWIN void wgmma_fence(const Site& site) {
  warpgroup_exchange(0, "wgmma.fence", site);
  kl::sim::detail::async_copies().wgmma_fenced = true;
}
KL_SIM_TWIN void wgmma_commit(const Site& site) {
  warpgroup_exchange(0, "wgmma.commit_group", site);
  ++kl::sim::detail::async_copies().wgmma_committed;
}
// wgmma.wait_group n: the wgmmas of every committed group but the newest n run, in issue order.
// Each thread runs its part before the warpgroup's rendezvous, so that when any thread leaves the
// wait (and perhaps releases the stage to a producer), the whole warpgroup has read its operands.
KL_SIM_TWIN void wgmma_wait(unsigned n, const Site& site) {
  kl::sim::detail::AsyncCopies& q = kl::sim::detail::async_copies();
  std::vector<kl::sim::detail::PendingWgmma> kept;
  for (kl::sim::detail::PendingWgmma& p : q.wgmma)
    if (p.group + n < q.wgmma_committed) p.run();
    else kept.push_back(std::move(p));
  q.wgmma = std::move(kept);
  q.wgmma_fenced = false;
  warpgroup_exchange(n, "wgmma.wait_group", site);
}

}  // namespace kl::sim::hopper

// The shared-state-space address of a generic pointer (what descriptors and shared:: PTX operands take).
inline std::size_t __cvta_generic_to_shared(const void* p) { return kl::sim::detail::shared_address(p); }

// The driver's cuTensorMapEncodeTiled on the simulator: the same checks, the simulator's map.
inline CUresult kl_sim_cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                              const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                              const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                              CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  static const unsigned kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (!map || !address || !dims || !box || rank == 0 || rank > kl::sim::hopper::kMaxRank || unsigned(type) >= sizeof kBytes / sizeof kBytes[0] ||
      interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B ||
      reinterpret_cast<std::uintptr_t>(map) % 64 || reinterpret_cast<std::uintptr_t>(address) % 16)
    return CUDA_ERROR_INVALID_VALUE;
  kl::sim::hopper::TensorMap m{};
  m.magic = kl::sim::hopper::kTensorMapMagic;
  m.base = address, m.rank = rank, m.element_bytes = kBytes[type];
  m.swizzle_mode = swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 1 : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 2 : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 3 : 0;
  m.strides[0] = m.element_bytes;
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32) || box[i] == 0 || box[i] > 256) return CUDA_ERROR_INVALID_VALUE;
    if (element_strides && element_strides[i] != 1) return CUDA_ERROR_INVALID_VALUE;  // strided boxes: not simulated
    m.dims[i] = dims[i], m.box[i] = box[i];
    if (i > 0) {
      if (!strides || strides[i - 1] % 16 || strides[i - 1] >= (1ull << 40)) return CUDA_ERROR_INVALID_VALUE;
      m.strides[i] = strides[i - 1];
    }
  }
  const unsigned inner = box[0] * m.element_bytes, width[] = {0, 128, 64, 32};
  if (inner % 16 || (m.swizzle_mode && inner > width[m.swizzle_mode])) return CUDA_ERROR_INVALID_VALUE;
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, &m, sizeof m);
  return CUDA_SUCCESS;
}
#define cuTensorMapEncodeTiled kl_sim_cuTensorMapEncodeTiled

// cudaGetDriverEntryPoint(ByVersion): the driver functions the simulator has (cuTensorMapEncodeTiled);
// for any other the query answers "symbol not found", as for a driver that lacks it, and says so.
inline cudaError_t kl_sim_cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                           cudaDriverEntryPointQueryResult* status = nullptr) {
  if (!symbol || !fn) return cudaErrorInvalidValue;
  const bool known = std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0;
  *fn = known ? reinterpret_cast<void*>(&kl_sim_cuTensorMapEncodeTiled) : nullptr;
  if (!known) std::fprintf(stderr, "kernelab sim: the driver function %s is not simulated\n", symbol);
  if (status) *status = known ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
inline cudaError_t kl_sim_cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* status = nullptr) {
  return kl_sim_cudaGetDriverEntryPointByVersion(symbol, fn, CUDART_VERSION, flags, status);
}
#undef cudaGetDriverEntryPoint
#undef cudaGetDriverEntryPointByVersion
#define cudaGetDriverEntryPoint kl_sim_cudaGetDriverEntryPoint
#define cudaGetDriverEntryPointByVersion kl_sim_cudaGetDriverEntryPointByVersion
