// The harness: checks variants against the float64 reference and times them.
#pragma once
#include <string>
#include <vector>

#include "kernelab/device.h"
#include "kernelab/op.h"

namespace kl {

struct CheckResult {
  Problem problem;
  std::string variant;
  Backend backend = Backend::cpu;
  bool passed = false;
  double max_rel_err = 0;
  double tolerance = 0;
  std::string failure;  // empty when passed
};

// Runs one variant on fresh random inputs with poisoned outputs and guards, compares every
// output against the reference. Seeds differ per call.
CheckResult check_variant(const Op& op, const Variant& v, const Problem& p, Device& dev, uint64_t seed);

// One variant's results over an op's whole correctness sweep, per dtype.
struct CheckTally {
  std::string op, variant, backend, dtype;
  int passed = 0, failed = 0, unsupported = 0;
  double worst = 0, tolerance = 0;  // the largest error seen and the largest tolerance applied
  std::string first_failure, skip_reason;
};

// Runs every variant whose backend is present in `devs` on every case of op.check_cases, with
// seeds seed, seed+1, ... (advanced past the last one used).
std::vector<CheckTally> check_op(const Op& op, DeviceSet& devs, uint64_t& seed);

struct BenchOptions {
  int warmup = 3;
  int min_runs = 10;
  int max_runs = 1000;
  double max_seconds = 1.0;  // per point, after warm-up
  double max_noise = 0.01;   // stop once the relative standard error of the mean is below this
  bool cold = false;         // flush caches before every run
};

struct Point {
  std::string op, variant, backend, shape, dtype, label;
  bool peer = false;
  double median_s = 0, min_s = 0, max_s = 0, p10_s = 0, p90_s = 0;
  int runs = 0;
  double noise = 0;  // relative standard error of the mean
  double flops = 0, bytes = 0, tflops = 0, gbps = 0;
  double t_lower_bound_s = 0, pct_of_bound = 0;
  std::string bound;  // "memory" or "compute"
  double max_rel_err = 0;
  bool cold = false;
  std::string device, clocks, commit, ceilings_source;
  double peak_flops = 0, bandwidth = 0;
};

// Times one variant on one problem (checking its result once first).
Point bench_variant(const Op& op, const Variant& v, const Problem& p, Device& dev,
                    const BenchOptions& opt);

std::string build_commit();  // the commit this binary was built from

}  // namespace kl
