// Cost models of the ops that have no registry entry (or a form the registry does not cover):
// quantized gemm, attention forward/backward under the flash and the naive schedule, and the
// collectives. Each states its counting convention in a comment and as text (kCounting...),
// which `roofline` and `explain` print and the README quotes. The registry ops (gemm, softmax,
// layernorm, rmsnorm, ...) keep their own cost models in src/ops; nothing here repeats them.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernelab/op.h"

namespace kl::model {

// ---------------------------------------------------------------- quantized gemm (gemm_quant.cpp)

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  // C(m,n) = A(m,k) * W(k,n)
};

// Weight-only quantized gemm (W4A16, W8A16): FLOPs 2*m*n*k (dequantisation not counted).
// Bytes: A (m*k) read once and C (m*n) written once in the activation dtype (act_bytes per
// element); W (k*n) read once in weight_bits per weight; one fp16 scale per group of group_size
// weights along k, i.e. ceil(k/group_size)*n scales of 2 bytes (no zero-points).
inline constexpr std::string_view kCountingGemmWeightOnly =
    "2*m*n*k FLOPs (dequantisation not counted); bytes: A (m*k) and C (m*n) in the activation dtype read/written "
    "once, W (k*n) in weight-bits bits, plus one fp16 scale per group of group-size weights along k "
    "(ceil(k/G)*n*2 bytes)";
Cost gemm_weight_only_cost(const GemmShape& s, double act_bytes, int weight_bits, int64_t group_size);
// The in-register int4 dequantization of kernelab's fragment-order W4A16 rung
// (src/ops/gemm_w4a16/cuda/v03_fragment_lop3.cu): per lane and 32-bit word of 8 weights, 3 shifts,
// 4 LOP3, 4 HSUB2 and 4 HFMA2, 15 instructions; every block row of the grid (16 rows of A at
// m <= 16, 64 above) dequantizes all n*k weights again.
struct Dequantization {
  double instructions_per_weight = 15.0 / 8;
  int64_t block_rows = 0;    // the rung's rows of A per block
  double weights = 0;        // dequantized over the grid: n * k * ceil(m / block_rows)
  double instructions = 0;   // thread instructions
};
Dequantization w4_dequantization(const GemmShape& s);
// The weight bytes of that form: k*n*weight_bits/8 + ceil(k/group_size)*n*2. BadInput unless
// weight_bits is 4 or 8 and group_size is positive.
double gemm_weight_bytes(int64_t k, int64_t n, int weight_bits, int64_t group_size);

// W8A8 gemm (int8 or fp8 activations and weights, tensor cores at the 8-bit peak): FLOPs
// 2*m*n*k. Bytes: A (m*k) and W (k*n) read once at 1 byte, C (m*n) written once at 2 bytes (the
// 32-bit accumulator dequantised to fp16/bf16, as W8A8 kernels write it), one fp32 scale per row
// of A and per column of W (4*(m+n) bytes).
inline constexpr std::string_view kCountingGemmW8A8 =
    "2*m*n*k FLOPs at the 8-bit peak; bytes: A (m*k) and W (k*n) at 1 byte read once, C (m*n) written once at "
    "2 bytes (dequantised to fp16/bf16), one fp32 scale per row of A and per column of W (4*(m+n) bytes)";
Cost gemm_w8a8_cost(const GemmShape& s);

// The m at which a gemm whose weights (with their scales) take weight_bytes turns compute-bound
// under a ridge point R (FLOP/byte), activations and output at act_bytes per element:
// 2mnk / (act_bytes*m*(k+n) + weight_bytes) >= R  <=>  m >= R*weight_bytes / (2nk - R*act_bytes*(k+n)).
// nullopt when the denominator is not positive (it never turns compute-bound).
std::optional<double> gemm_compute_bound_m(int64_t n, int64_t k, double act_bytes, double weight_bytes, double ridge);

// ---------------------------------------------------------------- attention (attention.cpp)

struct AttentionShape {
  int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_kv = 1, head_dim = 1;
  bool causal = false;
};

enum class Schedule { flash, naive };

// BadInput unless heads is a multiple of kv_heads (GQA/MQA groups query heads over a kv head).
void validate(const AttentionShape& s);

// FLOPs as FlashAttention-3's benchmark counts them: forward 4*B*H*Sq*avg*D (the two matmuls QK^T
// and PV, 2 FLOPs per multiply-add; softmax not counted), avg = Sk, or causal (max(0, Sk - Sq) +
// Sk) / 2: exactly half at Sq = Sk (though the unmasked fraction is (Sk+1)/(2Sk) there), and the
// mask aligned bottom-right otherwise; backward 2.5x the forward (five matmuls against two; the
// recomputation of S in the flash backward not counted). The same FLOPs under both schedules.
// The `attention` op counts the same way (src/ops/attention).
double attention_flops(const AttentionShape& s, bool backward);

