// attention_bwd v11: the textbook backward, P and dS written to HBM. `row_dot`: D_i = dO_i . O_i,
// one thread per (query, head); `probs`: one thread per (query, key) of a (sequence, head),
// P = exp(scale q.k - LSE) from the forward's LSE (no second softmax) and dS = P (dO_i . v_j - D_i),
// both into the workspace (2 sum_b h s_q s_kv floats); `grad_q`: one thread per element of dQ,
// scale sum_j dS_ij k_j; `grad_kv`: one thread per element of dK and dV, summing over the kv
// head's query heads and their queries (scale dS^T Q, P^T dO). Every sum belongs to one thread,
// so the bits are the same every run; P and dS cost 4 b h s_q s_kv floats of traffic.
#include "ops/attention/cuda/attention_common.cuh"

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
using namespace rowwise;
using attention::Offsets;
using attention::Shape;
using attention::visible;
constexpr int kTile = 16;      // probs: 16 x 16 threads over (keys, queries)
constexpr int kThreads = 256;  // the others

struct Grads {
  const int64_t* start;  // each sequence's first element of P and dS
  float *p, *ds, *d;     // P, dS; D [h, total_q]
};

template <class E>
__global__ void row_dot(const E* __restrict__ out, const E* __restrict__ d_out, float* __restrict__ d, Shape m) {
  const int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x;  // token * heads + h
  if (e >= m.total_q * m.heads) return;
  float acc = 0;
  for (int c = 0; c < m.dv; ++c) acc += to_f32(out[e * m.dv + c]) * to_f32(d_out[e * m.dv + c]);
  d[(e % m.heads) * m.total_q + e / m.heads] = acc;
}

template <class E>
__global__ void probs(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v, const float* __restrict__ lse,
                      const E* __restrict__ d_out, Shape m, Offsets o, Grads w) {
  const int b = blockIdx.z / m.heads, h = blockIdx.z % m.heads, g = h / m.group, kv_heads = m.heads / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b];
  const int64_t i = int64_t{blockIdx.y} * kTile + threadIdx.y, j = int64_t{blockIdx.x} * kTile + threadIdx.x;
  if (i >= sq || j >= sk) return;
  const int64_t tq = o.q[b] + i, tk = o.kv[b] + j, at = w.start[b] + (h * sq + i) * sk + j;
  int64_t first, last;
  visible(m, sq, sk, i, first, last);
  float p = 0, ds = 0;
  if (j >= first && j < last) {
    float s = 0, dp = 0;
    for (int c = 0; c < m.d; ++c) s += to_f32(q[(tq * m.heads + h) * m.d + c]) * to_f32(k[(tk * kv_heads + g) * m.d + c]);
    for (int c = 0; c < m.dv; ++c) dp += to_f32(d_out[(tq * m.heads + h) * m.dv + c]) * to_f32(v[(tk * kv_heads + g) * m.dv + c]);
    p = expf(m.scale * s - lse[h * m.total_q + tq]);
    ds = p * (dp - w.d[h * m.total_q + tq]);
  }
  w.p[at] = p, w.ds[at] = ds;
}

template <class E>
__global__ void grad_q(const E* __restrict__ k, E* __restrict__ dq, Shape m, Offsets o, Grads w) {
  const int b = blockIdx.y / m.heads, h = blockIdx.y % m.heads, g = h / m.group, kv_heads = m.heads / m.group;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b];
  const int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x, i = e / m.d;
  const int c = int(e % m.d);
  if (i >= sq) return;
  const float* ds = w.ds + w.start[b] + (h * sq + i) * sk;
  float acc = 0;
  for (int64_t j = 0; j < sk; ++j) acc += ds[j] * to_f32(k[((o.kv[b] + j) * kv_heads + g) * m.d + c]);
  dq[((o.q[b] + i) * m.heads + h) * m.d + c] = from_f32<E>(m.scale * acc);
}

// Thread (j, c): dK[j][c] for c < d, else dV[j][c - d].
template <class E>
__global__ void grad_kv(const E* __restrict__ q, const E* __restrict__ d_out, E* __restrict__ dk, E* __restrict__ dv, Shape m,
                        Offsets o, Grads w) {
  const int kv_heads = m.heads / m.group, b = blockIdx.y / kv_heads, g = blockIdx.y % kv_heads, width = m.d + m.dv;
  const int64_t sq = o.q[b + 1] - o.q[b], sk = o.kv[b + 1] - o.kv[b];
  const int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x, j = e / width;
  const int c = int(e % width);
  if (j >= sk) return;
  const bool key = c < m.d;
  const float* weight = key ? w.ds : w.p;  // dK: scale sum dS_ij q_i; dV: sum P_ij dO_i
  const E* rows = key ? q : d_out;
  const int width_x = key ? m.d : m.dv, cx = key ? c : c - m.d;
  float acc = 0;
  for (int h = g * m.group; h < (g + 1) * m.group; ++h)
    for (int64_t i = 0; i < sq; ++i)
      acc += weight[w.start[b] + (h * sq + i) * sk + j] * to_f32(rows[((o.q[b] + i) * m.heads + h) * width_x + cx]);
  const int64_t tk = o.kv[b] + j;
  if (key) dk[(tk * kv_heads + g) * m.d + c] = from_f32<E>(m.scale * acc);
  else dv[(tk * kv_heads + g) * m.dv + cx] = from_f32<E>(acc);
}

