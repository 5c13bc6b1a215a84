// cooperative_groups on the simulator: thread_block, tiled_partition (static and dynamic
// sizes 32..1), coalesced_threads, and reduce/inclusive_scan/exclusive_scan. A tile's
// collectives are warp collectives on the tile's lanes (its mask), checked the same way.
// src/sim/shadow/ supplies <cooperative_groups.h> and its sub-headers as this file.
#pragma once

#include "warp.h"

namespace cooperative_groups {

class thread_block {
 public:
  void sync(const kl::sim::Site& w = kl::sim::Site::current()) const { __syncthreads(w); }
  unsigned thread_rank() const { return kl::sim::detail::thread_rank(); }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned long long num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 dim_threads() const { return blockDim; }
  dim3 group_dim() const { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }

// The grid as a group for its ranks and sizes (grid-stride loops); grid.sync() needs every block
// resident at once, which the simulator does not do: it stops the kernel saying so.
class grid_group {
 public:
  unsigned long long thread_rank() const {
    const unsigned long long block = blockIdx.x + 1ull * gridDim.x * (blockIdx.y + 1ull * gridDim.y * blockIdx.z);
    return block * (blockDim.x * blockDim.y * blockDim.z) + kl::sim::detail::thread_rank();
  }
  unsigned long long size() const {
    return 1ull * gridDim.x * gridDim.y * gridDim.z * (blockDim.x * blockDim.y * blockDim.z);
  }
  unsigned long long num_threads() const { return size(); }
  unsigned long long block_rank() const { return blockIdx.x + 1ull * gridDim.x * (blockIdx.y + 1ull * gridDim.y * blockIdx.z); }
  unsigned long long num_blocks() const { return 1ull * gridDim.x * gridDim.y * gridDim.z; }
  dim3 group_dim() const { return gridDim; }
  bool is_valid() const { return false; }  // not a cooperative launch
  [[noreturn]] void sync(const kl::sim::Site& w = kl::sim::Site::current()) const {
    kl::sim::detail::fault("grid_group::sync() (a grid-wide barrier: cooperative launches are not simulated)", w);
  }
};
inline grid_group this_grid() { return {}; }

namespace detail {
// The lanes of a group within its warp (`mask`), and this thread's place among them. Lanes
// past the end of the block do not exist, so a partial warp's tiles leave them out.
class lane_group {
 public:
  explicit lane_group(unsigned mask) : mask_(mask & existing()) {}
  unsigned kl_mask() const { return mask_; }
  unsigned size() const { return unsigned(__builtin_popcount(mask_)); }
  unsigned long long num_threads() const { return size(); }
  unsigned thread_rank() const { return rank_of(kl::sim::detail::lane()); }
  void sync(const kl::sim::Site& w = kl::sim::Site::current()) const { __syncwarp(mask_, w); }
  int any(int p, const kl::sim::Site& w = kl::sim::Site::current()) const { return __any_sync(mask_, p, w); }
  int all(int p, const kl::sim::Site& w = kl::sim::Site::current()) const { return __all_sync(mask_, p, w); }
  // Bit r of the result is the group's rank r.
  unsigned ballot(int p, const kl::sim::Site& w = kl::sim::Site::current()) const {
    return compress(__ballot_sync(mask_, p, w));
  }
  template <class T>
  unsigned match_any(T v, const kl::sim::Site& w = kl::sim::Site::current()) const {
    return compress(__match_any_sync(mask_, v, w));
  }
  // The value of the group's rank `src` (ranks count the group's lanes in lane order).
  template <class T>
  T shfl(T v, unsigned src, const kl::sim::Site& w = kl::sim::Site::current()) const {
    const auto all = kl::sim::warp_exchange(mask_, v, "thread_group::shfl", w);
    return all[lane_of(src % size())];
  }
  template <class T>
  T shfl_down(T v, unsigned delta, const kl::sim::Site& w = kl::sim::Site::current()) const {
    const auto all = kl::sim::warp_exchange(mask_, v, "thread_group::shfl_down", w);
    const unsigned r = thread_rank() + delta;
    return r < size() ? all[lane_of(r)] : v;
  }
  template <class T>
  T shfl_up(T v, unsigned delta, const kl::sim::Site& w = kl::sim::Site::current()) const {
    const auto all = kl::sim::warp_exchange(mask_, v, "thread_group::shfl_up", w);
    return thread_rank() >= delta ? all[lane_of(thread_rank() - delta)] : v;
  }
  template <class T>
  T shfl_xor(T v, unsigned lane_mask, const kl::sim::Site& w = kl::sim::Site::current()) const {
    const auto all = kl::sim::warp_exchange(mask_, v, "thread_group::shfl_xor", w);
    const unsigned r = thread_rank() ^ lane_mask;
    return r < size() ? all[lane_of(r)] : v;
  }

  unsigned lane_of(unsigned rank) const {  // the lane holding group rank `rank`
    unsigned m = mask_;
    for (unsigned i = 0; i < rank; ++i) m &= m - 1;
    return unsigned(__builtin_ctz(m));
  }
  unsigned rank_of(unsigned lane) const { return unsigned(__builtin_popcount(mask_ & ((1u << lane) - 1u))); }

