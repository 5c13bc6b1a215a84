#include "comm/data.h"

#include <algorithm>
#include <cmath>

#include "kernelab/dtype.h"

namespace kl::comm {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank q's input element i, rounded to t, as stored.
double contribution(DType t, int q, std::size_t i, uint64_t seed) {
  const uint64_t h = splitmix(seed * 0x100000001b3ull ^ splitmix(uint64_t(q) << 40 ^ i));
  const double v = double(h >> 11) * 0x1p-53 * 2 - 1;
  if (t == DType::f32) return double(float(v));
  return t == DType::f16 ? double(f16_to_float(double_to_f16(v))) : double(bf16_to_float(double_to_bf16(v)));
}

struct Expected {
  double value, tolerance;
};

// Element k of rank `rank`'s output, in float64, with its tolerance (see data.h).
Expected expected(Collective c, std::size_t k, std::size_t block, DType t, RedOp op, int ranks, int rank, uint64_t seed) {
  auto contribution_of = [&](int q) -> double {
    switch (c) {
      case Collective::allreduce: return contribution(t, q, k, seed);
      case Collective::reducescatter: return contribution(t, q, std::size_t(rank) * block + k, seed);
      default: return 0;
    }
  };
  if (c == Collective::allgather) return {contribution(t, int(k / block), k % block, seed), 0};
  if (c == Collective::alltoall) return {contribution(t, int(k / block), std::size_t(rank) * block + k % block, seed), 0};
  double acc = op == RedOp::sum ? 0 : -INFINITY, magnitude = 0;
  for (int q = 0; q < ranks; ++q) {
    const double x = contribution_of(q);
    acc = op == RedOp::sum ? acc + x : std::max(acc, x);
    magnitude += std::fabs(x);
  }
  // The smallest normal keeps the bound honest where a partial sum is subnormal (fp16 below 2^-14).
  const double smallest_normal = t == DType::f16 ? 0x1p-14 : 0x1p-126;
  return {acc, op == RedOp::sum ? (ranks - 1) * dtype_epsilon(t) * (magnitude + smallest_normal) : 0};
}

double load(DType t, const std::byte* base, std::size_t k) {
  if (t == DType::f32) return double(reinterpret_cast<const float*>(base)[k]);
  const uint16_t bits = reinterpret_cast<const uint16_t*>(base)[k];
  return double(t == DType::f16 ? f16_to_float(bits) : bf16_to_float(bits));
}

Mismatch compare(const Reference& ref, const std::byte* out, const std::byte* peer, DType t, double scale) {
  Mismatch m;
  for (std::size_t k = 0; k < ref.value.size(); ++k) {
    const double got = load(t, out, k);
    const double want = peer ? load(t, peer, k) : ref.value[k], tol = scale * ref.tolerance[k];
    const double err = std::fabs(got - want);
    if (!std::isfinite(got) || err > tol) ++m.wrong;
    if (tol > 0) m.worst = std::max(m.worst, err / tol);
    else if (err > 0) m.worst = INFINITY;
  }
  return m;
}

}  // namespace

void fill_input(Collective c, std::byte* in, std::size_t block, DType t, int ranks, int rank, uint64_t seed) {
  const std::size_t count = layout(c, block, ranks, rank).in_count;
  for (std::size_t i = 0; i < count; ++i) store_from_double(t, in, int64_t(i), contribution(t, rank, i, seed));
}

Reference reference(Collective c, std::size_t block, DType t, RedOp op, int ranks, int rank, uint64_t seed) {
  const std::size_t count = layout(c, block, ranks, rank).out_count;
  Reference ref;
  ref.value.resize(count);
  ref.tolerance.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    const Expected e = expected(c, k, block, t, op, ranks, rank, seed);
    ref.value[k] = e.value, ref.tolerance[k] = e.tolerance;
  }
  return ref;
}

Mismatch check_against_reference(const Reference& ref, const std::byte* out, DType t) { return compare(ref, out, nullptr, t, 1); }

Mismatch check_against_peer(const Reference& ref, const std::byte* out, const std::byte* peer, DType t) {
  return compare(ref, out, peer, t, 2);
}

std::string nccl_type_name(DType t) { return t == DType::f32 ? "float" : t == DType::f16 ? "half" : "bfloat16"; }

}  // namespace kl::comm
