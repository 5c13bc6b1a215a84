// exp_cache_bandwidth and exp_cache_latency: read bandwidth and load latency against the
// working-set size, through L1, L2 and DRAM (HBM on a GPU).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

namespace {
int64_t ws_floats(const Problem& p) { return p.dim("ws_kib") * 256; }
// Block b's contiguous share of the working set.
std::pair<int64_t, int64_t> chunk(int64_t b, int64_t blocks, int64_t n) { return {b * n / blocks, (b + 1) * n / blocks}; }

// The CPU twin: an OpenMP thread per block of chunks; lane t of a chunk keeps the max of the
// elements t, t + 256, ... like the CUDA rung's thread t.
void bandwidth_cpu(const Problem& p, const Args& a) {
  const int64_t blocks = p.dim("blocks"), n = ws_floats(p), reps = cache_passes(p);
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const auto [lo, hi] = chunk(b, blocks, n);
    float lane[kExpThreads];
    std::fill(lane, lane + kExpThreads, -INFINITY);
    for (int64_t r = 0; r < reps; ++r) {
      int64_t i = lo;
      for (; i + kExpThreads <= hi; i += kExpThreads)
        for (int t = 0; t < kExpThreads; ++t) lane[t] = std::max(lane[t], x[i + t]);
      for (int t = 0; i + t < hi; ++t) lane[t] = std::max(lane[t], x[i + t]);
    }
    std::memcpy(y + b * kExpThreads, lane, sizeof lane);
  }
}

// One cycle through the working set's 128-byte slots in a random order (a Fisher-Yates
// shuffle, each slot linked to the next): a slot's first word holds, as raw bits, the float
// index of the next slot. No prefetcher can guess the next address; every load is a new line.
void fill_chase(Tensor& t, uint64_t seed) {
  const int64_t slots = t.numel() / kChaseSlotFloats;
  std::vector<uint32_t> order(static_cast<size_t>(slots));
  for (int64_t s = 0; s < slots; ++s) order[static_cast<size_t>(s)] = static_cast<uint32_t>(s);
  Rng rng(seed);
  for (int64_t i = slots - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[rng.next() % static_cast<uint64_t>(i + 1)]);
  auto* words = static_cast<uint32_t*>(t.data());
  std::memset(words, 0, static_cast<size_t>(t.nbytes()));
  for (int64_t i = 0; i < slots; ++i)
    words[order[static_cast<size_t>(i)] * kChaseSlotFloats] = order[static_cast<size_t>((i + 1) % slots)] * kChaseSlotFloats;
}

// The slot reached from slot 0 after `steps` loads.
double chase_end(const uint32_t* words, int64_t steps) {
  uint32_t at = 0;
  for (int64_t k = 0; k < steps; ++k) at = words[at];
  return static_cast<double>(at / kChaseSlotFloats);
}

void latency_cpu(const Problem& p, const Args& a) {
  static_cast<float*>(a.out[0].data())[0] = static_cast<float>(chase_end(static_cast<const uint32_t*>(a.in[0].data()), p.dim("steps")));
}

void validate_ws(const Problem& p, const char* op) {
  if (p.dim("ws_kib") > (int64_t{1} << 21)) bad_input(fmt::format("{}: ws_kib={} is over 2 GiB", op, p.dim("ws_kib")));
}
}  // namespace

