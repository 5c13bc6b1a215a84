// decode: attention of 1-8 new tokens per sequence against its KV cache, paged as vLLM and
// FlashAttention's flash_attn_with_kvcache page it. Sequence b holds len_b tokens (the new ones
// last, already appended to the cache); token j lives in page block_table[b][j / page_size], slot
// j % page_size, and the pages of a sequence lie anywhere in the cache, in no order.
//   Q [b * s_q, h, d], K cache [pages, page_size, h_kv, d], V cache [pages, page_size, h_kv, dv],
//   block table [b, max pages] int32, cache lengths [b] int32; O [b * s_q, h, dv], LSE [h, b * s_q].
// New token i of s_q sits at position len - s_q + i and sees the keys up to it (causal,
// bottom-right aligned): a draft of s_q tokens checked at once, as speculative decoding does.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/attention/attention.h"

namespace kl {

struct DecodeParams {
  int64_t batch = 0, new_tokens = 0, heads = 0, kv_heads = 0, head_dim = 0, head_dim_v = 0, page_size = 0;
  std::vector<int64_t> lens;  // per sequence: the context, new tokens included
  double scale = 0;
  int64_t splits = 0;  // split-KV rungs: the splits of each sequence's keys; 0: chosen from the shape
  DType dtype = DType::f16;

  int64_t group() const { return heads / kv_heads; }
  int64_t pages_of(int64_t b) const { return (lens[size_t(b)] + page_size - 1) / page_size; }
  int64_t max_pages() const;    // the block table's row length
  int64_t total_pages() const;  // the cache holds exactly the pages the sequences use
  int64_t longest() const;
  // The same attention over a contiguous cache: what the float64 reference and FLOP count use.
  AttentionParams as_attention() const;
};

KL_CPU_ISA_DECLARE(std::vector<Variant> decode_cpu_variants())

}  // namespace kl
