// exp_cache_bandwidth and exp_cache_latency: read bandwidth and load latency against the
// working-set size, through L1, L2 and DRAM (HBM on a GPU).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "ops/cpu_variant.h"
#include "ops/experiments/experiments.h"
#include "ops/ops.h"

namespace kl {

namespace {
int64_t ws_floats(const Problem& p) { return p.dim("ws_kib") * 256; }

// The CPU twin: an OpenMP thread per block, visiting chunks in the CUDA rung's order; lane t
// keeps the max of floats 4t..4t+3 of every chunk it reads, like the CUDA rung's thread t.
void bandwidth_cpu(const ExpCacheBandwidthParams& p, const Args& a) {
  const int64_t blocks = p.blocks, chunks = p.chunks(), steps = p.steps();
  const auto* x = static_cast<const float*>(a.in[0].data());
  auto* y = static_cast<float*>(a.out[0].data());
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    float lane[kExpThreads];
    std::fill(lane, lane + kExpThreads, -INFINITY);
    int64_t c = b % chunks;
    for (int64_t r = 0; r < steps; ++r, c = (c + blocks) % chunks) {
      const float* chunk = x + c * kChunkFloats;
      for (int t = 0; t < kExpThreads; ++t)
        lane[t] = std::max(lane[t], std::max(std::max(chunk[4 * t], chunk[4 * t + 1]), std::max(chunk[4 * t + 2], chunk[4 * t + 3])));
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

void latency_cpu(const ExpCacheLatencyParams& p, const Args& a) {
  static_cast<float*>(a.out[0].data())[0] = static_cast<float>(chase_end(static_cast<const uint32_t*>(a.in[0].data()), p.steps));
}

void validate_ws(const Problem& p, const char* op) {
  if (p.dim("ws_kib") > (int64_t{1} << 21)) bad_input(fmt::format("{}: ws_kib={} is over 2 GiB", op, p.dim("ws_kib")));
}
}  // namespace

Op make_exp_cache_bandwidth_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_cache_bandwidth";
  op.summary = "experiment: `blocks` blocks sweep a ws_kib working set in 4 KiB chunks until read_mib MiB are read in all";
  op.counting =
      "0 FLOPs; bytes: the bytes loaded, steps * blocks * 4 KiB. Every block ranges over the whole working set in "
      "4 KiB chunks (one float4 per thread), the blocks of a step on different chunks: a set that fits in an SM's "
      "L1 is read from L1 after the first sweep, one that fits in L2 from L2, a larger one from DRAM";
  op.dims = {{"ws_kib", 262144, "working set in KiB (a multiple of 4)"}, {"read_mib", 4096, "MiB to read in all"},
             {"blocks", 264, "blocks reading at once: 2 per SM on a 132-SM H100/H200 (CPU: spread over the cores)"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpCacheBandwidthParams{p.dim("ws_kib"), p.dim("read_mib"), p.dim("blocks"), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    validate_ws(p, "exp_cache_bandwidth");
    if (p.dim("ws_kib") % 4 != 0) bad_input(fmt::format("exp_cache_bandwidth: ws_kib={} is not a multiple of 4 (4 KiB chunks)", p.dim("ws_kib")));
    if (p.dim("blocks") > 65535) bad_input(fmt::format("exp_cache_bandwidth: blocks={} is over 65535", p.dim("blocks")));
    if (p.dim("read_mib") > (int64_t{1} << 20)) bad_input(fmt::format("exp_cache_bandwidth: read_mib={} is over 1 TiB", p.dim("read_mib")));
  };
  op.cost = [](const Problem& p) {
    return Cost{0, static_cast<double>(cache_steps(p)) * static_cast<double>(p.dim("blocks")) * kChunkFloats * 4};
  };
  op.inputs = [](const Problem& p) { return std::vector<TensorSpec>{{"x", DType::f32, {ws_floats(p)}, {}}}; };
  op.outputs = [](const Problem& p) { return std::vector<TensorSpec>{{"y", DType::f32, {p.dim("blocks"), kExpThreads}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    const int64_t blocks = p.dim("blocks"), chunks = ws_floats(p) / kChunkFloats;
    const int64_t visits = std::min(cache_steps(p), chunks);  // after `chunks` steps a block revisits
    const std::vector<double> x = to_doubles(in[0]);
    std::vector<double> y(static_cast<size_t>(blocks * kExpThreads), -INFINITY);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t r = 0; r < visits; ++r) {
        const int64_t c = (b + r * blocks) % chunks;
        for (int64_t i = 0; i < kChunkFloats; ++i)
          y[b * kExpThreads + i / 4] = std::max(y[b * kExpThreads + i / 4], x[c * kChunkFloats + i]);
      }
    return reference_outputs(std::move(y));
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [ws, read, blocks] : std::initializer_list<std::tuple<int64_t, int64_t, int64_t>>{
             {4, 1, 1}, {8, 2, 3}, {12, 1, 7}, {64, 1, 2}, {20, 3, 5}})
      out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}, {"read_mib", read}, {"blocks", blocks}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {  // 8 MiB read from a 1 MiB working set: the modelled L2 serves 7 of them
    return std::vector<Problem>{make_problem(self, DType::f32, {{"ws_kib", 1024}, {"read_mib", 8}, {"blocks", 16}})};
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t ws : {int64_t{4096}, int64_t{262144}}) out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };  // a max: exact
  op.variants = {cpu_variant("exp_cache_bandwidth", "cpu", "the same chunk schedule on the host, blocks spread over the cores", bandwidth_cpu)};
  return op;
}

// Loads in a timed chase: the steps given, or once around the cycle (at least 20000 loads, at most
// 2^20): repeated runs of fewer steps than slots walk the same lines, which then sit in L2 (an H200's
// 20000 steps read 147-151 ns a load from 1 MiB to 1 GiB alike).
int64_t latency_steps(const Problem& p) {
  const int64_t steps = p.dim("steps");
  return steps > 0 ? steps : std::clamp<int64_t>(ws_floats(p) / kChaseSlotFloats, 20000, int64_t{1} << 20);
}

Op make_exp_cache_latency_op() {
  Op op;
  op.experiment = true;
  op.name = "exp_cache_latency";
  op.summary = "experiment: one thread follows a random cycle of 128-byte slots through a ws_kib working set for `steps` loads (0: once around)";
  op.counting =
      "0 FLOPs; bytes: 4 per load (steps * 4). Each load needs the one before it, so time / steps is the load-to-use "
      "latency of the level that holds the working set; past the TLB's reach it includes page-walk misses";
  op.dims = {{"ws_kib", 262144, "working set in KiB"},
             {"steps", 0, "dependent loads; 0: once around the cycle, at least 20000, at most 2^20"}};
  op.dtypes = {DType::f32};
  op.parse = [](const Problem& p) -> std::any {
    return ExpCacheLatencyParams{p.dim("ws_kib"), latency_steps(p), p.dtype_of("x"), p.dtype_of("y")};
  };
  op.validate = [](const Problem& p) {
    validate_ws(p, "exp_cache_latency");
    if (p.dim("steps") < 0) bad_input(fmt::format("exp_cache_latency: steps={} is negative", p.dim("steps")));
  };
  op.cost = [](const Problem& p) { return Cost{0, 4.0 * static_cast<double>(latency_steps(p))}; };
  op.inputs = [](const Problem& p) {
    TensorSpec x{"x", DType::f32, {ws_floats(p)}, {}};
    x.fill = fill_chase;
    return std::vector<TensorSpec>{x};
  };
  op.outputs = [](const Problem&) { return std::vector<TensorSpec>{{"y", DType::f32, {1}, {}}}; };
  op.reference = [](const Problem& p, std::span<const Tensor> in) {
    return std::vector<std::vector<double>>{{chase_end(static_cast<const uint32_t*>(in[0].data()), latency_steps(p))}};
  };
  op.check_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (auto [ws, steps] : std::initializer_list<std::pair<int64_t, int64_t>>{{1, 1}, {1, 9}, {3, 100}, {64, 1000}})
      out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}, {"steps", steps}}));
    return out;
  };
  op.profile_cases = [](const Op& self) {
    return std::vector<Problem>{make_problem(self, DType::f32, {{"ws_kib", 64}, {"steps", 2000}})};
  };
  op.report_cases = [](const Op& self) {
    std::vector<Problem> out;
    for (int64_t ws : {16, 4096, 262144}) out.push_back(make_problem(self, DType::f32, {{"ws_kib", ws}}));
    return out;
  };
  op.tolerance = [](const Problem&) { return 0.0; };
  op.variants = {cpu_variant("exp_cache_latency", "cpu", "the chase on one host core", latency_cpu)};
  return op;
}

}  // namespace kl
