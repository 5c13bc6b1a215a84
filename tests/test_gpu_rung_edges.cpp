// The CUDA rungs of transpose and reduce in the simulator on what the check sweep never draws:
// reduce max over negative and mixed-sign inputs (the sweep's inputs are in [0, 1): the
// int-ordering float atomic and the -inf identities would go untested), and tensors whose data
// starts off a 16-byte boundary (the head and edge paths of the vectorized rungs; every buffer
// the harness allocates is aligned).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelab/device.h"
#include "kernelab/op.h"
#include "kernelab/rng.h"
#include "kernelab/tensor.h"

namespace {

using kl::Backend;
using kl::DType;
using kl::Tensor;

#ifdef KERNELAB_HAVE_SIM_OPS
kl::Device& sim() {
  static kl::DeviceSet set = kl::open_devices({Backend::sim});
  kl::Device* d = kl::find_device(set, Backend::sim);
  if (!d) throw std::runtime_error("no simulator device");
  return *d;
}

size_t element_bytes(DType t) { return kl::dtype_bits(t) / 8; }

// A device tensor holding host's data, starting `shift` elements past the start of an aligned
// allocation; `whole` is that allocation, `host` is copied to it with poison around.
struct Shifted {
  Tensor view, whole;
};
Shifted upload_shifted(const Tensor& host, int shift) {
  const size_t e = element_bytes(host.dtype());
  Tensor big = Tensor::host(host.dtype(), {host.numel() + shift + 8});
  big.poison();
  std::memcpy(static_cast<std::byte*>(big.data()) + shift * e, host.data(), host.nbytes());
  Shifted s;
  s.whole = sim().upload(big);
  auto buf = std::make_shared<kl::Buffer>();
  buf->data = buf->base = static_cast<std::byte*>(s.whole.data()) + shift * e;
  buf->bytes = host.nbytes();
  buf->where = kl::Where::device;
  buf->release = [keep = s.whole](std::byte*) {};  // the view keeps its allocation alive
  s.view = Tensor::wrap(host.dtype(), host.shape(), host.strides(), buf);
  return s;
}

struct Case {
  DType dtype;
  int64_t rows, cols;
  std::map<std::string, std::string> opts;
};

// Runs every CUDA rung of op in the simulator on random inputs in [lo, hi), the input (and the
// output where shift_out) shifted off 16-byte alignment; compares with the float64 reference and
// checks that nothing around a shifted output was written.
void check_rungs(const std::string& op_name, const Case& c, double lo, double hi, int shift_in, int shift_out) {
  const kl::Op& op = kl::find_op(op_name);
  const kl::Problem p = kl::make_problem(op, c.dtype, {{"rows", c.rows}, {"cols", c.cols}}, c.opts);
  const kl::TensorSpec in_spec = op.inputs(p).at(0), out_spec = op.outputs(p).at(0);
  Tensor x = Tensor::host(in_spec.dtype, in_spec.shape);
  kl::Rng rng(std::hash<std::string>{}(p.label()) ^ shift_in);
  kl::fill_uniform(x, rng, lo, hi);
  const std::vector<double> ref = op.reference(p, std::span<const Tensor>(&x, 1)).at(0);
  int rungs = 0;
  for (const kl::Variant& v : op.variants) {
    if (v.backend != Backend::cuda || !v.sim_run) continue;
    ++rungs;
    SCOPED_TRACE(op_name + " " + v.name + " " + p.label() + " " + std::string(kl::dtype_name(c.dtype)) +
                 " shift_in=" + std::to_string(shift_in) + " shift_out=" + std::to_string(shift_out));
    Shifted in = upload_shifted(x, shift_in);
    Tensor out_host = Tensor::host(out_spec.dtype, out_spec.shape);
    out_host.poison();
    Shifted out = upload_shifted(out_host, shift_out);
    kl::Args a{std::span<const Tensor>(&in.view, 1), std::span<Tensor>(&out.view, 1),
               sim().workspace(v.workspace_bytes(p)), sim().stream()};
    try {
      v.sim_run(p, a);
      sim().synchronize();
    } catch (const std::exception& e) {  // a fault, a deadlock, a refused launch
      ADD_FAILURE() << e.what();
      continue;
    }
    const Tensor got = sim().download(out.view);
    EXPECT_LE(kl::max_rel_err(got, ref), op.tolerance(p));
    // The elements around a shifted output are still poison (NaN bits: never equal to themselves).
    const Tensor whole = sim().download(out.whole);
    for (int64_t i = 0; i < whole.numel(); ++i)
      if (i < shift_out || i >= shift_out + got.numel()) EXPECT_TRUE(std::isnan(whole.get(i))) << "wrote element " << i;
  }
  EXPECT_GE(rungs, 5);
}

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {7, 33}, {33, 7}, {3, 1000}, {127, 65}, {65, 130}};
#endif

TEST(GpuRungEdges, ReduceMaxOfNegativeAndMixedSignInputs) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (const char* over : {"rows", "total"})
      for (auto [r, c] : kShapes) {
        check_rungs("reduce", {t, r, c, {{"mode", "max"}, {"over", over}}}, -1.0, -0.001, 0, 0);
        check_rungs("reduce", {t, r, c, {{"mode", "max"}, {"over", over}}}, -1.0, 1.0, 0, 0);
      }
#endif
}

TEST(GpuRungEdges, ReduceOnDataOffSixteenByteBoundaries) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  for (DType t : {DType::f32, DType::bf16})
    for (const char* mode : {"sum", "max"})
      for (const char* over : {"rows", "total"})
        for (auto [r, c] : kShapes)
          for (int shift : {1, 3})  // sums of [0, 1): no cancellation to blur the error measure
            check_rungs("reduce", {t, r, c, {{"mode", mode}, {"over", over}}}, mode[0] == 's' ? 0.0 : -1.0, 1.0, shift, 0);
#endif
}

TEST(GpuRungEdges, TransposeOnDataOffSixteenByteBoundaries) {
#ifndef KERNELAB_HAVE_SIM_OPS
  GTEST_SKIP() << "this build has no simulator";
#else
  for (DType t : {DType::f32, DType::f16})
    for (auto [r, c] : kShapes)
      for (auto [si, so] : {std::pair{1, 0}, std::pair{0, 1}, std::pair{3, 5}}) check_rungs("transpose", {t, r, c, {}}, -1.0, 1.0, si, so);
#endif
}

}  // namespace
