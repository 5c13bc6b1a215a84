#include "kernelab/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <numeric>
#include <optional>

#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "trace/nvtx.h"

namespace kl {

namespace {
Tensor make_host(const TensorSpec& s) {
  return s.strides.empty() ? Tensor::host(s.dtype, s.shape) : Tensor::host_strided(s.dtype, s.shape, s.strides);
}

std::vector<Tensor> random_inputs(const Op& op, const Problem& p, uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> ins;
  for (const TensorSpec& s : op.inputs(p)) {
    ins.push_back(make_host(s));
    if (s.fill) s.fill(ins.back(), rng.next());
    else fill_uniform(ins.back(), rng, s.lo, s.hi);
  }
  return ins;
}

// Host inputs and their float64 reference. The last one is kept: benchmarking several variants
// on one problem (same seed) then draws the inputs and computes the reference once.
struct Prepared {
  std::string key;
  std::vector<Tensor> host_in;
  std::shared_ptr<const std::vector<std::vector<double>>> ref;
};

const Prepared& prepare(const Op& op, const Problem& p, uint64_t seed) {
  static Prepared last;
  std::string key = fmt::format("{}|{}|{}|{}", op.name, p.label(), dtype_name(p.dtype), seed);
  if (last.key != key) {
    last = Prepared{};
    last.host_in = random_inputs(op, p, seed);
    last.ref = std::make_shared<const std::vector<std::vector<double>>>(op.reference(p, last.host_in));
    last.key = key;
  }
  return last;
}

// Everything a run needs, resident on the device.
struct Staged {
  std::vector<Tensor> host_in, dev_in, dev_out;
  std::shared_ptr<const std::vector<std::vector<double>>> ref;
  void* workspace = nullptr;
};

Staged stage(const Op& op, const Variant& v, const Problem& p, Device& dev, uint64_t seed) {
  Staged s;
  const Prepared& prep = prepare(op, p, seed);
  s.host_in = prep.host_in;
  s.ref = prep.ref;
  for (const Tensor& t : s.host_in) s.dev_in.push_back(dev.upload(t));
  for (const TensorSpec& spec : op.outputs(p)) s.dev_out.push_back(dev.allocate(spec));
  s.workspace = dev.workspace(v.workspace_bytes(p));
  return s;
}

// The variant's own build for its backend, or its simulator build on the sim device.
void launch(const Variant& v, const Problem& p, Staged& s, Device& dev) {
  NvtxRange range(v.name.c_str());  // every launch, named by its rung
  Args a{s.dev_in, s.dev_out, s.workspace, dev.stream()};
  if (dev.backend() == Backend::sim && v.backend != Backend::sim) v.sim_run(p, a);
  else v.run(p, a);
}

// Compares outputs against the reference and checks guards and that inputs were not written.
CheckResult verify(const Op& op, const Variant& v, const Problem& p, Staged& s, Device& dev) {
  CheckResult r;
  r.problem = p;
  r.variant = v.name;
  r.backend = dev.backend();
  r.tolerance = op.tolerance(p);
  const auto& ref = *s.ref;
  for (size_t i = 0; i < s.dev_out.size(); ++i) {
    Tensor got = dev.download(s.dev_out[i]);
    if (!s.dev_out[i].check_guards()) r.failure = fmt::format("output {} written out of bounds (guard bytes changed)", i);
    double e = max_rel_err(got, ref.at(i), op.error_per_row);
    r.max_rel_err = std::max(r.max_rel_err, e);
  }
  for (size_t i = 0; i < s.dev_in.size() && r.failure.empty(); ++i) {
    Tensor back = dev.download(s.dev_in[i]);
    if (std::memcmp(back.data(), s.host_in[i].data(), back.nbytes()) != 0 || !s.dev_in[i].check_guards())
      r.failure = fmt::format("input {} was modified by the variant", i);
  }
  if (r.failure.empty() && !(r.max_rel_err <= r.tolerance))
    r.failure = std::isfinite(r.max_rel_err)
                    ? fmt::format("max_rel_err {:.3g} over tolerance {:.3g}", r.max_rel_err, r.tolerance)
                    : "non-finite output (NaN/inf, or a poisoned element never written)";
  r.passed = r.failure.empty();
  return r;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

CheckResult check_variant(const Op& op, const Variant& v, const Problem& p, Device& dev, uint64_t seed) {
  if (auto why = v.supports(p)) {
    CheckResult r;
    r.problem = p;
    r.variant = v.name;
    r.backend = dev.backend();
    r.failure = "unsupported: " + *why;
    return r;
  }
  NvtxRange range(fmt::format("check {} {} {}", op.name, v.name, p.label()));
  Staged s = stage(op, v, p, dev, seed);
  for (Tensor& t : s.dev_out) dev.poison(t);
  try {
    launch(v, p, s, dev);
    dev.synchronize();
  } catch (const RuntimeFailure& e) {  // a refused launch, a deadlock, a bad access: this case fails
    CheckResult r;
    r.problem = p;
    r.variant = v.name;
    r.backend = dev.backend();
    r.tolerance = op.tolerance(p);
    r.failure = e.what();
    return r;
  }
  return verify(op, v, p, s, dev);
}

std::vector<CheckTally> check_op(const Op& op, DeviceSet& devs, uint64_t& seed) {
  std::vector<CheckTally> tallies;
  auto tally_of = [&](const Variant& v, Backend b, DType t) -> CheckTally& {
    for (CheckTally& x : tallies)
      if (x.variant == v.name && x.backend == backend_name(b) && x.dtype == dtype_name(t)) return x;
    CheckTally fresh;
    fresh.op = op.name;
    fresh.variant = v.name;
    fresh.backend = backend_name(b);
    fresh.dtype = dtype_name(t);
    tallies.push_back(fresh);
    return tallies.back();
  };
  for (auto& dev : devs.present)
    for (const Problem& p : op.check_cases(op))
      for (const Variant& v : op.variants) {
        if (!v.runs_on(dev->backend())) continue;
        CheckTally& t = tally_of(v, dev->backend(), p.dtype);
        if (auto why = v.supports(p)) {
          ++t.unsupported;
          t.skip_reason = *why;
          continue;
        }
        CheckResult r = check_variant(op, v, p, *dev, seed++);
        t.worst = std::max(t.worst, r.max_rel_err);
        t.tolerance = std::max(t.tolerance, r.tolerance);
        if (r.passed) {
          ++t.passed;
        } else {
          ++t.failed;
          if (t.first_failure.empty()) t.first_failure = p.label() + ": " + r.failure;
        }
      }
  return tallies;
}

Point bench_variant(const Op& op, const Variant& v, const Problem& p, Device& dev, const BenchOptions& opt) {
  if (auto why = v.supports(p)) bad_input(fmt::format("variant {} does not support {}: {}", v.name, p.label(), *why));
  if (!dev.times()) bad_input(fmt::format("{} checks correctness; it does not time", dev.name()));
  // NVTX: the benchmark as one range, its phases nested (an Nsight Systems timeline reads by rung).
  NvtxRange range(fmt::format("bench {} {} {} {}", op.name, v.name, p.label(), dtype_name(p.dtype)));
  std::optional<NvtxRange> phase(std::in_place, "stage and verify");
  Staged s = stage(op, v, p, dev, 0x5EED ^ std::hash<std::string>{}(p.label()));
  for (Tensor& t : s.dev_out) dev.poison(t);
  launch(v, p, s, dev);
  dev.synchronize();
  CheckResult c = verify(op, v, p, s, dev);
  if (!c.passed) runtime_failure(fmt::format("{} {} {}: wrong result, not timed: {}", op.name, v.name, p.label(), c.failure));

  phase.reset();
  phase.emplace("warm-up");
  const double first = dev.time([&] { launch(v, p, s, dev); }).device_s;  // the first timed warm-up run
  for (int i = 1; i < opt.warmup && i * first < opt.max_seconds / 4; ++i) launch(v, p, s, dev);
  dev.synchronize();
  phase.reset();
  phase.emplace("timed runs");
  std::vector<double> times;
  auto t_start = std::chrono::steady_clock::now();
  for (;;) {
    if (opt.cold) dev.flush_caches();
    times.push_back(dev.time([&] { launch(v, p, s, dev); }).device_s);
    const int n = static_cast<int>(times.size());
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (n >= opt.max_runs) break;
    if (n < opt.min_runs && !(elapsed > opt.max_seconds && n >= 3)) continue;  // slow rungs: 3 runs suffice
    const double mean = std::accumulate(times.begin(), times.end(), 0.0) / n;
    double var = 0;
    for (double t : times) var += (t - mean) * (t - mean);
    const double noise = std::sqrt(var / (n - 1)) / mean / std::sqrt(static_cast<double>(n));
    if (noise < opt.max_noise || elapsed > opt.max_seconds) break;
  }

  Point pt;
  pt.op = op.name;
  pt.variant = v.name;
  pt.backend = std::string(backend_name(v.backend));
  pt.shape = p.shape_str();
  pt.label = p.label();
  pt.dtype = std::string(dtype_name(p.dtype));
  pt.peer = v.peer;
  pt.runs = static_cast<int>(times.size());
  pt.median_s = quantile(times, 0.5);
  pt.p10_s = quantile(times, 0.1);
  pt.p90_s = quantile(times, 0.9);
  pt.min_s = *std::min_element(times.begin(), times.end());
  pt.max_s = *std::max_element(times.begin(), times.end());
  const double mean = std::accumulate(times.begin(), times.end(), 0.0) / pt.runs;
  double var = 0;
  for (double t : times) var += (t - mean) * (t - mean);
  pt.noise = pt.runs > 1 ? std::sqrt(var / (pt.runs - 1)) / mean / std::sqrt(static_cast<double>(pt.runs)) : 0;
  const Cost cost = op.cost(p);
  pt.flops = cost.flops;
  pt.bytes = cost.bytes;
  pt.tflops = cost.flops / pt.median_s / 1e12;
  pt.gbps = cost.bytes / pt.median_s / 1e9;
  const Ceilings ceil = dev.ceilings(p.dtype);
  const double t_compute = ceil.peak_flops > 0 ? cost.flops / ceil.peak_flops : 0;
  const double t_memory = ceil.bandwidth > 0 ? cost.bytes / ceil.bandwidth : 0;
  pt.t_lower_bound_s = std::max(t_compute, t_memory);
  pt.bound = t_compute > t_memory ? "compute" : "memory";
  pt.pct_of_bound = 100.0 * pt.t_lower_bound_s / pt.median_s;
  pt.peak_flops = ceil.peak_flops;
  pt.bandwidth = ceil.bandwidth;
  pt.ceilings_source = ceil.flops_source + "; " + ceil.bandwidth_source;
  pt.max_rel_err = c.max_rel_err;
  pt.cold = opt.cold;
  pt.device = dev.name();
  pt.clocks = dev.clocks();
  pt.commit = build_commit();
  return pt;
}

std::string build_commit() {
  static const std::string commit = [] {
    std::string out;
#ifdef KERNELAB_SOURCE_DIR
    if (FILE* f = popen("git -C " KERNELAB_SOURCE_DIR " describe --always --dirty --abbrev=12 2>/dev/null", "r")) {
      char buf[128];
      if (std::fgets(buf, sizeof buf, f)) out = buf;
      pclose(f);
    }
#endif
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out.empty() ? std::string(KERNELAB_COMMIT) : out;
  }();
  return commit;
}

}  // namespace kl
