// The CPU rung of decode, fp32 arithmetic on any input dtype: for each (sequence, kv head) the
// group's query heads and new tokens walk the context once through the block table, each with its
// running max, sum and output (the online softmax), so each page of K and V is read once for all
// the query rows that share it.
#include <cmath>
#include <vector>

#include "ops/attention/decode.h"
#include "ops/cpu_math.h"
#include "ops/cpu_variant.h"

namespace kl {

namespace {

void paged(const DecodeParams& d, const Args& args) {
  const std::vector<float> q = cpu::to_floats(args.in[0]), k = cpu::to_floats(args.in[1]), v = cpu::to_floats(args.in[2]);
  const int32_t* table = args.in[3].as<int32_t>();
  const int64_t rows = d.new_tokens * d.group(), dk = d.head_dim, dv = d.head_dim_v;
  const float scale = float(d.scale);
  std::vector<float> o(size_t(d.batch * d.new_tokens * d.heads * dv)), lse(size_t(d.heads * d.batch * d.new_tokens));
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.kv_heads; ++g) {
      const int64_t len = d.lens[size_t(b)];
      std::vector<float> m(size_t(rows), -INFINITY), l(size_t(rows), 0.0f), acc(size_t(rows * dv), 0.0f);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t slot = int64_t{table[b * d.max_pages() + j / d.page_size]} * d.page_size + j % d.page_size;
        const float* kj = &k[size_t((slot * d.kv_heads + g) * dk)];
        const float* vj = &v[size_t((slot * d.kv_heads + g) * dv)];
        for (int64_t r = 0; r < rows; ++r) {  // row r: new token r / group of query head g * group + r % group
          const int64_t i = r / d.group(), h = g * d.group() + r % d.group();
          if (j > len - d.new_tokens + i) continue;  // after this token
          const float s = scale * cpu::dot(&q[size_t(((b * d.new_tokens + i) * d.heads + h) * dk)], kj, dk);
          const float m_new = std::max(m[size_t(r)], s), rescale = std::exp(m[size_t(r)] - m_new), p = std::exp(s - m_new);
          float* a = &acc[size_t(r * dv)];
          for (int64_t c = 0; c < dv; ++c) a[c] = a[c] * rescale + p * vj[c];
          l[size_t(r)] = l[size_t(r)] * rescale + p;
          m[size_t(r)] = m_new;
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r / d.group(), h = g * d.group() + r % d.group(), token = b * d.new_tokens + i;
        for (int64_t c = 0; c < dv; ++c) o[size_t((token * d.heads + h) * dv + c)] = acc[size_t(r * dv + c)] / l[size_t(r)];
        lse[size_t(h * d.batch * d.new_tokens + token)] = m[size_t(r)] + std::log(l[size_t(r)]);
      }
    }
  cpu::with_float_type(d.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = args.out[0].as<T>();
    for (size_t i = 0; i < o.size(); ++i) out[i] = cpu::from_float<T>(o[i]);
  });
  float* out_lse = args.out[1].as<float>();
  for (size_t i = 0; i < lse.size(); ++i) out_lse[i] = lse[i];
}

}  // namespace

std::vector<Variant> KL_CPU_ISA::decode_cpu_variants() {
  return {cpu_variant<DecodeParams>("decode", "cpu_paged",
                                    "each (sequence, kv head) walks its pages once through the block table for all the group's "
                                    "query heads and new tokens, online softmax per query row",
                                    paged)};
}

}  // namespace kl