// HBM bytes, e bytes per element, K/V (and dK/dV) with kv_heads heads:
//  flash forward:  Q read, K read, V read, O written, once each.
//  flash backward: Q, K, V, O, dO read once, dQ, dK, dV written once, the logsumexp (fp32,
//                  B*H*Sq) read once. (The forward's logsumexp write and the dO.O row sums are not
//                  counted.)
//  naive forward (FlashAttention paper, Algorithm 0): the flash forward's bytes plus S = QK^T
//                  written and read back by the softmax, P written and read back by PV: four
//                  B*H*Sq*Sk matrices moved. S and P are full size even when causal (masking does
//                  not shrink the stored matrix).
//  naive backward (paper, Algorithm 3): Q, K, V, dO read once, dQ, dK, dV written once, plus the
//                  seven B*H*Sq*Sk matrix transfers: P read (dV = P^T dO), dP written, P and dP read
//                  (dS), dS written, dS read twice (dQ = dS K, dK = dS^T Q).
inline constexpr std::string_view kCountingAttention =
    "FLOPs as FlashAttention-3's benchmark: forward 4*B*H*Sq*avg*D, avg = Sk, causal (max(0,Sk-Sq)+Sk)/2 (half at "
    "Sq = Sk), backward 2.5x forward "
    "(recomputation not counted); bytes, K/V with kv-heads: flash forward Q,K,V read and O written once; flash "
    "backward Q,K,V,O,dO read, dQ,dK,dV written, fp32 logsumexp read; naive forward adds S and P written and read "
    "back (4*B*H*Sq*Sk elements); naive backward Q,K,V,dO read, dQ,dK,dV written, plus 7*B*H*Sq*Sk elements "
    "(P read twice, dP written and read, dS written and read twice)";
double attention_bytes(const AttentionShape& s, double e, bool backward, Schedule schedule);
Cost attention_cost(const AttentionShape& s, double e, bool backward, Schedule schedule);
// Device memory the pass holds at its peak: flash forward Q, K, V, O and the fp32 logsumexp; naive
// forward Q, K, V, O and S and P at once (the softmax reads one while it writes the other); flash
// backward Q, K, V, O, dO, dQ, dK, dV, the logsumexp and FlashAttention-2's fp32 dQ accumulator;
// naive backward the eight tensors and P (kept from the forward), dP and dS.
double attention_peak_bytes(const AttentionShape& s, double e, bool backward, Schedule schedule);

// Decode (Sq small, a long KV cache): the bytes are mostly the K/V cache, 2*B*Hkv*Sk*D*e. Each
// K/V element is used by H/Hkv query heads times Sq queries, one multiply-add (2 FLOPs) each, so
// the intensity tends to 2*H*Sq/(Hkv*e) FLOP/byte as the cache dominates. This is that limit.
double decode_intensity_limit(const AttentionShape& s, double e);

// ---------------------------------------------------------------- collectives (collective.cpp)

enum class Collective { allreduce, allgather, reducescatter, alltoall };
std::optional<Collective> parse_collective(std::string_view name);

// nccl-tests' conventions (doc/PERFORMANCE.md). `bytes` is the size nccl-tests reports: the
// per-rank buffer (allreduce: the buffer; allgather: the gathered output; reducescatter: the
// input before scattering; alltoall: the send buffer). algbw = bytes / time; busbw = algbw *
// factor, factor 2(n-1)/n for allreduce and (n-1)/n for allgather, reducescatter and alltoall.
// Lower bound (ring): each rank's busiest link carries bytes * factor in each direction, so
// time >= bytes * factor / link_bw (link bandwidth per direction); at that bound busbw equals
// link_bw. FLOPs are 0 (the allreduce's additions are not counted).
inline constexpr std::string_view kCountingCollective =
    "nccl-tests conventions: --bytes is the per-rank buffer nccl-tests reports (allgather: the gathered output); "
    "algbw = bytes/time, busbw = algbw*factor, factor 2(n-1)/n for allreduce, (n-1)/n for allgather, "
    "reducescatter, alltoall; bytes on the busiest link = bytes*factor; lower-bound time = bytes*factor / link "
    "bandwidth per direction; FLOPs 0";
double bus_factor(Collective c, int64_t ranks);  // BadInput for ranks < 2

struct CollectiveBound {
  double link_bytes = 0;  // bytes * factor: what the busiest link carries in each direction
  double time_s = 0;      // link_bytes / link_bw
  double algbw = 0;       // bytes / time_s
  double busbw = 0;       // algbw * factor (= link_bw)
};
CollectiveBound collective_bound(Collective c, double bytes, int64_t ranks, double link_bw);

}  // namespace kl::model
