// Inputs and the float64 reference of the collectives. Rank q's input element i is a fresh
// pseudo-random value in [-1, 1) (never all zeros), rounded to the dtype, computable by any rank:
// each rank checks its own output against every rank's contribution without moving them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/reduce.h"

namespace kl::comm {

// The seed of the inputs of `comm check` and `comm bench`.
constexpr uint64_t kInputSeed = 16;

void fill_input(Collective c, std::byte* in, std::size_t block, DType t, int ranks, int rank, uint64_t seed);

// Tolerance, per element of a sum: each of the n-1 additions of any order (ring, tree, the
// library's) rounds once to the dtype, at most u·|partial sum| <= u·Σ|x| with u the unit roundoff
// (fp32 2^-24, bf16 2^-8, fp16 2^-11), so |out - exact| <= (n-1)·u·(Σ_q|x_q| + the smallest normal). Two orders differ by
// at most twice that. max, allgather and alltoall move values without arithmetic: exact.
struct Mismatch {
  std::size_t wrong = 0;   // elements past the tolerance, or NaN/inf
  double worst = 0;        // largest |out - expected| / tolerance (0 when exact is demanded and met)
};
// Rank `rank`'s expected output in float64 from every rank's contribution, with each element's
// tolerance.
struct Reference {
  std::vector<double> value, tolerance;
};
Reference reference(Collective c, std::size_t block, DType t, RedOp op, int ranks, int rank, uint64_t seed);
Mismatch check_against_reference(const Reference& ref, const std::byte* out, DType t);
// Against another algorithm's output `peer` on the same inputs: twice the tolerance.
Mismatch check_against_peer(const Reference& ref, const std::byte* out, const std::byte* peer, DType t);

std::string nccl_type_name(DType t);  // "float", "half", "bfloat16" as nccl-tests prints them

}  // namespace kl::comm
