// The harness: checks variants against the float64 reference and times them.
#pragma once
#include <string>
#include <vector>

#include "kernelab/device.h"
#include "kernelab/op.h"

namespace kl {

// One problem's random inputs (fresh, never zeros) and their float64 reference, computed once
// and shared by every variant and config checked or timed on it.
struct Prepared {
  Problem problem;
  uint64_t seed = 0;
  std::vector<Tensor> host_in;
  std::vector<std::vector<double>> ref;  // one per output, row-major logical order
  double baseline_err = 0;               // the op's dtype_baseline against ref, where it has one
  // Per output whose reference is exactly zero (attention_bwd's dQ and dK when each query sees one
  // key): how far from zero a variant may stray, twice the baseline's own rounding noise there plus
  // the tolerance times the largest reference value of any output (FlashAttention's rule in absolute
  // terms); negative for the other outputs.
  std::vector<double> zero_output_limit;
};
Prepared prepare(const Op& op, const Problem& p, uint64_t seed);

struct CheckResult {
  Problem problem;
  std::string variant, config;
  Backend backend = Backend::cpu;
  bool passed = false;
  double max_rel_err = 0;
  double tolerance = 0;
  std::string failure;                // empty when passed
  std::vector<std::string> launched;  // the kernels the run launched, by name, in order
};

// A variant's tolerance on the prepared problem (its own or the op's, plus twice the dtype
// baseline's error), and output i's error against the reference as the check measures it (an
// all-zero reference in absolute terms: 0 within zero_output_limit, else infinite).
double check_tolerance(const Op& op, const Variant& v, const Prepared& prep);
double output_error(const Op& op, const Prepared& prep, size_t i, const Tensor& got);

// Runs one config of a variant on the prepared inputs with poisoned outputs and guards, compares
// every output against the reference, and refuses a launch of a kernel the config does not declare.
CheckResult check_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& dev);

// One config's results over an op's whole correctness sweep, per dtype.
struct CheckTally {
  std::string op, variant, config, backend, dtype;
  int passed = 0, failed = 0, unsupported = 0;
  double worst = 0, tolerance = 0;  // the largest error seen and the largest tolerance applied
  std::string first_failure, skip_reason;
};

// Runs every config of every variant whose backend is present in `devs` on each problem (by
// default op.check_cases), a fresh seed per problem: seed, seed+1, ... (advanced past the last one
// used). Only the variants named in `only`, when it is not empty.
std::vector<CheckTally> check_op(const Op& op, DeviceSet& devs, uint64_t& seed, const std::vector<Problem>& problems = {},
                                 const std::vector<std::string>& only = {});

struct BenchOptions {
  int warmup = 3;
  int min_runs = 10;
  int max_runs = 1000;
  double max_seconds = 1.0;  // per point, after warm-up
  double max_noise = 0.01;   // stop once the relative standard error of the mean is below this
  bool cold = false;         // flush caches before every run
};

struct Point {
  std::string op, variant, config, backend, shape, dtype, label;
  bool peer = false;
  double median_s = 0, min_s = 0, max_s = 0, p10_s = 0, p90_s = 0;
  double host_launch_s = 0;  // median host time of the launch calls (CUDA: apart from median_s, the GPU's)
  bool host_bound = false;   // some run's launches took longer to issue than the device held them
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

// Times one config of a variant on one prepared problem (checking its result once first).
Point bench_variant(const Op& op, const Variant& v, const Config& c, const Prepared& prep, Device& dev,
                    const BenchOptions& opt);

std::string build_commit();  // the commit this binary was built from

}  // namespace kl
