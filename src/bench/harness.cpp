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
#include "kernelab/launch_log.h"
#include "kernelab/roofline.h"
#include "kernelab/rng.h"
#include "kernelab_commit.h"  // KERNELAB_COMMIT: build/stamp, written at every build
#include "trace/nvtx.h"

namespace kl {

double check_tolerance(const Op& op, const Variant& v, const Prepared& prep) {
  return (v.tolerance ? v.tolerance(prep.problem) : op.tolerance(prep.problem)) + 2 * prep.baseline_err;
}

double output_error(const Op& op, const Prepared& prep, size_t i, const Tensor& got) {
  if (i < prep.zero_output_limit.size() && prep.zero_output_limit[i] >= 0) {  // a reference of zeros: absolute
    double worst = 0;
    for (double x : to_doubles(got)) worst = std::isfinite(x) ? std::max(worst, std::abs(x)) : INFINITY;
    return worst <= prep.zero_output_limit[i] ? 0.0 : INFINITY;
  }
  return max_rel_err(got, prep.ref.at(i), op.error_per_row);
}

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
  if (op.derived_inputs) op.derived_inputs(p, ins);
  return ins;
}

// Everything a run needs, resident on the device.
struct Staged {
  std::vector<Tensor> dev_in, dev_out;
  void* workspace = nullptr;
};

Staged stage(const Op& op, const Variant& v, const Prepared& prep, Device& dev) {
  Staged s;
  for (const Tensor& t : prep.host_in) s.dev_in.push_back(dev.upload(t));
  for (const TensorSpec& spec : op.outputs(prep.problem)) s.dev_out.push_back(dev.allocate(spec));
  s.workspace = dev.workspace(v.workspace_bytes(prep.problem));
  return s;
}

// The config's launcher for this device: its own build, or its simulator build on the sim device.
void launch(const Variant& v, const Config& c, const Problem& p, Staged& s, Device& dev) {
  NvtxRange range(v.name.c_str());  // every launch, named by its rung
  Args a{s.dev_in, s.dev_out, s.workspace, dev.stream()};
  if (dev.backend() == Backend::sim && v.backend != Backend::sim) c.sim_run(p, a);
  else c.run(p, a);
}

// The launched kernels by their declared names; a kernel the config does not declare is a failure.
std::string name_launches(const Config& c, Backend b, const LaunchLog& log, std::vector<std::string>& names) {
  std::string undeclared;
  for (const void* k : log.kernels()) {
    std::string name;
    for (const KernelGroup& g : c.kernels)
      for (const KernelRef& r : g.kernels)
        if ((b == Backend::sim ? r.sim : r.cuda) == k) name = r.name;
    if (name.empty()) {
      name = fmt::format("an undeclared kernel at {}", k);
      if (undeclared.empty()) undeclared = name;
    }
    names.push_back(name);
  }
  return undeclared.empty() ? ""
                            : fmt::format("launched {} that config {} does not declare (its static facts would describe other kernels)",
                                          undeclared, c.name);
}

// Compares outputs against the reference and checks guards and that inputs were not written.
CheckResult verify(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Staged& s, Device& dev) {
  CheckResult r;
  r.problem = prep.problem;
  r.variant = v.name;
  r.config = c.name;
  r.backend = dev.backend();
  r.tolerance = check_tolerance(op, v, prep);
  for (size_t i = 0; i < s.dev_out.size(); ++i) {
    Tensor got = dev.download(s.dev_out[i]);
    if (!s.dev_out[i].check_guards()) r.failure = fmt::format("output {} written out of bounds (guard bytes changed)", i);
    r.max_rel_err = std::max(r.max_rel_err, output_error(op, prep, i, got));
  }
  if (r.failure.empty() && !dev.workspace_intact()) r.failure = "workspace written out of bounds (guard bytes changed)";
  for (size_t i = 0; i < s.dev_in.size() && r.failure.empty(); ++i) {
    Tensor back = dev.download(s.dev_in[i]);
    if (std::memcmp(back.data(), prep.host_in[i].data(), back.nbytes()) != 0 || !s.dev_in[i].check_guards())
      r.failure = fmt::format("input {} was modified by the variant", i);
  }
  if (r.failure.empty() && !(r.max_rel_err <= r.tolerance))
    r.failure = std::isfinite(r.max_rel_err)
                    ? fmt::format("max_rel_err {:.3g} over tolerance {:.3g}", r.max_rel_err, r.tolerance)
                    : "non-finite output (NaN/inf, or a poisoned element never written)";
  r.passed = r.failure.empty();
  return r;
}

