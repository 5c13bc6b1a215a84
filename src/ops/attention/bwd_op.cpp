// attention_bwd: dQ, dK, dV from Q, K, V, the forward's O and LSE, and dO. With P = exp(scale S - LSE)
// (S = Q K^T under the mask), D_i = rowsum(dO o O)_i = sum_j P_ij dP_ij:
//   dV = P^T dO,  dP = dO V^T,  dS = P o (dP - D),  dQ = scale dS K,  dK = scale dS^T Q,
// a kv head's dK and dV summed over the query heads that share it (GQA).
#include <cmath>

#include "ops/attention/attention.h"
#include "ops/cpu_math.h"
#include "ops/ops.h"

namespace kl {

namespace {

// The gradients in float64. `rounding` rounds each intermediate as a naive implementation in the
// input dtype would (identity for the reference, which also takes P from its own exact LSE).
template <class Round>
std::vector<std::vector<double>> gradients(const AttentionParams& a, std::span<const Tensor> in, Round rounding) {
  const std::vector<double> q = to_doubles(in[0]), k = to_doubles(in[1]), v = to_doubles(in[2]), d_o = to_doubles(in[5]);
  const std::vector<std::vector<double>> fwd = rounding.forward(a, q, k, v, in);
  const std::vector<double>&o = fwd[0], &lse = fwd[1];
  const int64_t d = a.head_dim, dv = a.head_dim_v;
  std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dvv(v.size(), 0.0);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.kv_heads; ++g) {  // a kv head and its query heads: no two threads add to one dK, dV
      std::vector<double> p(size_t(a.seq_kv(b))), dp(size_t(a.seq_kv(b)));
      std::vector<double> dk_acc(size_t(a.seq_kv(b) * d), 0.0), dv_acc(size_t(a.seq_kv(b) * dv), 0.0);
      for (int64_t h = g * a.group(); h < (g + 1) * a.group(); ++h)
        for (int64_t i = 0; i < a.seq_q(b); ++i) {
          const int64_t tq = a.q_start[b] + i;
          const auto [first, last] = a.visible(b, i);
          if (first == last) continue;
          const double* qi = &q[a.q_row(tq, h)];
          const double* doi = &d_o[a.o_row(tq, h)];
          double row_d = 0;  // D_i = sum_j P_ij dP_ij = dO_i . O_i
          for (int64_t c = 0; c < dv; ++c) row_d += doi[c] * o[a.o_row(tq, h) + c];
          row_d = rounding.accum(row_d);
          for (int64_t j = first; j < last; ++j) {
            const int64_t tk = a.kv_start[b] + j;
            double s = 0, dpj = 0;
            for (int64_t c = 0; c < d; ++c) s += qi[c] * k[a.k_row(tk, g) + c];
            for (int64_t c = 0; c < dv; ++c) dpj += doi[c] * v[a.v_row(tk, g) + c];
            p[j] = rounding.value(std::exp(rounding.value(a.scale * s) - lse[h * a.total_q() + tq]));
            dp[j] = rounding.value(dpj);
          }
          for (int64_t j = first; j < last; ++j) {
            const double ds = rounding.value(p[j] * (dp[j] - row_d));
            const int64_t tk = a.kv_start[b] + j;
            for (int64_t c = 0; c < d; ++c) {
              dq[a.q_row(tq, h) + c] += a.scale * ds * k[a.k_row(tk, g) + c];
              dk_acc[size_t(j * d + c)] += a.scale * ds * qi[c];
            }
            for (int64_t c = 0; c < dv; ++c) dv_acc[size_t(j * dv + c)] += p[j] * doi[c];
          }
        }
      for (int64_t j = 0; j < a.seq_kv(b); ++j) {
        const int64_t tk = a.kv_start[b] + j;
        for (int64_t c = 0; c < d; ++c) dk[a.k_row(tk, g) + c] = rounding.value(dk_acc[size_t(j * d + c)]);
        for (int64_t c = 0; c < dv; ++c) dvv[a.v_row(tk, g) + c] = rounding.value(dv_acc[size_t(j * dv + c)]);
      }
    }
  for (double& x : dq) x = rounding.value(x);
  return reference_outputs(std::move(dq), std::move(dk), std::move(dvv));
}

struct Exact {
  double value(double x) const { return x; }
  double accum(double x) const { return x; }
  std::vector<std::vector<double>> forward(const AttentionParams& a, const std::vector<double>& q, const std::vector<double>& k,
                                           const std::vector<double>& v, std::span<const Tensor>) const {
    return attention_forward_f64(a, q, k, v);
  }
};

// As PyTorch's autograd runs naive attention in fp16/bf16: P, dP, dS and the gradients rounded to
// the dtype, D in fp32, from the O and LSE the rung receives.
template <class T>
struct InDtype {
  double value(double x) const { return cpu::to_float(cpu::from_float<T>(float(x))); }
  double accum(double x) const { return double(float(x)); }
  std::vector<std::vector<double>> forward(const AttentionParams&, const std::vector<double>&, const std::vector<double>&,
                                           const std::vector<double>&, std::span<const Tensor> in) const {
    return reference_outputs(to_doubles(in[3]), to_doubles(in[4]));
  }
};

}  // namespace