// The workspace: the offsets, each sequence's first P element, D, then P and dS, each from a 256-byte boundary.
size_t start_bytes(const AttentionParams& p) { return attention::round256(size_t(p.batch + 1) * sizeof(int64_t)); }
size_t d_bytes(const AttentionParams& p) { return attention::round256(size_t(p.heads * p.total_q()) * sizeof(float)); }
size_t matrix_bytes(const AttentionParams& p) {
  size_t n = 0;
  for (int64_t b = 0; b < p.batch; ++b) n += size_t(p.heads * p.seq_q(b) * p.seq_kv(b));
  return attention::round256(n * sizeof(float));
}

template <class E> void run(const AttentionParams& p, const Args& a) {
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  const Offsets o = attention::upload_offsets(p, a);
  char* at = static_cast<char*>(a.workspace) + attention::offset_bytes(p);
  std::vector<int64_t> first = {0};
  for (int64_t b = 0; b < p.batch; ++b) first.push_back(first.back() + p.heads * p.seq_q(b) * p.seq_kv(b));
  Grads w;
  w.start = reinterpret_cast<const int64_t*>(at);
  check_cuda(cudaMemcpyAsync(at, first.data(), first.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  at += start_bytes(p);
  w.d = reinterpret_cast<float*>(at);
  w.p = reinterpret_cast<float*>(at + d_bytes(p));
  w.ds = reinterpret_cast<float*>(at + d_bytes(p) + matrix_bytes(p));
  const Shape m = attention::shape_of(p);
  const E *q = static_cast<const E*>(a.in[0].data()), *k = static_cast<const E*>(a.in[1].data()),
          *v = static_cast<const E*>(a.in[2].data()), *out = static_cast<const E*>(a.in[3].data()),
          *d_out = static_cast<const E*>(a.in[5].data());
  const float* lse = static_cast<const float*>(a.in[4].data());
  const int64_t max_q = attention::longest_q(p), max_kv = attention::longest_kv(p);
  const unsigned bh = unsigned(p.batch * p.heads), bg = unsigned(p.batch * p.kv_heads);
  const auto blocks = [](int64_t n) { return unsigned((n + kThreads - 1) / kThreads); };
  KL_LAUNCH(row_dot<E>, blocks(p.total_q() * p.heads), kThreads, 0, stream, out, d_out, w.d, m);
  KL_LAUNCH(probs<E>, dim3(unsigned((max_kv + kTile - 1) / kTile), unsigned((max_q + kTile - 1) / kTile), bh), dim3(kTile, kTile), 0,
            stream, q, k, v, lse, d_out, m, o, w);
  KL_LAUNCH(grad_q<E>, dim3(blocks(max_q * p.head_dim), bh), kThreads, 0, stream, k, static_cast<E*>(a.out[0].data()), m, o, w);
  KL_LAUNCH(grad_kv<E>, dim3(blocks(max_kv * (p.head_dim + p.head_dim_v)), bg), kThreads, 0, stream, q, d_out,
            static_cast<E*>(a.out[1].data()), static_cast<E*>(a.out[2].data()), m, o, w);
}

void launch(const AttentionParams& p, const Args& a) {
  with_element(p.dtype, [&](auto e) { run<decltype(e)>(p, a); });
}
}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> r;
  r.op = "attention_bwd";
  r.name = "cuda_naive";
  r.note = "four kernels, P and dS written to HBM (4 b h s_q s_kv floats of traffic and 2 of workspace), P from the forward's "
           "LSE; each gradient element summed by one thread: deterministic without trying";
  r.supports = [](const AttentionParams& p) -> Reason {
    if (p.batch * p.heads > 65535 || (attention::longest_q(p) + kTile - 1) / kTile > 65535)
      return "batch x heads and the longest query sequence / 16 must each fit a grid dimension (65535)";
    return {};
  };
  r.workspace_bytes = [](const AttentionParams& p) {
    return attention::offset_bytes(p) + start_bytes(p) + d_bytes(p) + 2 * matrix_bytes(p);
  };
  r.configs = {{.name = "16x16_256",
                .threads = kThreads,
                .kernels = {{for_elements([](auto e) { return KL_KERNEL(row_dot<decltype(e)>); }), {"fma.rn.f32"}, {"FFMA"}},
                            {for_elements([](auto e) { return KL_KERNEL(probs<decltype(e)>); }), {"ex2.approx"}, {"MUFU.EX2"}},
                            {for_elements([](auto e) { return KL_KERNEL(grad_q<decltype(e)>); }), {"fma.rn.f32"}, {"FFMA"}},
                            {for_elements([](auto e) { return KL_KERNEL(grad_kv<decltype(e)>); }), {"fma.rn.f32"}, {"FFMA"}}},
                .run = launch}};
  return {variant_of(r)};
}

}  // namespace kl::KL_TARGET
