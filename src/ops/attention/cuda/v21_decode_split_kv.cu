// decode v21: the paged KV cache on CUDA cores, two rungs of one kernel. A block takes one
// (sequence, kv head) and up to 32 query rows: the new tokens of every query head of the kv head's
// group (GQA: 8 query heads of Llama-3 70B's kv head read each K and V byte once, not 8 times).
// It walks its keys 32 at a time: K and V rows found through the block table (a page per
// page_size tokens, anywhere in the cache), staged in shared memory (16-byte global loads, rows
// padded to an odd number of words), and the online softmax of v02 per query row. Rows are dealt to
// the warps in turn (row r * 4 + warp) and a warp skips the padding rows: a GQA group of 8 gives
// each warp 2 rows, not warp 0 all 8 while the others multiply zeros (an H200 ran the split-KV rung
// at 3% of its copy rate with 320 shared-memory wavefronts a key, 192 of them the padding's).
//   cuda_paged     one block per (sequence, kv head, 32 rows): at batch 1 and 8 kv heads that is
//                  8 blocks for a GPU of 132 SMs, each walking the whole context alone.
//   cuda_split_kv  flash-decoding: the context split into `splits` ranges, one block each, every
//                  block's O (normalised by its own sum) and LSE to the workspace; `merge` then
//                  weighs each split's O by exp(LSE_s - LSE), LSE = log sum_s exp(LSE_s).
// Decode reads each K and V byte for 2 s_q group FLOPs per element byte: bandwidth-bound, and the
// split is what lets a small batch put every SM's loads in flight.
#include "ops/attention/cuda/attention_common.cuh"
#include "ops/attention/decode.h"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
constexpr int kRows = 32, kKeys = 32, kWarps = 4, kThreads = 32 * kWarps, kRowsPerWarp = kRows / kWarps;
constexpr int kMaxDim = 256, kOutPerLane = kMaxDim / 32;
constexpr int64_t kMinKeysPerSplit = 128;  // below this a split's fixed cost (Q tile, merge) outweighs its keys

struct Shape {
  int heads, group, d, dv, new_tokens, page_size, max_pages;
  float scale;
  int64_t tokens;           // batch * new_tokens
  int64_t keys_per_split;   // a multiple of kKeys
};
struct Cache {
  const int32_t *table, *lens;
};
// Where a block leaves its rows: O and LSE, or (split-KV) its split's normalised O and LSE in fp32.
template <class E> struct Out {
  E* o;
  float* lse;
  float *part_o, *part_lse;  // [splits][tokens * heads][dv], [splits][tokens * heads]
};

template <class E> __host__ __device__ constexpr int pad() { return sizeof(E) == 4 ? 1 : 2; }
template <class E> __host__ __device__ size_t smem_bytes(int d, int dv) {
  return (size_t(kRows + kKeys) * (d + pad<E>()) + size_t(kKeys) * (dv + pad<E>())) * sizeof(E) + size_t(kRows) * kKeys * 4;
}

// Rows [j0, j0 + 32) of kv head g of sequence b, `width` long, from the paged cache into a padded
// tile; rows at or past `end` are zeros (the cache's slots past a sequence may hold anything).
template <class E>
__device__ void load_keys(E* tile, const E* __restrict__ cache, const Shape& m, const Cache& c, int b, int g, int64_t j0, int64_t end,
                          int width) {
  constexpr int W = kVec<E>;
  const int packs = width / W, stride = width + pad<E>(), kv_heads = m.heads / m.group;
  for (int e = threadIdx.x; e < kKeys * packs; e += kThreads) {
    const int r = e / packs, x = e % packs;
    const int64_t j = j0 + r;
    Pack<E, W> v{};
    if (j < end) {
      const int64_t page = c.table[int64_t{b} * m.max_pages + j / m.page_size];
      v = load_pack<W>(cache + ((page * m.page_size + j % m.page_size) * kv_heads + g) * width + x * W);
    }
    KL_UNROLL
    for (int i = 0; i < W; ++i) tile[r * stride + x * W + i] = v.v[i];
  }
}