 private:
  static unsigned existing() {
    const unsigned n = blockDim.x * blockDim.y * blockDim.z, first = kl::sim::detail::thread_rank() & ~31u;
    return n - first >= 32 ? 0xffffffffu : (1u << (n - first)) - 1u;
  }
  unsigned compress(unsigned bits) const {
    unsigned r = 0;
    for (unsigned k = 0, m = mask_; m; ++k, m &= m - 1) r |= (bits >> __builtin_ctz(m) & 1u) << k;
    return r;
  }
  unsigned mask_;
};

inline unsigned tile_mask(unsigned n) {
  const unsigned lane = kl::sim::detail::lane();
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u) << (lane & ~(n - 1));
}
}  // namespace detail

// CUDA's generic group: the whole block (made from a thread_block) or a tile of a runtime
// size (tiled_partition(parent, n), or a thread_block_tile passed as a thread_group).
class thread_group : public detail::lane_group {
 public:
  explicit thread_group(unsigned n) : lane_group(detail::tile_mask(n)), n_(n) {}
  thread_group(const thread_block&) : lane_group(0xffffffffu), n_(0) {}
  void sync(const kl::sim::Site& w = kl::sim::Site::current()) const { n_ ? lane_group::sync(w) : __syncthreads(w); }
  unsigned thread_rank() const { return n_ ? lane_group::thread_rank() : kl::sim::detail::thread_rank(); }
  unsigned size() const { return n_ ? lane_group::size() : blockDim.x * blockDim.y * blockDim.z; }
  unsigned long long num_threads() const { return size(); }
  unsigned meta_group_rank() const { return n_ ? kl::sim::detail::thread_rank() / n_ : 0; }
  unsigned meta_group_size() const { return n_ ? (blockDim.x * blockDim.y * blockDim.z + n_ - 1) / n_ : 1; }

 private:
  unsigned n_;  // the tile's size; 0: the whole block
};

template <unsigned N>
class thread_block_tile : public thread_group {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tiled_partition<N>: N must be a power of 2 up to 32");

 public:
  thread_block_tile() : thread_group(N) {}
  static constexpr unsigned num_threads() { return N; }
  static constexpr unsigned size() { return N; }
};

template <unsigned N, class Parent>
thread_block_tile<N> tiled_partition(const Parent&) {
  return {};
}
template <class Parent>
thread_group tiled_partition(const Parent&, unsigned n) {
  return thread_group(n);
}

class coalesced_group : public detail::lane_group {
 public:
  using lane_group::lane_group;
};
inline coalesced_group coalesced_threads(const kl::sim::Site& w = kl::sim::Site::current()) {
  return coalesced_group(__activemask(w));
}

// The parent's lanes with the same label (sm_70's match.any), and the lanes whose predicate agrees.
template <class Parent>
coalesced_group labeled_partition(const Parent& parent, int label, const kl::sim::Site& w = kl::sim::Site::current()) {
  return coalesced_group(__match_any_sync(parent.kl_mask(), label, w));
}
template <class Parent>
coalesced_group binary_partition(const Parent& parent, bool pred, const kl::sim::Site& w = kl::sim::Site::current()) {
  return coalesced_group(__match_any_sync(parent.kl_mask(), int(pred), w));
}

template <class Group>
void sync(const Group& g) {
  g.sync();
}

template <class T = void> struct plus { constexpr T operator()(const T& a, const T& b) const { return a + b; } };
template <class T = void> struct less { constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T = void> struct greater { constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T = void> struct bit_and { constexpr T operator()(const T& a, const T& b) const { return a & b; } };
template <class T = void> struct bit_or { constexpr T operator()(const T& a, const T& b) const { return a | b; } };
template <class T = void> struct bit_xor { constexpr T operator()(const T& a, const T& b) const { return a ^ b; } };

// Combined in rank order (lane order), so every lane gets the same bits.
template <class Group, class T, class Op>
T reduce(const Group& g, T v, Op op, const kl::sim::Site& w = kl::sim::Site::current()) {
  const auto all = kl::sim::warp_exchange(g.kl_mask(), v, "cooperative_groups::reduce", w);
  unsigned m = g.kl_mask();
  T r = all[__builtin_ctz(m)];
  for (m &= m - 1; m; m &= m - 1) r = op(r, all[__builtin_ctz(m)]);
  return r;
}
template <class Group, class T, class Op = plus<T>>
T inclusive_scan(const Group& g, T v, Op op = {}, const kl::sim::Site& w = kl::sim::Site::current()) {
  const auto all = kl::sim::warp_exchange(g.kl_mask(), v, "cooperative_groups::inclusive_scan", w);
  unsigned m = g.kl_mask() & ((2u << kl::sim::detail::lane()) - 1u);  // lanes up to and including mine
  T r = all[__builtin_ctz(m)];
  for (m &= m - 1; m; m &= m - 1) r = op(r, all[__builtin_ctz(m)]);
  return r;
}
template <class Group, class T, class Op = plus<T>>
T exclusive_scan(const Group& g, T v, Op op = {}, const kl::sim::Site& w = kl::sim::Site::current()) {
  const auto all = kl::sim::warp_exchange(g.kl_mask(), v, "cooperative_groups::exclusive_scan", w);
  unsigned m = g.kl_mask() & ((1u << kl::sim::detail::lane()) - 1u);  // lanes before mine
  if (!m) return T{};
  T r = all[__builtin_ctz(m)];
  for (m &= m - 1; m; m &= m - 1) r = op(r, all[__builtin_ctz(m)]);
  return r;
}

}  // namespace cooperative_groups
