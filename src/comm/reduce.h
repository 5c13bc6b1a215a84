// Element types and reductions of the collectives: fp32, fp16, bf16 (raw bits, the project's
// conversions), sum and max, accumulated in float and rounded once per step, as NCCL does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernelab/dtype.h"

namespace kl::comm {

enum class RedOp { sum, max };
std::optional<RedOp> parse_redop(std::string_view s);
std::string_view redop_name(RedOp op);

// The dtypes the collectives take (fp32, fp16, bf16); BadInput naming any other.
DType check_comm_dtype(DType t);
std::size_t dtype_size(DType t);

// dst[i] = dst[i] op src[i] for count elements of dtype t.
void reduce_into(void* dst, const void* src, std::size_t count, DType t, RedOp op);

}  // namespace kl::comm
