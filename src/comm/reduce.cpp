#include "comm/reduce.h"

#include <algorithm>
#include <fmt/format.h>

#include "kernelab/error.h"

namespace kl::comm {

namespace {

template <class Load, class Store>
void reduce_16(uint16_t* dst, const uint16_t* src, std::size_t count, RedOp op, Load load, Store store) {
  if (op == RedOp::sum)
    for (std::size_t i = 0; i < count; ++i) dst[i] = store(load(dst[i]) + load(src[i]));
  else
    for (std::size_t i = 0; i < count; ++i) dst[i] = store(std::max(load(dst[i]), load(src[i])));
}

}  // namespace

std::optional<RedOp> parse_redop(std::string_view s) {
  if (s == "sum") return RedOp::sum;
  if (s == "max") return RedOp::max;
  return std::nullopt;
}

std::string_view redop_name(RedOp op) { return op == RedOp::sum ? "sum" : "max"; }

DType check_comm_dtype(DType t) {
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    bad_input(fmt::format("--dtype {}: the collectives take fp32, fp16 and bf16", dtype_name(t)));
  return t;
}

std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

void reduce_into(void* dst, const void* src, std::size_t count, DType t, RedOp op) {
  if (t == DType::f32) {
    float* d = static_cast<float*>(dst);
    const float* s = static_cast<const float*>(src);
    if (op == RedOp::sum)
      for (std::size_t i = 0; i < count; ++i) d[i] += s[i];
    else
      for (std::size_t i = 0; i < count; ++i) d[i] = std::max(d[i], s[i]);
  } else if (t == DType::f16) {
    reduce_16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, op, f16_to_float, float_to_f16);
  } else {
    reduce_16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, op, bf16_to_float, float_to_bf16);
  }
}

}  // namespace kl::comm