CheckResult failed(const Op& op, const Variant& v, const Config& c, const Problem& p, Backend b, std::string why) {
  CheckResult r;
  r.problem = p;
  r.variant = v.name;
  r.config = c.name;
  r.backend = b;
  r.tolerance = v.tolerance ? v.tolerance(p) : op.tolerance(p);
  r.failure = std::move(why);
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

Prepared prepare(const Op& op, const Problem& p, uint64_t seed) {
  Prepared prep;
  prep.problem = p;
  prep.seed = seed;
  prep.host_in = random_inputs(op, p, seed);
  prep.ref = op.reference(p, prep.host_in);
  if (op.dtype_baseline) {
    const std::vector<std::vector<double>> base = op.dtype_baseline(p, prep.host_in);
    const std::vector<TensorSpec> outs = op.outputs(p);
    double largest = 0;  // the problem's scale: its largest reference value over every output
    for (const std::vector<double>& ref : prep.ref)
      for (double x : ref) largest = std::isfinite(x) ? std::max(largest, std::abs(x)) : largest;
    prep.zero_output_limit.assign(base.size(), -1.0);
    for (size_t i = 0; i < base.size() && i < outs.size(); ++i) {
      const std::vector<double>& ref = prep.ref.at(i);
      if (std::all_of(ref.begin(), ref.end(), [](double x) { return x == 0; })) {
        double noise = 0;
        for (double x : base[i]) noise = std::max(noise, std::abs(x));
        prep.zero_output_limit[i] = 2 * noise + op.tolerance(p) * largest;  // plus the rounding floor at the problem's scale
        continue;
      }
      const size_t row = op.error_per_row && !outs[i].shape.empty() ? static_cast<size_t>(outs[i].shape.back()) : 0;
      prep.baseline_err = std::max(prep.baseline_err, max_rel_err(base[i], ref, row));
    }
  }
  return prep;
}

CheckResult check_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& dev) {
  const Problem& p = prep.problem;
  if (auto why = v.supports_config(p, c)) return failed(op, v, c, p, dev.backend(), "unsupported: " + *why);
  NvtxRange range(fmt::format("check {} {} {} {}", op.name, v.name, c.name, p.label()));
  Staged s = stage(op, v, prep, dev);
  for (Tensor& t : s.dev_out) dev.poison(t);
  std::vector<std::string> launched;
  std::string undeclared;
  try {
    LaunchLog log;
    launch(v, c, p, s, dev);
    dev.synchronize();
    undeclared = name_launches(c, dev.backend(), log, launched);
  } catch (const RuntimeFailure& e) {  // a refused launch, a deadlock, a bad access: this case fails
    return failed(op, v, c, p, dev.backend(), e.what());
  }
  CheckResult r = verify(op, v, c, prep, s, dev);
  r.launched = std::move(launched);
  if (v.backend != Backend::cpu && !undeclared.empty()) {
    r.failure = undeclared;
    r.passed = false;
  }
  return r;
}

std::vector<CheckTally> check_op(const Op& op, DeviceSet& devs, uint64_t& seed, const std::vector<Problem>& problems,
                                 const std::vector<std::string>& only) {
  std::vector<CheckTally> tallies;
  auto tally_of = [&](const Variant& v, const Config& c, Backend b, DType t) -> CheckTally& {
    for (CheckTally& x : tallies)
      if (x.variant == v.name && x.config == c.name && x.backend == backend_name(b) && x.dtype == dtype_name(t)) return x;
    CheckTally fresh;
    fresh.op = op.name;
    fresh.variant = v.name;
    fresh.config = c.name;
    fresh.backend = backend_name(b);
    fresh.dtype = dtype_name(t);
    tallies.push_back(fresh);
    return tallies.back();
  };
  const std::vector<Problem> cases = problems.empty() ? op.check_cases(op) : problems;
  auto wanted = [&](const Variant& v) { return only.empty() || std::find(only.begin(), only.end(), v.name) != only.end(); };
  for (auto& dev : devs.present)
    for (const Problem& p : cases) {
      std::optional<Prepared> prep;  // drawn once per problem, only if some variant runs it
      for (const Variant& v : op.variants) {
        if (!v.runs_on(dev->backend()) || !wanted(v)) continue;
        for (const Config& c : v.configs) {
          CheckTally& t = tally_of(v, c, dev->backend(), p.dtype);
          if (auto why = v.supports_config(p, c)) {
            ++t.unsupported;
            t.skip_reason = *why;
            continue;
          }
          if (!prep) prep = prepare(op, p, seed++);
          CheckResult r = check_variant(op, v, c, *prep, *dev);
          t.worst = std::max(t.worst, r.max_rel_err);
          t.tolerance = std::max(t.tolerance, r.tolerance);
          if (r.passed) {
            ++t.passed;
          } else {
            ++t.failed;
            if (t.first_failure.empty()) t.first_failure = p.label() + ": " + r.failure;
          }
        }
      }
    }
  return tallies;
}

