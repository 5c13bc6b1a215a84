// W4A16's int4 weights in mma.sync's B-fragment order, and their dequantization by bit tricks:
// what the W4A16 rungs read, packed offline so that a lane's 32-bit load is already its registers.
//
// W is N x K (output channels x the reduction), codes unsigned 0..15 (symmetric int4 codes are
// stored biased by 8). Of an n8 tile of mma.m16n8k16's B, lane (gid = lane / 4, tid = lane % 4)
// holds column n = gid at rows k = 2tid, 2tid+1 (register b0) and 2tid+8, 2tid+9 (b1). One word
// per lane carries both registers of two adjacent n8 tiles for one k16 step, nibbles in the order
// the dequantization takes them:
//   nibble 0: tile 0, k 2tid      nibble 4: tile 0, k 2tid+1     register 0 (tile 0's b0)
//          1: tile 0, k 2tid+8           5: tile 0, k 2tid+9     register 1 (tile 0's b1)
//          2: tile 1, k 2tid             6: tile 1, k 2tid+1     register 2 (tile 1's b0)
//          3: tile 1, k 2tid+8           7: tile 1, k 2tid+9     register 3 (tile 1's b1)
// so that (w >> 4r) & 0x000f000f puts register r's two codes at the bottom of its two 16-bit
// halves. Words are stored [K/16][N/16][32 lanes]: a warp reads 128 contiguous bytes per k16 step
// and 16 columns.
// OR-ing in the bits of 1024 (fp16 0x6400, whose ulp is 1 in [1024, 2048)) or of 128 (bf16 0x4300,
// ulp 1 in [128, 256)) makes each half exactly magic + code: one LOP3 per register and no integer
// to float conversion. Subtracting magic + zero (a half2 subtraction, exact on these integers)
// leaves code - zero for the group's scale: zero 8 (symmetric), the integer q_z (GPTQ-style), or
// 0 with the float zero subtracted after the scale (AWQ-style, s * q - z).
#pragma once
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define KL_W4_HD __host__ __device__ __forceinline__
#else
#define KL_W4_HD inline
#endif

namespace kl::quant {

// Both halves of a 32-bit pair equal to 1024 (fp16) or 128 (bf16).
template <bool kBf16> constexpr uint32_t kW4Magic = kBf16 ? 0x43004300u : 0x64006400u;

// Register r (0..3) of a packed word as two halves, each magic + its code.
template <bool kBf16> KL_W4_HD constexpr uint32_t w4_biased_pair(uint32_t word, int r) {
  return ((word >> (4 * r)) & 0x000f000fu) | kW4Magic<kBf16>;
}

// Two halves, each magic + z: what w4_biased_pair minus this is code - z (z an integer 0..15).
template <bool kBf16> KL_W4_HD constexpr uint32_t w4_zero_pair(uint32_t z) { return (z | z << 16) | kW4Magic<kBf16>; }

// Where code (n, k) of an N x K weight sits in the packed words: the word's index and its nibble.
struct W4Slot {
  int64_t word;
  int nibble;
};
W4Slot w4_slot(int64_t n_total, int64_t n, int64_t k);

// codes: N x K row-major, each 0..15. N and K multiples of 16 (BadInput otherwise, naming them).
std::vector<uint32_t> pack_w4_fragments(const std::vector<uint8_t>& codes, int64_t n, int64_t k);
std::vector<uint8_t> unpack_w4_fragments(const std::vector<uint32_t>& words, int64_t n, int64_t k);

}  // namespace kl::quant
