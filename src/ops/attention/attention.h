// attention (prefill, forward): for each sequence and query head, O = softmax(scale * Q K^T + mask) V
// and LSE = log sum_j exp(scale * q . k_j) over the keys the mask shows.
//   Q [total_q, h, d], K [total_kv, h_kv, d], V [total_kv, h_kv, dv], O [total_q, h, dv],
//   LSE [h, total_q] in fp32 (FlashAttention's varlen layout). total = batch * seq with fixed
//   lengths; --seqlens packs sequences of their own lengths end to end (cumulative offsets).
//   Query head i reads kv head i / (h / h_kv): GQA, and MQA at h_kv = 1.
// The mask is bottom-right aligned, as FlashAttention aligns it: query i of a sequence of s_q
// queries against s_kv keys sits at key position i + s_kv - s_q. --causal hides the keys after
// that position; --window W hides those more than W before it (and, without --causal, more than W
// after it). A query that sees no key (causal with s_q > s_kv) has O = 0 and LSE = +inf, so that
// exp(s - LSE) = 0 in a backward pass.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl {

struct AttentionParams {
  int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0, head_dim_v = 0;
  std::vector<int64_t> q_start, kv_start;  // batch + 1 cumulative offsets (cu_seqlens)
  double scale = 0;
  bool causal = false;
  int64_t window = -1;  // -1: no window
  bool deterministic = false;  // attention_bwd's CUDA rungs: no atomics
  DType dtype = DType::f16;

  int64_t total_q() const { return q_start.back(); }
  int64_t total_kv() const { return kv_start.back(); }
  int64_t seq_q(int64_t b) const { return q_start[b + 1] - q_start[b]; }
  int64_t seq_kv(int64_t b) const { return kv_start[b + 1] - kv_start[b]; }
  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  // The keys [first, last) of sequence b that query i sees (first == last: none).
  std::pair<int64_t, int64_t> visible(int64_t b, int64_t i) const {
    const int64_t sk = seq_kv(b), at = i + sk - seq_q(b);
    int64_t first = 0, last = causal ? std::min(sk, at + 1) : sk;
    if (window >= 0) {
      first = std::max<int64_t>(0, at - window);
      if (!causal) last = std::min(last, at + window + 1);
    }
    return {first, std::max(first, last)};
  }
  // Element offsets of row `token` (global, packed) of Q/O for head h, and of K/V for kv head g.
  int64_t q_row(int64_t token, int64_t h) const { return (token * heads + h) * head_dim; }
  int64_t o_row(int64_t token, int64_t h) const { return (token * heads + h) * head_dim_v; }
  int64_t k_row(int64_t token, int64_t g) const { return (token * kv_heads + g) * head_dim; }
  int64_t v_row(int64_t token, int64_t g) const { return (token * kv_heads + g) * head_dim_v; }
};

// FLOPs as FlashAttention-3's benchmark counts them for one sequence and head: 2 * s_q * avg *
// (d + dv), avg the keys a query sees: s_kv; causal, (max(0, s_kv - s_q) + s_kv) / 2; with a window,
// the mean over queries of the keys in it.
double attention_sequence_flops(const AttentionParams& p, int64_t b);

// What attention and attention_bwd share (op.cpp): dimensions, options, --seqlens, validation,
// parameters and the check sweep (`extra` options added to half its cases).
std::vector<DimSpec> attention_dims();
std::vector<OptSpec> attention_opts();
void attention_derive(Problem& p, const std::map<std::string, int64_t>& given);
void attention_validate(const Problem& p);
AttentionParams attention_params(const Problem& p);
std::vector<Problem> attention_check_cases(const Op& op, const std::map<std::string, std::string>& extra);

// The forward pass in float64 on the inputs' exact values: O [total_q, h, dv] and LSE [h, total_q];
// and as a naive implementation in the input dtype computes it (each intermediate rounded).
std::vector<std::vector<double>> attention_forward_f64(const AttentionParams& a, const std::vector<double>& q,
                                                       const std::vector<double>& k, const std::vector<double>& v);
std::vector<std::vector<double>> attention_forward_in_dtype(const AttentionParams& a, std::span<const Tensor> in);

KL_CPU_ISA_DECLARE(std::vector<Variant> attention_cpu_variants())
KL_CPU_ISA_DECLARE(std::vector<Variant> attention_bwd_cpu_variants())

}  // namespace kl