template <class E>
__global__ void __launch_bounds__(kThreads) attend(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v, Cache c,
                                                   Out<E> out, Shape m) {
  KL_DYNAMIC_SHARED(E, smem);
  const int kv_heads = m.heads / m.group, all_rows = m.new_tokens * m.group, chunks = (all_rows + kRows - 1) / kRows;
  const int b = blockIdx.y / (kv_heads * chunks), g = blockIdx.y / chunks % kv_heads, row0 = blockIdx.y % chunks * kRows;
  const int split = blockIdx.x, rows = all_rows - row0 < kRows ? all_rows - row0 : kRows;
  const int64_t len = c.lens[b], begin = split * m.keys_per_split;
  const int64_t end = begin + m.keys_per_split < len ? begin + m.keys_per_split : len;
  const int qs = m.d + pad<E>(), vs = m.dv + pad<E>();
  E* sq_tile = smem;
  E* sk_tile = sq_tile + kRows * qs;
  E* sv_tile = sk_tile + kKeys * qs;
  float* sp = reinterpret_cast<float*>(sv_tile + kKeys * vs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Row rho of the group: new token rho / group of query head g * group + rho % group.
  const auto token_of = [&](int rho) { return int64_t{b} * m.new_tokens + rho / m.group; };
  const auto head_of = [&](int rho) { return g * m.group + rho % m.group; };

  for (int e = threadIdx.x; e < kRows * m.d; e += kThreads) {
    const int r = e / m.d, x = e % m.d;
    sq_tile[r * qs + x] = r < rows ? q[(token_of(row0 + r) * m.heads + head_of(row0 + r)) * m.d + x] : from_f32<E>(0.0f);
  }
  float row_max[kRowsPerWarp], row_sum[kRowsPerWarp], acc[kRowsPerWarp][kOutPerLane];
  KL_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    row_max[r] = -INFINITY, row_sum[r] = 0;
    KL_UNROLL
    for (int x = 0; x < kOutPerLane; ++x) acc[r][x] = 0;
  }
  for (int64_t j0 = begin; j0 < end; j0 += kKeys) {
    __syncthreads();  // the previous tile's K, V and P are no longer read
    load_keys(sk_tile, k, m, c, b, g, j0, end, m.d);
    load_keys(sv_tile, v, m, c, b, g, j0, end, m.dv);
    __syncthreads();
    KL_UNROLL
    for (int r = 0; r < kRowsPerWarp; ++r) {  // lane `lane` scores key j0 + lane for each of the warp's rows
      const int row = r * kWarps + warp, rho = row0 + row;
      if (row >= rows) continue;  // a padding row (a group of 8 fills 8 of 32): the whole warp skips it
      const int64_t j = j0 + lane, last = len - m.new_tokens + rho / m.group;  // the row's new token sees keys up to `last`
      float s = -INFINITY;
      if (j < end && j <= last) {
        s = 0;
        for (int x = 0; x < m.d; ++x) s += to_f32(sq_tile[row * qs + x]) * to_f32(sk_tile[lane * qs + x]);
        s *= m.scale;
      }
      const float tile_max = warp_reduce(s, Max{});
      float p = 0;
      if (tile_max != -INFINITY) {
        const float new_max = fmaxf(row_max[r], tile_max), rescale = expf(row_max[r] - new_max);
        p = s == -INFINITY ? 0.0f : expf(s - new_max);
        row_sum[r] = row_sum[r] * rescale + warp_reduce(p, Sum{});
        KL_UNROLL
        for (int x = 0; x < kOutPerLane; ++x) acc[r][x] *= rescale;
        row_max[r] = new_max;
      }
      sp[row * kKeys + lane] = p;
      __syncwarp();
      const int keys = int(end - j0 < kKeys ? end - j0 : kKeys);
      attention::add_tile_pv(acc[r], sp + row * kKeys, sv_tile, vs, keys, lane, m.dv);
    }
  }
  KL_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = r * kWarps + warp;
    if (row >= rows) continue;
    const int64_t at = token_of(row0 + row) * m.heads + head_of(row0 + row);  // (token, head)
    const float inv = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f, lse = row_sum[r] > 0 ? row_max[r] + logf(row_sum[r]) : -INFINITY;
    const int64_t part = split * m.tokens * m.heads + at;
    KL_UNROLL
    for (int x = 0; x < kOutPerLane; ++x) {
      const int col = lane + 32 * x;
      if (col >= m.dv) continue;
      if (out.part_o) out.part_o[part * m.dv + col] = acc[r][x] * inv;
      else out.o[at * m.dv + col] = from_f32<E>(acc[r][x] * inv);
    }
    if (lane == 0) {
      if (out.part_lse) out.part_lse[part] = lse;
      else out.lse[head_of(row0 + row) * m.tokens + token_of(row0 + row)] = lse;
    }
  }
}

