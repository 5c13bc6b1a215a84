// attention v01: the textbook three kernels, S written to HBM. `scores`: one thread per (query, key)
// of a (sequence, head), S = scale q.k in fp32 (hidden keys at -inf) into a workspace of
// sum_b h s_q s_kv floats; `softmax_rows`: one block per row of S, its max and sum of exponentials,
// P written over S and the row's LSE; `pv`: one thread per element of O, sum_j P_ij V_j. S is
// written, read and rewritten by the softmax, and read by PV: 4 b h s_q s_kv floats of traffic (and
// that much workspace) the flash rungs never make, and each K and V row is read once per query.
#include "ops/attention/cuda/attention_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Offsets;
using attention::Shape;
using attention::visible;
constexpr int kTile = 16;      // scores: 16 x 16 threads over (keys, queries)
constexpr int kThreads = 256;  // softmax_rows and pv

template <class E>
__global__ void scores(const E* __restrict__ q, const E* __restrict__ k, float* __restrict__ s, Shape m, Offsets o,
                       const int64_t* __restrict__ s_start) {
  const int b = blockIdx.z / m.heads, h = blockIdx.z % m.heads, g = h / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b];
  const int64_t i = int64_t{blockIdx.y} * kTile + threadIdx.y, j = int64_t{blockIdx.x} * kTile + threadIdx.x;
  if (i >= sq || j >= sk) return;
  int64_t first, last;
  visible(m, sq, sk, i, first, last);
  float acc = -INFINITY;
  if (j >= first && j < last) {
    const E* qr = q + ((o.q[b] + i) * m.heads + h) * m.d;
    const E* kr = k + ((o.kv[b] + j) * (m.heads / m.group) + g) * m.d;
    acc = 0;
    for (int c = 0; c < m.d; ++c) acc += to_f32(qr[c]) * to_f32(kr[c]);
    acc *= m.scale;
  }
  s[s_start[b] + (h * sq + i) * sk + j] = acc;
}

// A row of S becomes P; a row with no visible key gets P = 0 and LSE = +inf.
__global__ void softmax_rows(float* __restrict__ s, float* __restrict__ lse, Shape m, Offsets o, const int64_t* __restrict__ s_start) {
  KL_SHARED(float, buf, [kThreads]);
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b], i = blockIdx.x;
  if (i >= sq) return;  // the whole block
  float* row = s + s_start[b] + (h * sq + i) * sk;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < sk; j += kThreads) mx = fmaxf(mx, row[j]);
  mx = block_reduce_smem(mx, Max{}, buf);
  float sum = 0;
  if (mx != -INFINITY)
    for (int64_t j = threadIdx.x; j < sk; j += kThreads) sum += expf(row[j] - mx);
  sum = block_reduce_smem(sum, Sum{}, buf);
  for (int64_t j = threadIdx.x; j < sk; j += kThreads) row[j] = sum > 0 ? expf(row[j] - mx) / sum : 0.0f;
  if (threadIdx.x == 0) lse[h * m.total_q + o.q[b] + i] = sum > 0 ? mx + logf(sum) : INFINITY;
}

template <class E>
__global__ void pv(const float* __restrict__ p, const E* __restrict__ v, E* __restrict__ out, Shape m, Offsets o,
                   const int64_t* __restrict__ s_start) {
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b];
  const int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x, i = e / m.dv;
  const int c = static_cast<int>(e % m.dv);
  if (i >= sq) return;
  const float* row = p + s_start[b] + (h * sq + i) * sk;
  float acc = 0;
  for (int64_t j = 0; j < sk; ++j) acc += row[j] * to_f32(v[((o.kv[b] + j) * (m.heads / m.group) + g) * m.dv + c]);
  out[((o.q[b] + i) * m.heads + h) * m.dv + c] = from_f32<E>(acc);
}

// The workspace: the offsets, each sequence's first S element (256-byte aligned), then S (sum_b h
// s_q s_kv floats) from a 256-byte boundary: a row of S that starts off a 32-byte sector costs a
// third more sectors per warp (the simulator profiler counted 6 for 4).
size_t start_bytes(const AttentionParams& p) { return attention::round256(size_t(p.batch + 1) * sizeof(int64_t)); }
size_t scores_floats(const AttentionParams& p) {
  size_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n += size_t(p.heads * p.seq_q(b) * p.seq_kv(b));
  return n;
}

template <class E> void run(const AttentionParams& p, const Args& a) {
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  const Offsets o = attention::upload_offsets(p, a);
  char* after = static_cast<char*>(a.workspace) + attention::offset_bytes(p);
  std::vector<int64_t> first = {0};
  for (int64_t b = 0; b < p.batch; ++b) first.push_back(first.back() + p.heads * p.seq_q(b) * p.seq_kv(b));
  int64_t* s_start = reinterpret_cast<int64_t*>(after);
  check_cuda(cudaMemcpyAsync(s_start, first.data(), first.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  float* s = reinterpret_cast<float*>(after + start_bytes(p));
  const Shape m = attention::shape_of(p);
  const int64_t max_q = attention::longest_q(p), max_kv = attention::longest_kv(p);
  const unsigned bh = unsigned(p.batch * p.heads);
  KL_LAUNCH(scores<E>, dim3(unsigned((max_kv + kTile - 1) / kTile), unsigned((max_q + kTile - 1) / kTile), bh), dim3(kTile, kTile), 0,
            stream, static_cast<const E*>(a.in[0].data()), static_cast<const E*>(a.in[1].data()), s, m, o, s_start);
  KL_LAUNCH(softmax_rows, dim3(unsigned(max_q), bh), kThreads, 0, stream, s, static_cast<float*>(a.out[1].data()), m, o, s_start);
  KL_LAUNCH(pv<E>, dim3(unsigned((max_q * p.head_dim_v + kThreads - 1) / kThreads), bh), kThreads, 0, stream, s,
            static_cast<const E*>(a.in[2].data()), static_cast<E*>(a.out[0].data()), m, o, s_start);
}

void launch(const AttentionParams& p, const Args& a) {
  with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention";
  r.name = "cuda_naive";
  r.note = "three kernels, S = scale Q K^T written to HBM, a softmax over its rows in place, then P V: 4 b h s_q s_kv floats "
           "of traffic and as much workspace, K and V read once per query";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.batch * p.heads > 65535 || attention::longest_q(p) > 65535)
      return "batch x heads and the longest query sequence must each fit a grid dimension (65535)";
    return {};
  };
  r.workspace_bytes = [](const AttentionParams& p) {
    return attention::offset_bytes(p) + start_bytes(p) + scores_floats(p) * sizeof(float);
  };
  r.configs = {{.name = "16x16_256",
                .threads = kThreads,
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(scores<decltype(e)>); }), {"fma.rn.f32"}, {"FFMA"}},
                            {{KL_KERNEL(softmax_rows)}, {"bar.sync", "ex2.approx"}, {"BAR.SYNC", "MUFU.EX2"}},
                            {for_elements([](auto e) { return KL_KERNEL(pv<decltype(e)>); }), {"fma.rn.f32"}, {"FFMA"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
