#include "quant/w4_fragments.h"

#include <fmt/format.h>

#include "kernelab/error.h"

namespace kl::quant {

namespace {
void check_shape(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0 || n % 16 != 0 || k % 16 != 0)
    bad_input(fmt::format("int4 fragment packing takes N and K multiples of 16 (an mma n16 x k16 step), got N={} K={}", n, k));
}
}  // namespace

W4Slot w4_slot(int64_t n_total, int64_t n, int64_t k) {
  const int64_t kk = k % 16;
  const int tile = int(n % 16 / 8), gid = int(n % 8), tid = int(kk % 8 / 2), half = int(kk % 2);
  const int reg = 2 * tile + (kk >= 8 ? 1 : 0);
  const int64_t word = ((k / 16) * (n_total / 16) + n / 16) * 32 + 4 * gid + tid;
  return {word, reg + 4 * half};
}

std::vector<uint32_t> pack_w4_fragments(const std::vector<uint8_t>& codes, int64_t n, int64_t k) {
  check_shape(n, k);
  if (static_cast<int64_t>(codes.size()) != n * k) bad_input(fmt::format("{} int4 codes for an {} x {} weight", codes.size(), n, k));
  std::vector<uint32_t> words(static_cast<size_t>(n * k / 8), 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const uint8_t q = codes[static_cast<size_t>(r * k + c)];
      if (q > 15) bad_input(fmt::format("int4 code {} at ({}, {}) is past 15", q, r, c));
      const W4Slot s = w4_slot(n, r, c);
      words[static_cast<size_t>(s.word)] |= uint32_t{q} << (4 * s.nibble);
    }
  return words;
}

std::vector<uint8_t> unpack_w4_fragments(const std::vector<uint32_t>& words, int64_t n, int64_t k) {
  check_shape(n, k);
  if (static_cast<int64_t>(words.size()) * 8 != n * k) bad_input(fmt::format("{} packed words for an {} x {} weight", words.size(), n, k));
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const W4Slot s = w4_slot(n, r, c);
      codes[static_cast<size_t>(r * k + c)] = uint8_t(words[static_cast<size_t>(s.word)] >> (4 * s.nibble) & 0xfu);
    }
  return codes;
}

}  // namespace kl::quant