// One warp per (token, head): LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s, the splits in order.
template <class E> __global__ void merge(Out<E> out, Shape m, int splits) {
  const int64_t at = (int64_t{blockIdx.x} * kThreads + threadIdx.x) / 32, rows = m.tokens * m.heads;
  if (at >= rows) return;
  const int lane = threadIdx.x % 32;
  float top = -INFINITY;
  for (int s = 0; s < splits; ++s) top = fmaxf(top, out.part_lse[s * rows + at]);
  float sum = 0;
  for (int s = 0; s < splits; ++s) sum += expf(out.part_lse[s * rows + at] - top);  // a split past the context: exp(-inf) = 0
  const float lse = top + logf(sum);
  for (int col = lane; col < m.dv; col += 32) {
    float o = 0;
    for (int s = 0; s < splits; ++s) o += expf(out.part_lse[s * rows + at] - lse) * out.part_o[(s * rows + at) * m.dv + col];
    out.o[at * m.dv + col] = from_f32<E>(o);
  }
  if (lane == 0) out.lse[(at % m.heads) * m.tokens + at / m.heads] = lse;
}

int64_t row_chunks(const DecodeParams& p) { return (p.new_tokens * p.group() + kRows - 1) / kRows; }

// --splits, or enough splits for two blocks per SM, each of at least kMinKeysPerSplit keys; then
// the keys per split rounded up to whole tiles.
int64_t keys_per_split(const DecodeParams& p, bool split, int sms) {
  const int64_t longest = p.longest(), base = p.batch * p.kv_heads * row_chunks(p);
  int64_t splits = 1;
  if (split) {
    splits = p.splits > 0 ? p.splits : std::max<int64_t>(1, (2 * sms + base - 1) / base);
    splits = std::min(splits, p.splits > 0 ? longest : std::max<int64_t>(1, longest / kMinKeysPerSplit));
  }
  const int64_t keys = (longest + splits - 1) / splits;
  return (keys + kKeys - 1) / kKeys * kKeys;
}
int64_t splits_of(const DecodeParams& p, bool split, int sms) {
  const int64_t keys = keys_per_split(p, split, sms);
  return (p.longest() + keys - 1) / keys;
}

// The workspace is sized before any device is asked (and on the simulator's behalf), for the most
// SMs a GPU has; a run takes its device's count, never more splits than that allows.
constexpr int kMostSms = 256;

size_t part_bytes(const DecodeParams& p, bool split) {
  const int64_t splits = splits_of(p, split, kMostSms);
  if (splits == 1) return 0;
  const size_t rows = size_t(p.batch * p.new_tokens * p.heads);
  return attention::round256(size_t(splits) * rows * size_t(p.head_dim_v) * 4) + attention::round256(size_t(splits) * rows * 4);
}

