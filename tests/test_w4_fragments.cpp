// W4A16's packing of int4 weights into mma.sync's B-fragment order, and the bit tricks that turn a
// register's two codes into fp16/bf16 halves: pack -> unpack is the identity, each lane's word
// holds exactly its fragment (checked against the m16n8k16 figure, not against the packer's own
// slot function), and the magic-number dequantization is exact for every code and zero point.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "kernelab/dtype.h"
#include "kernelab/error.h"
#include "quant/w4_fragments.h"

namespace {

using kl::quant::kW4Magic;
using kl::quant::w4_biased_pair;
using kl::quant::w4_zero_pair;

std::vector<uint8_t> random_codes(int64_t n, int64_t k, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> c(static_cast<size_t>(n * k));
  for (uint8_t& x : c) x = uint8_t(gen() % 16);
  return c;
}

template <bool kBf16> float half_value(uint32_t pair, int which) {
  const uint16_t h = uint16_t(pair >> (16 * which));
  return kBf16 ? kl::bf16_to_float(h) : kl::f16_to_float(h);
}

TEST(W4Fragments, PackThenUnpackIsTheIdentityAndEverySlotIsUsedOnce) {
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{16, 16}, {48, 160}, {128, 64}, {32, 10944}}) {
    const std::vector<uint8_t> codes = random_codes(n, k, unsigned(n * 7 + k));
    EXPECT_EQ(kl::quant::unpack_w4_fragments(kl::quant::pack_w4_fragments(codes, n, k), n, k), codes) << n << "x" << k;
    if (n * k > 16384) continue;
    std::set<std::pair<int64_t, int>> slots;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const kl::quant::W4Slot s = kl::quant::w4_slot(n, r, c);
        slots.insert({s.word, s.nibble});
      }
    EXPECT_EQ(static_cast<int64_t>(slots.size()), n * k) << "two codes in one nibble";
  }
}

// Lane (gid, tid) of the word for k16 step ks and columns 16 nb.. gets, per register r, column
// n = 16 nb + 8 (r / 2) + gid at k = 16 ks + 2 tid + 8 (r % 2) (low half) and k + 1 (high half).
TEST(W4Fragments, EachLanesWordIsItsMmaBFragment) {
  const int64_t n = 32, k = 48;
  const std::vector<uint8_t> codes = random_codes(n, k, 3);
  const std::vector<uint32_t> words = kl::quant::pack_w4_fragments(codes, n, k);
  for (int64_t ks = 0; ks < k / 16; ++ks)
    for (int64_t nb = 0; nb < n / 16; ++nb)
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t w = words[static_cast<size_t>((ks * (n / 16) + nb) * 32 + lane)];
        const int gid = lane / 4, tid = lane % 4;
        for (int r = 0; r < 4; ++r) {
          const int64_t col = 16 * nb + 8 * (r / 2) + gid, row = 16 * ks + 2 * tid + 8 * (r % 2);
          const uint32_t pair = w4_biased_pair<false>(w, r);
          EXPECT_EQ(half_value<false>(pair, 0), 1024 + codes[static_cast<size_t>(col * k + row)]) << lane << " " << r;
          EXPECT_EQ(half_value<false>(pair, 1), 1024 + codes[static_cast<size_t>(col * k + row + 1)]) << lane << " " << r;
        }
      }
}

// Every code at every nibble (the other nibbles random) comes out as magic + code in both halves'
// formats; minus magic + z it is code - z exactly (GPTQ's integer zero; 8 for symmetric codes,
// which are the two's complement nibble with its top bit flipped; 0 for AWQ's s * q - z).
template <bool kBf16> void every_code_and_zero() {
  const float magic = kBf16 ? 128.0f : 1024.0f;
  std::mt19937 gen(11);
  for (int nibble = 0; nibble < 8; ++nibble)
    for (uint32_t q = 0; q < 16; ++q) {
      const uint32_t word = (gen() & ~(0xfu << (4 * nibble))) | q << (4 * nibble);
      const float got = half_value<kBf16>(w4_biased_pair<kBf16>(word, nibble % 4), nibble / 4);
      ASSERT_EQ(got, magic + float(q)) << "nibble " << nibble << " code " << q;
      for (uint32_t z = 0; z < 16; ++z) {
        const float diff = got - half_value<kBf16>(w4_zero_pair<kBf16>(z), nibble / 4);
        ASSERT_EQ(diff, float(q) - float(z));
        const uint16_t rounded = kBf16 ? kl::float_to_bf16(diff) : kl::float_to_f16(diff);
        EXPECT_EQ(kBf16 ? kl::bf16_to_float(rounded) : kl::f16_to_float(rounded), diff) << "the half subtraction is exact";
      }
    }
  for (int v = -8; v < 8; ++v) EXPECT_EQ(int((uint32_t(v) & 0xfu) ^ 8u) - 8, v) << "symmetric codes biased by 8";
}
TEST(W4Fragments, BitTricksGiveEveryCodeExactlyInFp16) { every_code_and_zero<false>(); }
TEST(W4Fragments, BitTricksGiveEveryCodeExactlyInBf16) { every_code_and_zero<true>(); }

TEST(W4Fragments, ShapesOffTheMmaStepAndBadCodesAreRefused) {
  EXPECT_THROW(kl::quant::pack_w4_fragments(random_codes(16, 24, 1), 16, 24), kl::BadInput);
  EXPECT_THROW(kl::quant::pack_w4_fragments(random_codes(8, 16, 1), 8, 16), kl::BadInput);
  std::vector<uint8_t> codes = random_codes(16, 16, 1);
  codes[5] = 16;
  EXPECT_THROW(kl::quant::pack_w4_fragments(codes, 16, 16), kl::BadInput);
  EXPECT_THROW(kl::quant::unpack_w4_fragments(std::vector<uint32_t>(3), 16, 16), kl::BadInput);
}

}  // namespace
