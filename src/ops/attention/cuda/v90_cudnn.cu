// attention and attention_bwd peers: cuDNN's SDPA (its flash-attention engines, forward and backward),
// built through cudnn-frontend's graph API as PyTorch's CUDNN_ATTENTION backend builds it. cuDNN reads
// and writes our buffers in place through strides: Q [total_q, h, d] is its [b, h, s_q, d] with strides
// (s_q h d, d, h d, 1), and our LSE [h, total_q] its Stats [b, h, s_q, 1] with strides (s_q, total_q,
// 1, 1), a natural log as ours (the backward's copied to a packed [b, h, s_q] first: cuDNN 9.19 on an
// H200 refused the strided one). Lengths that differ (--seqlens) are ragged offsets with a padding mask;
// the masks are cuDNN's diagonal band, aligned bottom-right as ours. A problem's graph is built once,
// in workspace_bytes (its workspace size is known only then), and cached, so no timed run builds one;
// a failure to build is kept and reported by run. libcudnn is opened when a peer first runs (the
// frontend's dynamic loading), not linked: kernelab starts and runs without it.
#include "ops/attention/attention.h"
#include "ops/gpu_rung.h"

#if defined(KERNELAB_SIM)
namespace kl::KL_TARGET {
KL_RUNGS { return {}; }  // cuDNN has no simulator twin: the peers exist in the nvcc build alone
}  // namespace kl::KL_TARGET
#elif !defined(__CUDA_ARCH__)  // host code only: nvcc's device passes skip the frontend's headers (half the compile)
// The frontend then calls cuDNN through cudnn_frontend::cudnn_dlhandle, which open_cudnn sets.
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
#define CUDNN_FRONTEND_SKIP_JSON_LIB  // no graph serialisation, a shorter compile
#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>  // before the frontend, whose shim calls std::strlen without including it
#include <cudnn_frontend.h>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ops/attention/cuda/attention_common.cuh"

namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace kl::KL_TARGET {

namespace KL_RUNG_ID {
namespace {
namespace fe = cudnn_frontend;
using Attrs = fe::graph::Tensor_attributes;
using TensorPtr = std::shared_ptr<Attrs>;

// libcudnn of the major version compiled against, opened once: by its name, else where the build found
// it (PyTorch's pip packages hold one off the loader's path); a runtime failure naming it when absent.
void open_cudnn() {
  static const std::string error = [] {
    // The frontend's CUDA calls go to the runtime kernelab links, not another major the loader finds.
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", ("libcudart.so." + std::to_string(CUDART_VERSION / 1000)).c_str(), 0);
    const std::string name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
    fe::cudnn_dlhandle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef KERNELAB_CUDNN_LIBRARY
    if (!fe::cudnn_dlhandle) fe::cudnn_dlhandle = dlopen(KERNELAB_CUDNN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
#endif
    if (fe::cudnn_dlhandle) return std::string();
    const char* why = dlerror();
    return "cannot open " + name + " (for the cuDNN SDPA peers): " + (why ? why : "not found");
  }();
  if (!error.empty()) runtime_failure(error);
}

void check(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) runtime_failure(std::string(call) + " failed: " + fe::detail::get_error_string(s));
}
void check(fe::error_t e, const char* step) {
  if (e.is_bad()) runtime_failure(std::string("cuDNN SDPA: ") + step + ": " + e.get_message());
}

// One handle for the process (cuDNN binds it to a stream per call).
cudnnHandle_t handle() {
  open_cudnn();
  static const cudnnHandle_t h = [] {
    cudnnHandle_t x = nullptr;
    check(fe::detail::create_handle(&x), "cudnnCreate");
    return x;
  }();
  return h;
}

// cuDNN's view of the problem: b sequences of at most s_q queries and s_kv keys; ragged when the
// lengths differ, each sequence then found by its offsets rather than by b's stride.
struct Geometry {
  int64_t b, s_q, s_kv;
  bool ragged;
};
Geometry geometry(const AttentionParams& p) {
  bool ragged = false;
  for (int64_t i = 0; i < p.batch; ++i) ragged = ragged || p.seq_q(i) != p.seq_q(0) || p.seq_kv(i) != p.seq_kv(0);
  return {p.batch, attention::longest_q(p), attention::longest_kv(p), ragged};
}

// A ragged problem's int32 tensors, at the workspace's head in 16-byte aligned slots: each sequence's
// lengths, then the element offsets of its first row in Q (and dQ), K (dK), V (dV), O (dO) and the LSE.
enum Slot { kSeqQ, kSeqKv, kOffQ, kOffK, kOffV, kOffO, kOffLse, kSlots };
using Ragged = std::array<TensorPtr, kSlots>;  // null where not ragged
int64_t slot_ints(const AttentionParams& p) { return (p.batch + 1 + 3) / 4 * 4; }
size_t head_bytes(const AttentionParams& p) {
  return geometry(p).ragged ? (kSlots * slot_ints(p) * sizeof(int32_t) + 255) / 256 * 256 : 0;
}
// cuDNN before 9.26 takes the backward's Stats only as a packed [b, h, s_q] unless ragged. Our LSE
// [h, b s_q] is that layout when b or h is 1; otherwise run copies it there, after the head.
bool stats_copied(const AttentionParams& p, bool backward) {
  return backward && !geometry(p).ragged && p.batch > 1 && p.heads > 1;
}
size_t stats_bytes(const AttentionParams& p, bool backward) {
  return stats_copied(p, backward) ? (size_t(p.heads * p.total_q()) * sizeof(float) + 255) / 256 * 256 : 0;
}
std::vector<int32_t> head_values(const AttentionParams& p) {
  const int64_t n = slot_ints(p);
  std::vector<int32_t> v(size_t(kSlots * n), 0);
  for (int64_t i = 0; i <= p.batch; ++i) {
    if (i < p.batch) v[kSeqQ * n + i] = int32_t(p.seq_q(i)), v[kSeqKv * n + i] = int32_t(p.seq_kv(i));
    v[kOffQ * n + i] = int32_t(p.q_start[i] * p.heads * p.head_dim);
    v[kOffK * n + i] = int32_t(p.kv_start[i] * p.kv_heads * p.head_dim);
    v[kOffV * n + i] = int32_t(p.kv_start[i] * p.kv_heads * p.head_dim_v);
    v[kOffO * n + i] = int32_t(p.q_start[i] * p.heads * p.head_dim_v);
    v[kOffLse * n + i] = int32_t(p.q_start[i]);
  }
  return v;
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kLse, kdO, kdQ, kdK, kdV, kHead = 100 };  // kHead + slot: the ragged tensors

Ragged ragged_tensors(fe::graph::Graph& graph, const Geometry& g) {
  Ragged r;
  if (!g.ragged) return r;
  for (int s = 0; s < kSlots; ++s) {
    const int64_t n = s == kSeqQ || s == kSeqKv ? g.b : g.b + 1;
    r[s] = graph.tensor(Attrs().set_name("ragged_" + std::to_string(s)).set_uid(kHead + s).set_data_type(fe::DataType_t::INT32)
                            .set_dim({n, 1, 1, 1}).set_stride({1, 1, 1, 1}));
  }
  return r;
}

// Our [tokens, heads, dim] as cuDNN's [b, heads, s, dim]: token t of a sequence is its row t.
void rows(Attrs& t, int64_t uid, const Geometry& g, int64_t heads, int64_t s, int64_t dim, const TensorPtr& offsets) {
  t.set_uid(uid).set_dim({g.b, heads, s, dim}).set_stride({s * heads * dim, dim, heads * dim, 1});
  if (offsets) t.set_ragged_offset(offsets);
}
TensorPtr input(fe::graph::Graph& graph, const char* name, int64_t uid, const Geometry& g, int64_t heads, int64_t s,
                int64_t dim, const TensorPtr& offsets) {
  TensorPtr t = graph.tensor(Attrs().set_name(name));
  rows(*t, uid, g, heads, s, dim, offsets);
  return t;
}
// Our LSE [h, total_q] as cuDNN's Stats [b, h, s_q, 1]; the backward's, packed [b, h, s_q] unless ragged.
void lse(Attrs& t, const AttentionParams& p, const Geometry& g, const TensorPtr& offsets, bool backward) {
  const std::vector<int64_t> stride = backward && !g.ragged ? std::vector<int64_t>{p.heads * g.s_q, g.s_q, 1, 1}
                                                            : std::vector<int64_t>{g.s_q, p.total_q(), 1, 1};
  t.set_uid(kLse).set_data_type(fe::DataType_t::FLOAT).set_dim({g.b, p.heads, g.s_q, 1}).set_stride(stride);
  if (offsets) t.set_ragged_offset(offsets);
}

// Our mask as cuDNN's diagonal band aligned bottom-right: query i, at key position at = i + s_kv - s_q,
// keeps the keys j with at - left < j <= at + right. --causal is right = 0; --window W is left = W + 1,
// and right = W without --causal. Ragged: the padding mask, with each sequence's lengths.
template <class A> void mask(A& a, const AttentionParams& p, const Geometry& g, const Ragged& r) {
  if (p.causal || p.window >= 0) a.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT);
  if (p.causal) a.set_diagonal_band_right_bound(0);
  if (p.window >= 0) {
    a.set_diagonal_band_left_bound(int(p.window + 1));
    if (!p.causal) a.set_diagonal_band_right_bound(int(p.window));
  }
  if (g.ragged)
    a.set_padding_mask(true).set_seq_len_q(r[kSeqQ]).set_seq_len_kv(r[kSeqKv]).set_max_total_seq_len_q(p.total_q())
        .set_max_total_seq_len_kv(p.total_kv());
}

std::shared_ptr<fe::graph::Graph> new_graph(const AttentionParams& p) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(p.dtype == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

std::shared_ptr<fe::graph::Graph> forward_graph(const AttentionParams& p) {
  const Geometry g = geometry(p);
  auto graph = new_graph(p);
  const Ragged r = ragged_tensors(*graph, g);
  const TensorPtr q = input(*graph, "Q", kQ, g, p.heads, g.s_q, p.head_dim, r[kOffQ]);
  const TensorPtr k = input(*graph, "K", kK, g, p.kv_heads, g.s_kv, p.head_dim, r[kOffK]);
  const TensorPtr v = input(*graph, "V", kV, g, p.kv_heads, g.s_kv, p.head_dim_v, r[kOffV]);
  fe::graph::SDPA_attributes a;
  a.set_name("sdpa").set_generate_stats(true).set_attn_scale(float(p.scale));
  mask(a, p, g, r);
  const auto [o, stats] = graph->sdpa(q, k, v, a);
  rows(o->set_output(true), kO, g, p.heads, g.s_q, p.head_dim_v, r[kOffO]);
  lse(stats->set_output(true), p, g, r[kOffLse], false);
  return graph;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const AttentionParams& p) {
  const Geometry g = geometry(p);
  auto graph = new_graph(p);
  const Ragged r = ragged_tensors(*graph, g);
  const TensorPtr q = input(*graph, "Q", kQ, g, p.heads, g.s_q, p.head_dim, r[kOffQ]);
  const TensorPtr k = input(*graph, "K", kK, g, p.kv_heads, g.s_kv, p.head_dim, r[kOffK]);
  const TensorPtr v = input(*graph, "V", kV, g, p.kv_heads, g.s_kv, p.head_dim_v, r[kOffV]);
  const TensorPtr o = input(*graph, "O", kO, g, p.heads, g.s_q, p.head_dim_v, r[kOffO]);
  const TensorPtr d_o = input(*graph, "dO", kdO, g, p.heads, g.s_q, p.head_dim_v, r[kOffO]);
  const TensorPtr stats = graph->tensor(Attrs().set_name("LSE"));
  lse(*stats, p, g, r[kOffLse], true);
  fe::graph::SDPA_backward_attributes a;
  a.set_name("sdpa_backward").set_attn_scale(float(p.scale)).set_deterministic_algorithm(p.deterministic);
  mask(a, p, g, r);
  const auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, d_o, stats, a);
  rows(dq->set_output(true), kdQ, g, p.heads, g.s_q, p.head_dim, r[kOffQ]);
  rows(dk->set_output(true), kdK, g, p.kv_heads, g.s_kv, p.head_dim, r[kOffK]);
  rows(dv->set_output(true), kdV, g, p.kv_heads, g.s_kv, p.head_dim_v, r[kOffV]);
  return graph;
}

struct Built {
  std::shared_ptr<fe::graph::Graph> graph;  // null when building failed
  std::string error;                        // then why: no libcudnn, no GPU, or cuDNN's own refusal
  int64_t workspace = 0;
};

// Problem p's graph, built with cuDNN's heuristics on first use and then cached.
const Built& built(const AttentionParams& p, bool backward) {
  using Key = std::tuple<bool, DType, int64_t, int64_t, int64_t, int64_t, std::vector<int64_t>, std::vector<int64_t>,
                         double, bool, int64_t, bool>;
  static std::map<Key, Built> cache;
  const Key key{backward,  p.dtype, p.heads,  p.kv_heads, p.head_dim, p.head_dim_v, p.q_start,
                p.kv_start, p.scale, p.causal, p.window,   backward && p.deterministic};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Built b;
  try {  // the frontend throws where a symbol is missing from the library it loads
    open_cudnn();  // before the frontend's first call, which keeps the symbol it finds (or not)
    const auto graph = backward ? backward_graph(p) : forward_graph(p);
    check(graph->build(handle(), {fe::HeurMode_t::A}), "building the graph");
    check(graph->get_workspace_size(b.workspace), "get_workspace_size");
    b.graph = graph;
  } catch (const std::exception& e) {
    b.error = e.what();
  }
  return cache.emplace(key, std::move(b)).first->second;
}

size_t workspace(const AttentionParams& p, bool backward) {
  return head_bytes(p) + stats_bytes(p, backward) + size_t(built(p, backward).workspace);
}

template <bool kBackward> void run(const AttentionParams& p, const Args& a) {
  const Built& b = built(p, kBackward);
  if (!b.graph) runtime_failure(b.error);
  const auto in = [&](size_t i) { return const_cast<void*>(a.in[i].data()); };
  std::unordered_map<int64_t, void*> pack;
  if (kBackward)
    pack = {{kQ, in(0)}, {kK, in(1)}, {kV, in(2)}, {kO, in(3)}, {kLse, in(4)}, {kdO, in(5)},
            {kdQ, a.out[0].data()}, {kdK, a.out[1].data()}, {kdV, a.out[2].data()}};
  else
    pack = {{kQ, in(0)}, {kK, in(1)}, {kV, in(2)}, {kO, a.out[0].data()}, {kLse, a.out[1].data()}};
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  std::byte* work = static_cast<std::byte*>(a.workspace);
  if (geometry(p).ragged) {
    const std::vector<int32_t> head = head_values(p);
    check_cuda(cudaMemcpyAsync(work, head.data(), head.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync");
    for (int s = 0; s < kSlots; ++s) pack[kHead + s] = work + s * slot_ints(p) * int64_t(sizeof(int32_t));
  }
  if (stats_copied(p, kBackward)) {  // [h, b, s_q] -> [b, h, s_q]: per sequence, h rows of s_q floats
    std::byte* stats = work + head_bytes(p);
    const size_t row = size_t(p.seq_q(0)) * sizeof(float);
    for (int64_t i = 0; i < p.batch; ++i)
      check_cuda(cudaMemcpy2DAsync(stats + i * p.heads * row, row, static_cast<const std::byte*>(in(4)) + i * row,
                                   size_t(p.total_q()) * sizeof(float), row, size_t(p.heads), cudaMemcpyDeviceToDevice, stream),
                 "cudaMemcpy2DAsync");
    pack[kLse] = stats;
  }
  try {
    check(fe::detail::set_stream(handle(), stream), "cudnnSetStream");
    check(b.graph->execute(handle(), pack, work + head_bytes(p) + stats_bytes(p, kBackward)), "execute");
  } catch (const RuntimeFailure&) {
    throw;
  } catch (const std::exception& e) {
    runtime_failure(std::string("cuDNN SDPA: ") + e.what());
  }
}

// What cuDNN refuses before it looks at the GPU; head dims and the rest are its check_support's, at run time.
Reason supports(const AttentionParams& p, bool backward) {
  if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "cuDNN SDPA: fp16 and bf16 only";
  for (int64_t b = 0; b < p.batch; ++b)
    if ((p.causal || p.window >= 0) && p.seq_q(b) > p.seq_kv(b))
      return "cuDNN SDPA: causal or windowed with s_q > s_kv (cuDNN's bottom-right band takes s_q <= s_kv on fixed lengths, "
             "and with --seqlens does not say what a query that sees no key gets: ours O = 0, LSE = +inf)";
  if (p.window >= INT32_MAX) return "cuDNN SDPA: the window's bounds are int";
  if (backward && attention::longest_q(p) == 1 && attention::longest_kv(p) == 1)
    return "cuDNN SDPA backward: s_q = s_kv = 1 is not supported (cuDNN's own rule)";
  const int64_t dims = std::max(p.head_dim, p.head_dim_v);
  if (geometry(p).ragged && std::max(p.total_q() * p.heads, p.total_kv() * p.kv_heads) * dims > INT32_MAX)
    return "cuDNN SDPA: --seqlens offsets are int32 here: Q, K, V and O must hold under 2^31 elements";
  return {};
}

}  // namespace
}  // namespace KL_RUNG_ID

KL_RUNGS {
  Rung<AttentionParams> fwd;
  fwd.op = "attention";
  fwd.name = "cudnn_sdpa";
  fwd.note = "cuDNN's SDPA forward (flash attention; PyTorch's CUDNN_ATTENTION), through cudnn-frontend's graph API, "
             "on our buffers in place; --seqlens as ragged offsets";
  fwd.peer = true;
  fwd.supports = [](const AttentionParams& p) { return supports(p, false); };
  fwd.workspace_bytes = [](const AttentionParams& p) { return workspace(p, false); };
  fwd.configs = {{.name = "default", .threads = 0, .kernels = {}, .run = run<false>}};
  Rung<AttentionParams> bwd;
  bwd.op = "attention_bwd";
  bwd.name = "cudnn_sdpa_bwd";
  bwd.note = "cuDNN's SDPA backward (dQ, dK, dV from the forward's O and LSE), through cudnn-frontend's graph API; "
             "--deterministic is its deterministic algorithm";
  bwd.peer = true;
  bwd.supports = [](const AttentionParams& p) { return supports(p, true); };
  bwd.workspace_bytes = [](const AttentionParams& p) { return workspace(p, true); };
  bwd.configs = {{.name = "default", .threads = 0, .kernels = {}, .run = run<true>}};
  return {variant_of(fwd), variant_of(bwd)};
}

}  // namespace kl::KL_TARGET
#endif