Op make_exp_cache_bandwidth_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_cache_bandwidth";
  op.summary = "experiment: `blocks` blocks each read their share of a ws_kib working set until read_mib MiB are read in all";
  op.counting =
      "0 FLOPs; bytes: the bytes loaded, passes * ws (passes = read_mib / ws, at least 1). Each block (CPU: each "
      "thread) rereads its own contiguous share, so the share a GPU SM keeps hits L1 when it fits there "
      "(ws / blocks per block), the whole set hits L2 when ws fits in L2, and DRAM serves it beyond";
  op.dims = {{"ws_kib", 262144, "working set in KiB"}, {"read_mib", 4096, "MiB to read in all"},
             {"blocks", 264, "blocks (CPU: chunks) sharing the set: 2 per SM on a 132-SM H100/H200"}};
  op.dtypes = {DType::f32};
  op.validate = [](const Problem& p) {
    validate_ws(p, "exp_cache_bandwidth");
    if (p.dim("blocks") > 65535) bad_input(fmt::format("exp_cache_bandwidth: blocks={} is over 65535", p.dim("blocks")));
    if (p.dim("read_mib") > (int64_t{1} << 20)) bad_input(fmt::format("exp_cache_bandwidth: read_mib={} is over 1 TiB", p.dim("read_mib")));
  };
  op.cost = [](const Problem& p) { return Cost{0, static_cast<double>(cache_passes(p)) * static_cast<double>(p.dim("ws_kib")) * 1024}; };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", DType::f32, {ws_floats(p)}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("blocks"), kExpThreads}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t blocks = p.dim("blocks"), n = ws_floats(p);
    const std::vector<double> x = to_doubles(in[0]);
    std::vector<double> y(static_cast<size_t>(blocks * kExpThreads), -INFINITY);
    for (int64_t b = 0; b < blocks; ++b) {
      const auto [lo, hi] = chunk(b, blocks, n);
      for (int64_t i = lo; i < hi; ++i) y[b * kExpThreads + (i - lo) % kExpThreads] = std::max(y[b * kExpThreads + (i - lo) % kExpThreads], x[i]);
    }
    return std::vector<std::vector<double>>{y};
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [ws, read, blocks] : std::initializer_list<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 1, 1}, {1, 2, 3}, {4, 1, 7}, {64, 1, 2}, {33, 3, 5}})
      out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}, {"read_mib", read}, {"blocks", blocks}}));
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t ws : {int64_t{4096}, int64_t{262144}}) out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };  // a max: exact
  Variant cpu;
  cpu.name = "cpu";
  cpu.note = "an OpenMP thread per block of chunks, each rereading its share with a vectorised max";
  cpu.run = bandwidth_cpu;
  op.variants = {cpu};
  for (Variant& v : exp_cache_bandwidth_gpu_variants()) op.variants.push_back(std::move(v));
  return op;
}

Op make_exp_cache_latency_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_cache_latency";
  op.summary = "experiment: one thread follows a random cycle of 128-byte slots through a ws_kib working set for `steps` loads";
  op.counting =
      "0 FLOPs; bytes: 4 per load (steps * 4). Each load needs the one before it, so time / steps is the load-to-use "
      "latency of the level that holds the working set; past the TLB's reach it includes page-walk misses";
  op.dims = {{"ws_kib", 262144, "working set in KiB"}, {"steps", 20000, "dependent loads"}};
  op.dtypes = {DType::f32};
  op.validate = [](const Problem& p) { validate_ws(p, "exp_cache_latency"); };
  op.cost = [](const Problem& p) { return Cost{0, 4.0 * static_cast<double>(p.dim("steps"))}; };
  op.inputs = [](const Problem& p) {
    TensorSpec x{"x", DType::f32, {ws_floats(p)}, {}};
    x.fill = fill_chase;
    return std::vector<TensorSpec>{x};
  };
  op.outputs = [](const Problem&) { return std::vector<TensorSpec>{{"y", DType::f32, {1}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    return std::vector<std::vector<double>>{{chase_end(static_cast<const uint32_t*>(in[0].data()), p.dim("steps"))}};
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [ws, steps] : std::initializer_list<std::pair<int64_t, int64_t>>{{1, 1}, {1, 9}, {3, 100}, {64, 1000}})
      out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}, {"steps", steps}}));
    return out;
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t ws : {16, 4096, 262144}) out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };
  Variant cpu;
  cpu.name = "cpu";
  cpu.note = "the chase on one host core";
  cpu.run = latency_cpu;
  op.variants = {cpu};
  for (Variant& v : exp_cache_latency_gpu_variants()) op.variants.push_back(std::move(v));
  return op;
}

}  // namespace kl