Op make_attention_bwd_op() {
  Op op;
  op.name = "attention_bwd";
  op.summary = "attention backward: dQ, dK, dV from Q, K, V, O, LSE and dO (P recomputed from the LSE); the forward's options";
  op.counting = "2.5x the forward's FlashAttention-3 count (five matrix products against the forward's two); bytes: Q, K, V, "
                "O, dO read once, the fp32 LSE read once, dQ, dK, dV written once";
  op.dims = attention_dims();
  op.opts = attention_opts();
  op.opts.push_back({"deterministic", {"0", "1"}, "0", "CUDA rungs: no atomics, the same bits every run"});
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.derive = attention_derive;
  op.validate = attention_validate;
  op.parse = [](const Problem& p) -> std::any {
    AttentionParams a = attention_params(p);
    a.deterministic = p.opt_flag("deterministic");
    return a;
  };
  op.cost = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    double flops = 0;
    for (int64_t b = 0; b < a.batch; ++b) flops += 2.5 * double(a.heads) * attention_sequence_flops(a, b);
    const double e = dtype_bits(p.dtype) / 8.0;
    const double q = double(a.total_q() * a.heads), kv = double(a.total_kv() * a.kv_heads);
    const double reads = q * double(a.head_dim + 2 * a.head_dim_v) + kv * double(a.head_dim + a.head_dim_v);  // Q, O, dO; K, V
    const double writes = q * double(a.head_dim) + kv * double(a.head_dim + a.head_dim_v);                     // dQ; dK, dV
    return Cost{flops, (reads + writes) * e + 4.0 * q};
  };
  op.inputs = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    return std::vector<TensorSpec>{{"Q", p.dtype, {a.total_q(), a.heads, a.head_dim}, {}},
                                   {"K", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim}, {}},
                                   {"V", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim_v}, {}},
                                   {"O", p.dtype, {a.total_q(), a.heads, a.head_dim_v}, {}},
                                   {"LSE", DType::f32, {a.heads, a.total_q()}, {}},
                                   {"dO", p.dtype, {a.total_q(), a.heads, a.head_dim_v}, {}}};
  };
  // O and LSE are the forward's on Q, K, V: O rounded to the dtype, the LSE in fp32, as a forward rung leaves them.
  op.derived_inputs = [](const Problem& p, std::vector<Tensor>& in) {
    const AttentionParams& a = p.as<AttentionParams>();
    const std::vector<std::vector<double>> fwd = attention_forward_f64(a, to_doubles(in[0]), to_doubles(in[1]), to_doubles(in[2]));
    for (size_t t = 0; t < 2; ++t)
      for (size_t i = 0; i < fwd[t].size(); ++i) in[3 + t].set(int64_t(i), fwd[t][i]);
  };
  op.outputs = [](const Problem& p) {
    const AttentionParams a = attention_params(p);
    return std::vector<TensorSpec>{{"dQ", p.dtype, {a.total_q(), a.heads, a.head_dim}, {}},
                                   {"dK", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim}, {}},
                                   {"dV", p.dtype, {a.total_kv(), a.kv_heads, a.head_dim_v}, {}}};
  };
  op.reference = [](const Problem& p, std::span<const Tensor> in) { return gradients(p.as<AttentionParams>(), in, Exact{}); };
  op.dtype_baseline = [](const Problem& p, std::span<const Tensor> in) {
    std::vector<std::vector<double>> out;
    cpu::with_float_type(p.dtype, [&](auto t) { out = gradients(p.as<AttentionParams>(), in, InDtype<decltype(t)>{}); });
    return out;
  };
  op.check_cases = [](const Op& self) { return attention_check_cases(self, {{"deterministic", "1"}}); };
  op.report_cases = [](const Op& self) {
    const std::map<std::string, int64_t> d = {{"batch", 1}, {"seq_q", 1024}, {"seq_kv", 1024}, {"heads", 8}, {"kv_heads", 8}, {"head_dim", 128}};
    return std::vector<Problem>{make_problem(self, DType::bf16, d, {{"causal", "1"}})};
  };
  // As the forward's: P and dS (2 x 128 x 128 floats each) against the flash rungs' nothing.
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(
        self, DType::f16, {{"batch", 1}, {"seq_q", 128}, {"seq_kv", 128}, {"heads", 2}, {"kv_heads", 2}, {"head_dim", 64}})};
  };
  op.tolerance = [](const Problem& p) { return default_tolerance(p.dtype); };
  // Over each whole gradient, as FlashAttention's tests compare them: a row of dQ cancels (the dS of
  // a row sum to zero) and may be near zero, where its own scale would magnify rounding noise.
  op.error_per_row = false;
  op.variants = KL_CPU_ISA_VARIANTS(attention_bwd_cpu_variants);
  return op;
}

}  // namespace kl