template <class E> void run(const DecodeParams& p, const Args& a, bool split) {
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  const int sms = split ? std::min(sm_count(), kMostSms) : 1;
  const int64_t splits = splits_of(p, split, sms);
  const Shape m{int(p.heads),      int(p.group()),       int(p.head_dim), int(p.head_dim_v),
                int(p.new_tokens), int(p.page_size),     int(p.max_pages()), float(p.scale),
                p.batch * p.new_tokens, keys_per_split(p, split, sms)};
  const Cache c{static_cast<const int32_t*>(a.in[3].data()), static_cast<const int32_t*>(a.in[4].data())};
  Out<E> out{static_cast<E*>(a.out[0].data()), static_cast<float*>(a.out[1].data()), nullptr, nullptr};
  if (splits > 1) {
    const size_t rows = size_t(m.tokens * m.heads);
    out.part_o = static_cast<float*>(a.workspace);
    out.part_lse = reinterpret_cast<float*>(static_cast<char*>(a.workspace) + attention::round256(size_t(splits) * rows * size_t(m.dv) * 4));
  }
  allow_dynamic_smem<attend<E>>(int(smem_bytes<E>(kMaxDim, kMaxDim)));
  const dim3 grid(unsigned(splits), unsigned(p.batch * p.kv_heads * row_chunks(p)));
  KL_LAUNCH(attend<E>, grid, kThreads, smem_bytes<E>(int(p.head_dim), int(p.head_dim_v)), stream,
            static_cast<const E*>(a.in[0].data()), static_cast<const E*>(a.in[1].data()), static_cast<const E*>(a.in[2].data()), c,
            out, m);
  if (splits > 1) KL_LAUNCH(merge<E>, unsigned((m.tokens * m.heads * 32 + kThreads - 1) / kThreads), kThreads, 0, stream, out, m, int(splits));
}

template <bool kSplit> void launch(const DecodeParams& p, const Args& a) {
  with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a, kSplit); });
}

Reason supported(const DecodeParams& p) {
  if (p.head_dim > kMaxDim || p.head_dim_v > kMaxDim) return "head dims up to 256 (a lane holds dv/32 outputs per row)";
  if (p.head_dim % kVec<float> || p.head_dim_v % kVec<float> || (p.dtype != DType::f32 && (p.head_dim % 8 || p.head_dim_v % 8)))
    return "head dims that are whole 16-byte chunks (multiples of 8 in fp16/bf16, of 4 in fp32): K and V rows load 16 bytes at a time";
  if (p.batch * p.kv_heads * row_chunks(p) > 65535) return "batch x kv heads x row chunks must fit a grid dimension (65535)";
  return {};
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<DecodeParams> paged;
  paged.op = "decode";
  paged.name = "cuda_paged";
  paged.note = "one block per (sequence, kv head, 32 query rows) walks the whole context through the block table, the group's "
               "query heads together (each K and V byte read once); few blocks at small batch";
  paged.supports = supported;
  paged.configs = {{.name = "32rows_32keys",
                    .threads = kThreads,
                    .dynamic_smem = int64_t(smem_bytes<__half>(128, 128)),
                    .kernels = {{for_elements([](auto e) { return KL_KERNEL(attend<decltype(e)>); }),
                                 {"ld.global.nc.v4", "shfl.sync.bfly", "ex2.approx"},
                                 {"LDG.E.128.CONSTANT", "SHFL.BFLY", "MUFU.EX2"}}},
                    .run = launch<false>}};
  Rung<DecodeParams> split = paged;
  split.name = "cuda_split_kv";
  split.note = "flash-decoding: the context split across blocks (--splits, or two blocks per SM), each split's O and LSE to the "
               "workspace, merged by their LSE in a second kernel";
  split.workspace_bytes = [](const DecodeParams& p) { return part_bytes(p, true); };
  split.configs[0].kernels.push_back({for_elements([](auto e) { return KL_KERNEL(merge<decltype(e)>); }), {"ex2.approx"}, {"MUFU.EX2"}});
  split.configs[0].run = launch<true>;
  return {variant_of(paged), variant_of(split)};
}

}  // namespace kl::KL_TARGET
