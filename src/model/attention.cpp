// Attention cost models: FLOPs as the FlashAttention papers count them, HBM bytes of the flash
// and the naive schedule (conventions in cost.h).
#include <algorithm>
#include <fmt/format.h>

#include "kernelab/error.h"
#include "model/cost.h"

namespace kl::model {

void validate(const AttentionShape& s) {
  const int64_t dims[] = {s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim};
  for (int64_t d : dims)
    if (d <= 0)
      bad_input(fmt::format("attention batch={}, heads={}, kv-heads={}, seq-q={}, seq-kv={}, head-dim={}: every "
                            "dimension must be positive", s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim));
  if (s.heads % s.kv_heads != 0)
    bad_input(fmt::format("--heads={} is not a multiple of --kv-heads={} (GQA shares each kv head among a whole "
                          "group of query heads)", s.heads, s.kv_heads));
}

double attention_flops(const AttentionShape& s, bool backward) {
  validate(s);
  const double sq = static_cast<double>(s.seq_q), sk = static_cast<double>(s.seq_kv);
  const double avg = s.causal ? (std::max(0.0, sk - sq) + sk) / 2 : sk;  // keys per query, FlashAttention-3's count
  const double fwd = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * sq * avg * static_cast<double>(s.head_dim);
  return backward ? 2.5 * fwd : fwd;
}

double attention_bytes(const AttentionShape& s, double e, bool backward, Schedule schedule) {
  validate(s);
  const double b = static_cast<double>(s.batch), d = static_cast<double>(s.head_dim);
  const double q = b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) * d;      // Q, O, dQ, dO
  const double kv = b * static_cast<double>(s.kv_heads) * static_cast<double>(s.seq_kv) * d;  // K, V, dK, dV
  const double scores = b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv);
  const double lse_bytes = 4.0 * b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q);  // fp32
  if (schedule == Schedule::flash) {
    if (!backward) return (2 * q + 2 * kv) * e;                  // Q, O; K, V
    return (4 * q + 4 * kv) * e + lse_bytes;                     // Q, O, dO, dQ; K, V, dK, dV; logsumexp
  }
  if (!backward) return (2 * q + 2 * kv + 4 * scores) * e;       // + S written, read; P written, read
  return (3 * q + 4 * kv + 7 * scores) * e;                      // Q, dO, dQ; K, V, dK, dV; P, dP, dS traffic
}

double attention_peak_bytes(const AttentionShape& s, double e, bool backward, Schedule schedule) {
  validate(s);
  const double b = static_cast<double>(s.batch), d = static_cast<double>(s.head_dim);
  const double q = b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) * d;
  const double kv = b * static_cast<double>(s.kv_heads) * static_cast<double>(s.seq_kv) * d;
  const double scores = b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv);
  const double lse_bytes = 4.0 * b * static_cast<double>(s.heads) * static_cast<double>(s.seq_q);
  const double tensors = (backward ? 4 : 2) * (q + kv) * e;
  if (schedule == Schedule::flash) return tensors + lse_bytes + (backward ? 4.0 * q : 0.0);
  return tensors + (backward ? 3 : 2) * scores * e;
}

Cost attention_cost(const AttentionShape& s, double e, bool backward, Schedule schedule) {
  return Cost{attention_flops(s, backward), attention_bytes(s, e, backward, schedule)};
}

double decode_intensity_limit(const AttentionShape& s, double e) {
  validate(s);
  return 2.0 * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) / (static_cast<double>(s.kv_heads) * e);
}

}  // namespace kl::model
