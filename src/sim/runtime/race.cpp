// The race check: the same launches on the same inputs, once with the threads of every
// barrier interval in forward order and once in reverse (blocks too, one at a time), then
// the memory they could write compared byte for byte. Race-free code gives equal bytes: CUDA
// promises no order between barriers, so a result that depends on it is a race. Floating
// atomics are the one legal order dependence; differences within their rounding are a note.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "sim/runtime/internal.h"

namespace kl::sim {
namespace {

// Largest finite magnitude of a buffer's words read as T: the scale of a sum in it.
template <class T> double largest(const char* p, std::size_t bytes) {
  double m = 0;
  for (std::size_t w = 0; w + sizeof(T) <= bytes; w += sizeof(T)) {
    T v;
    std::memcpy(&v, p + w, sizeof v);
    if (std::isfinite(v)) m = std::max(m, std::fabs(double(v)));
  }
  return m;
}

// Within the rounding two orders of float atomic adds give: relative to the buffer's largest
// value, not the word's own (a sum that cancels to 1e-5 of its terms keeps their rounding).
bool close(double a, double b, double scale) {
  return a == b || (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= 1e-5 * std::max({std::fabs(a), std::fabs(b), scale}));
}

// Whether the word at `offset` differs only as two float atomics' orders could make it;
// `scale4` and `scale8` are the buffer's largest values read as floats and as doubles.
bool rounding_only(const char* x, const char* y, std::size_t offset, std::size_t bytes, double scale4, double scale8) {
  const std::size_t w4 = offset & ~std::size_t(3), w8 = offset & ~std::size_t(7);
  if (w4 + 4 <= bytes) {
    float a, b;
    std::memcpy(&a, x + w4, 4), std::memcpy(&b, y + w4, 4);
    if (close(a, b, scale4)) return true;
  }
  if (w8 + 8 <= bytes) {
    double a, b;
    std::memcpy(&a, x + w8, 8), std::memcpy(&b, y + w8, 8);
    if (close(a, b, scale8)) return true;
  }
  return false;
}

std::string word_text(const char* p, std::size_t word, std::size_t bytes) {
  if (word + 4 > bytes) return std::to_string(int(static_cast<unsigned char>(p[word])));
  float f;
  int i;
  std::memcpy(&f, p + word, 4), std::memcpy(&i, p + word, 4);
  char b[96];
  std::snprintf(b, sizeof b, "%d (as float %g)", i, double(f));
  return b;
}

}  // namespace

RaceResult check_races(Span<Buffer> buffers, const std::function<void()>& launches, std::string_view what) {
  using namespace detail;
  const Options saved = options();
  const bool was_checking = in_race_check;
  in_race_check = true;
  std::vector<std::vector<char>> inputs, forward;
  for (const Buffer& b : buffers) inputs.emplace_back(static_cast<const char*>(b.ptr), static_cast<const char*>(b.ptr) + b.bytes);
  auto restore = [&] {
    for (std::size_t i = 0; i < buffers.size(); ++i)
      std::memcpy(const_cast<void*>(buffers[i].ptr), inputs[i].data(), buffers[i].bytes);
  };
  auto finish = [&](RaceResult r) {
    options() = saved, in_race_check = was_checking;
    return r;
  };
  // Each pass runs on a fresh OS thread: static __shared__ variables are thread_locals, and
  // the reverse pass must not find the forward pass's values already in place (that would
  // hide a read of not-yet-written shared memory). A fresh thread starts them at zero.
  const auto pass = [&](Order order) {
    std::thread([&] {
      in_race_check = true;
      options().order = order;
      launches();
    }).join();
  };
  options().serial = true;
  float_atomics = 0;
  pass(Order::forward);
  if (sticky_error() != cudaSuccess) return finish({false, std::string(what) + " failed; its race check was skipped"});
  for (const Buffer& b : buffers) forward.emplace_back(static_cast<const char*>(b.ptr), static_cast<const char*>(b.ptr) + b.bytes);
  restore();
  pass(Order::reverse);
  const bool float_atomics_used = float_atomics > 0;
  std::size_t differing = 0, first_buffer = 0, first_offset = 0;
  bool only_rounding = true;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const char* x = forward[i].data();
    const char* y = static_cast<const char*>(buffers[i].ptr);
    double scale4 = -1, scale8 = -1;  // computed at the buffer's first difference
    for (std::size_t k = 0; k < buffers[i].bytes; ++k) {
      if (x[k] == y[k]) continue;
      if (differing++ == 0) first_buffer = i, first_offset = k;
      if (!only_rounding || !float_atomics_used) {
        only_rounding = false;
        continue;
      }
      if (scale4 < 0) scale4 = largest<float>(x, buffers[i].bytes), scale8 = largest<double>(x, buffers[i].bytes);
      only_rounding = rounding_only(x, y, k, buffers[i].bytes, scale4, scale8);
    }
  }
  if (differing == 0) return finish({});
  const Buffer& b = buffers[first_buffer];
  const std::size_t word = first_offset & ~std::size_t(3);
  char where[200];
  if (b.what)
    std::snprintf(where, sizeof where, "the %zu-byte %s buffer at %p, first in the 4 bytes at offset %zu", b.bytes, b.what,
                  b.ptr, word);
  else
    std::snprintf(where, sizeof where, "buffer %zu of %zu (%zu bytes at %p), first in the 4 bytes at offset %zu",
                  first_buffer + 1, buffers.size(), b.bytes, b.ptr, word);
  const std::string diff = std::to_string(differing) + " bytes differ between forward and reverse thread order, in " +
                           where + ": " + word_text(forward[first_buffer].data(), word, b.bytes) + " forward vs " +
                           word_text(static_cast<const char*>(b.ptr), word, b.bytes) + " reverse";
  if (only_rounding)
    return finish({false, "note: " + std::string(what) + ": " + diff +
                              "; all within the rounding of its floating-point atomics, so not reported as a race"});
  return finish({true, "race in " + std::string(what) +
                           ": its results depend on the order in which threads run between barriers (a missing "
                           "__syncthreads()/__syncwarp(), or blocks that share data): " + diff});
}

}  // namespace kl::sim
