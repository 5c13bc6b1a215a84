// exp_stride: copy bandwidth against the stride between the addresses of a warp's loads and the
// bytes each thread loads at a time (4, 8 or 16).
#include <fmt/format.h>

#include <cstring>

#include "kernelab/error.h"
#include "ops/cpu_variant.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

namespace {
// The source unit of output unit t (see experiments.h).
int64_t source_unit(int64_t t, int64_t stride, int64_t per_column) { return (t % per_column) * stride + t / per_column; }

template <int V>
void stride_cpu(const ExpStrideParams& p, const Args& a) {
  const int64_t s = p.stride, per_column = p.per_column();
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c = 0; c < s; ++c)
    for (int64_t r = 0; r < per_column; ++r) std::memcpy(y + (c * per_column + r) * V, x + (r * s + c) * V, 4 * V);
}

void stride_cpu_any(const ExpStrideParams& p, const Args& a) {
  switch (p.unit_floats()) {
    case 1: stride_cpu<1>(p, a); return;
    case 2: stride_cpu<2>(p, a); return;
    default: stride_cpu<4>(p, a); return;
  }
}
}  // namespace

Op make_exp_stride_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_stride";
  op.summary = "experiment: copy n floats where neighbouring threads load `bytes`-wide units `stride` units apart";
  op.counting =
      "0 FLOPs; bytes: x read once, y written once (8n). Reads only: a warp's 32 loads of w bytes at a stride of "
      "s units touch 32-byte sectors of which a share w / min(s*w, max(w, 32)) is used, so with no sector reuse "
      "the read side moves 1/that many bytes: stride 1 is full efficiency, s*w >= 32 wastes 32 - w bytes per load";
  op.dims = {{"n", int64_t{1} << 25, "floats copied (x and y each hold n)"},
             {"stride", 1, "distance between the units neighbouring threads load, in units"}};
  op.opts = {{"bytes", {"4", "8", "16"}, "4", "bytes a thread loads and stores at a time (float, float2, float4)"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpStrideParams{p.dim("n"), p.dim("stride"), static_cast<int>(p.opt_number("bytes")), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    const int64_t v = stride_unit_floats(p), n = p.dim("n"), s = p.dim("stride");
    if (n % v != 0 || (n / v) % s != 0)
      bad_input(fmt::format("exp_stride: n={} must be a multiple of bytes/4 x stride = {}", n, v * s));
    if (s > 65535) bad_input(fmt::format("exp_stride: stride={} is over 65535 (one grid row per column)", s));
  };
  op.cost = [](const Problem& p) { return Cost{0, 8.0 * static_cast<double>(p.dim("n"))}; };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", DType::f32, {p.dim("n")}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("n")}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t v = stride_unit_floats(p), s = p.dim("stride"), units = p.dim("n") / v, per_column = units / s;
    const std::vector<double> x = to_doubles(in[0]);
    std::vector<double> y(x.size());
    for (int64_t t = 0; t < units; ++t)
      for (int64_t e = 0; e < v; ++e) y[t * v + e] = x[source_unit(t, s, per_column) * v + e];
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (const char* bytes : {"4", "8", "16"})
      for (auto [n, s] : std::initializer_list<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {33, 3}, {1000, 8}, {4096, 32}, {12288, 3}}) {
        const int64_t v = std::atoi(bytes) / 4;
        out.push_back(make_problem(self, DType::f32, {{"n", n * v}, {"stride", s}}, {{"bytes", bytes}}));
      }
    return out;
  };
  op.profile_cases = [](const Op& self) {  // sectors per request grow with the stride up to 32
    std::vector<Problem> out;
    for (int64_t s : {1, 4, 32}) out.push_back(make_problem(self, DType::f32, {{"n", int64_t{1} << 20}, {"stride", s}}));
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (const char* bytes : {"4", "16"})
      for (int64_t s : {1, 32}) out.push_back(make_problem(self, DType::f32, {{"n", int64_t{1} << 25}, {"stride", s}}, {{"bytes", bytes}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };  // a copy: exact
  op.variants = {cpu_variant("exp_stride", "cpu", "the same gather on the host, all cores, each unit copied whole", stride_cpu_any)};
  return op;
}

}  // namespace kl