Point bench_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& dev, const BenchOptions& opt) {
  const Problem& p = prep.problem;
  if (auto why = v.supports_config(p, c))
    bad_input(fmt::format("variant {} (config {}) does not support {}: {}", v.name, c.name, p.label(), *why));
  if (!dev.times()) bad_input(fmt::format("{} checks correctness; it does not time", dev.name()));
  // NVTX: the benchmark as one range, its phases nested (an Nsight Systems timeline reads by rung).
  NvtxRange range(fmt::format("bench {} {} {} {} {}", op.name, v.name, c.name, p.label(), dtype_name(p.dtype)));
  std::optional<NvtxRange> phase(std::in_place, "stage and verify");
  Staged s = stage(op, v, prep, dev);
  for (Tensor& t : s.dev_out) dev.poison(t);
  launch(v, c, p, s, dev);
  dev.synchronize();
  CheckResult checked = verify(op, v, c, prep, s, dev);
  if (!checked.passed)
    runtime_failure(fmt::format("{} {} {} {}: wrong result, not timed: {}", op.name, v.name, c.name, p.label(), checked.failure));

  phase.reset();
  phase.emplace("warm-up");
  const double first = dev.time([&] { launch(v, c, p, s, dev); }).device_s;  // the first timed warm-up run
  for (int i = 1; i < opt.warmup && i * first < opt.max_seconds / 4; ++i) launch(v, c, p, s, dev);
  dev.synchronize();
  phase.reset();
  phase.emplace("timed runs");
  std::vector<double> times, host_times;
  bool host_bound = false;  // a launch sequence outlasted the device's hold: its time includes the host's
  auto t_start = std::chrono::steady_clock::now();
  for (;;) {
    if (opt.cold) dev.flush_caches();
    const Timing t = dev.time([&] { launch(v, c, p, s, dev); });
    times.push_back(t.device_s);
    host_times.push_back(t.host_s);
    host_bound = host_bound || t.host_bound;
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
  pt.config = c.name;
  pt.backend = std::string(backend_name(v.backend));
  pt.shape = p.shape_str();
  pt.label = p.label();
  pt.dtype = std::string(dtype_name(p.dtype));
  pt.peer = v.peer;
  pt.runs = static_cast<int>(times.size());
  pt.median_s = quantile(times, 0.5);
  pt.p10_s = quantile(times, 0.1);
  pt.p90_s = quantile(times, 0.9);
  pt.host_launch_s = quantile(host_times, 0.5);
  pt.host_bound = host_bound;
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
  if (ceil.peak_flops > 0 && ceil.bandwidth > 0) {
    const Roofline roof = roofline(cost, ceil.peak_flops, ceil.bandwidth);
    pt.t_lower_bound_s = roof.t_lower_bound_s;
    pt.bound = roof.bound();
  } else {  // a ceiling unknown: the bound of the one that is known, said in ceilings_source
    pt.t_lower_bound_s = ceil.bandwidth > 0 ? cost.bytes / ceil.bandwidth : ceil.peak_flops > 0 ? cost.flops / ceil.peak_flops : 0;
    pt.bound = ceil.bandwidth > 0 ? "memory" : "compute";
  }
  pt.pct_of_bound = 100.0 * pt.t_lower_bound_s / pt.median_s;
  pt.peak_flops = ceil.peak_flops;
  pt.bandwidth = ceil.bandwidth;
  pt.ceilings_source = ceil.flops_source + "; " + ceil.bandwidth_source;
  pt.max_rel_err = checked.max_rel_err;
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
    // The source tree's state describes this binary only while the tree is at the commit it was built
    // from (a copied tree elsewhere, or a later checkout, is not what ran): else the build's commit.
    const std::string built = KERNELAB_COMMIT;
    if (out.empty() || built == "unknown" || out.rfind(built.substr(0, 7), 0) != 0) return built;
    return out;
  }();
  return commit;
}

}  // namespace kl
