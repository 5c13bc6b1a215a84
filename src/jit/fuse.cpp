// `kernelab fuse` (fuse.h): inputs, the simulator runs of both schedules, the check, NVRTC.
#include "jit/fuse.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/specs.h"
#include "kernelab/dtype.h"
#include "kernelab/error.h"
#include "kernelab/rng.h"
#include "sim/run/driver.h"

namespace fs = std::filesystem;

namespace kl::jit {
namespace {

double round_to(FuseDType t, double v) {
  switch (t) {
    case FuseDType::fp32: return double(float(v));
    case FuseDType::fp16: return double(f16_to_float(double_to_f16(v)));
    default: return double(bf16_to_float(double_to_bf16(v)));
  }
}

std::string raw(FuseDType t, const std::vector<std::vector<double>>& values) {
  std::string s;
  for (const auto& v : values)
    for (double x : v) {
      if (t == FuseDType::fp32) {
        const float f = float(x);
        s.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        const uint16_t h = t == FuseDType::fp16 ? double_to_f16(x) : double_to_bf16(x);
        s.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
  return s;
}

double from_raw(FuseDType t, const char* p) {
  if (t == FuseDType::fp32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == FuseDType::fp16 ? f16_to_float(h) : bf16_to_float(h);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// max |y - ref| / max |ref|; infinity for a NaN or infinity where the reference has none (a
// poisoned element nobody wrote reads as NaN).
double max_rel_err(const std::vector<double>& y, const std::vector<double>& ref) {
  double scale = 0, worst = 0;
  for (double r : ref)
    if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
  if (scale == 0) scale = 1;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (y[i] == ref[i]) continue;  // infinities of the same sign included
    if (!std::isfinite(y[i]) || !std::isfinite(ref[i])) return INFINITY;
    worst = std::max(worst, std::fabs(y[i] - ref[i]) / scale);
  }
  return worst;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kernelab-fuse-XXXXXX").string();
    if (!mkdtemp(t.data())) runtime_failure("fuse: cannot create a temporary folder");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The outputs' values from their bytes (Program::outputs order, each row-major in the dtype).
std::vector<std::vector<double>> output_values(const Program& p, const FuseRequest& q, const std::string& bytes, const std::string& schedule) {
  const int size = fuse_dtype_bytes(q.dtype);
  std::vector<std::vector<double>> result;
  std::size_t at = 0;
  for (const Tensor& o : p.outputs) {
    const int64_t n = elements(o.kind, q.rows, q.cols);
    if (at + std::size_t(n * size) > bytes.size()) runtime_failure("fuse: the " + schedule + " schedule wrote too few outputs");
    std::vector<double> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i, at += std::size_t(size)) v[std::size_t(i)] = from_raw(q.dtype, bytes.data() + at);
    result.push_back(std::move(v));
  }
  return result;
}

// The simulator program of an expression (every dtype and shape), in `sim run`'s cache folder
// under a hash of its text; `sim run` caches its build.
fs::path simulator_program_file(const Program& p) {
  const std::string text = simulator_program(p);
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
  const fs::path dir = fs::path(sim::cache_dir()) / "fuse";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path program = dir / (std::string("fuse_") + key + ".cu");
  if (!fs::exists(program, ec) || slurp(program) != text) {
    const fs::path tmp = program.string() + "." + std::to_string(getpid());
    std::ofstream(tmp, std::ios::binary) << text;
    fs::rename(tmp, program, ec);
  }
  return program;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

namespace {
// The L2 the profiler models: the H100 SXM's, from the hardware database.
int64_t modelled_l2_bytes() { return int64_t(find_gpu("h100-sxm").l2_bytes.value); }

// One schedule's run of the simulator program: its inputs written to a temporary folder, the request.
struct ScheduleRun {
  TempDir tmp;
  fs::path out = tmp.path / "outputs.bin";
  sim::RunRequest request;
  ScheduleRun(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols, const std::string& inputs) {
    const fs::path in = tmp.path / "inputs.bin";
    std::ofstream(in, std::ios::binary) << inputs;
    request.file = simulator_program_file(p).string();
    request.args = {fuse_dtype_name(t), schedule, std::to_string(rows), std::to_string(cols), in.string(), out.string()};
    request.debug_info = false;  // generated, never stepped through; a fault names its kernel and site without it
  }
};

// The run on the program's profiling build: its launches (its outputs in run.out).
std::vector<sim::LaunchProfile> run_profiled(ScheduleRun& run, const std::string& schedule, std::uint64_t l2_bytes,
                                             std::uint64_t blocks) {
  run.request.profile = true;
  run.request.profile_l2_bytes = l2_bytes;
  run.request.profile_blocks = blocks;
  std::vector<sim::LaunchProfile> launches;
  const int code = sim::run_program(run.request, &launches);
  if (code != 0)
    runtime_failure("fuse: the " + schedule + " schedule failed in the simulator's profiling build (exit " + std::to_string(code) +
                    "; its messages are above)");
  return launches;
}

ScheduleTraffic profile_schedule(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols,
                                 const std::string& inputs) {
  ScheduleRun run(p, t, schedule, rows, cols, inputs);
  const std::vector<sim::LaunchProfile> launches = run_profiled(run, schedule, std::uint64_t(modelled_l2_bytes()), 0);
  ScheduleTraffic traffic;
  for (const sim::LaunchProfile& l : launches) {
    const sim::ProfileCounts& c = l.counts;
    ++traffic.launches;
    traffic.requested_bytes += int64_t(32 * (c.global_ld_sectors + c.global_st_sectors));
    traffic.dram_bytes += int64_t(c.dram_read_bytes + c.dram_write_bytes);
  }
  return traffic;
}
}  // namespace

std::string simulate_schedule(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols,
                              const std::string& inputs, bool race_check) {
  ScheduleRun run(p, t, schedule, rows, cols, inputs);
  run.request.race_check = race_check;
  const int code = sim::run_program(run.request);
  if (code != 0) runtime_failure("fuse: the " + schedule + " schedule failed in the simulator (exit " + std::to_string(code) + "; its messages are above)");
  return slurp(run.out);
}

std::string simulate_schedule_profiled(const Program& p, FuseDType t, const std::string& schedule, int64_t rows, int64_t cols,
                                       const std::string& inputs) {
  ScheduleRun run(p, t, schedule, rows, cols, inputs);
  const sim::ProfileOptions options = sim::profile_options();
  sim::profile_add(run_profiled(run, schedule, options.l2_bytes, options.max_blocks));
  return slurp(run.out);
}

std::vector<std::vector<double>> fuse_inputs(const Program& p, const FuseRequest& q) {
  Rng rng(q.seed);
  std::vector<std::vector<double>> inputs;
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    const bool positive = feeds_positive_only(p, int(i));
    std::vector<double> v(static_cast<std::size_t>(elements(p.inputs[i].kind, q.rows, q.cols)));
    for (double& x : v) x = round_to(q.dtype, draw_input(rng, positive));
    inputs.push_back(std::move(v));
  }
  return inputs;
}

FuseReport run_fuse(const FuseRequest& q) {
  if (q.rows < 1 || q.cols < 1) bad_input("fuse: --rows and --cols must be at least 1");
  if (q.rows > 65535 * 1024LL || q.rows * q.cols > (int64_t(1) << 31)) bad_input("fuse: the shape is too large for the simulator");
  FuseReport rep;
  rep.program = parse(q.expr, q.vectors);
  const Program& p = rep.program;
  rep.fused_source = fused_source(p, q.dtype);
  rep.unfused_source = unfused_source(p, q.dtype);
  const int bytes = fuse_dtype_bytes(q.dtype);
  rep.bytes_unfused = bytes_unfused(p, q.rows, q.cols, bytes);
  rep.bytes_fused = bytes_fused(p, q.rows, q.cols, bytes);
  for (const Node& n : p.nodes) rep.kernels_unfused += !is_leaf(n.op) && n.kind != Kind::scalar;
  rep.passes_fused = p.levels + 1;
  rep.tolerance = fuse_tolerance(q.dtype);

  // NVRTC first: its failure decides the schedule.
  rep.schedule = "fused";
  if (const char* f = std::getenv("KERNELAB_JIT_FAIL"); f && std::string(f) == "1" && !q.arch)
    rep.fallback = "KERNELAB_JIT_FAIL=1 is set (a planted NVRTC failure)";
  if (q.arch) {
    JitResult j = jit_compile(rep.fused_source, *q.arch);
    if (j.ok) rep.jit = std::move(j);
    else rep.fallback = one_line(j.error);
  }
  if (rep.fallback) rep.schedule = "unfused";

  if (q.compile_only) {
    if (!q.arch) bad_input("fuse: --compile-only needs --arch (what NVRTC compiles for)");
    rep.passed = !rep.fallback;
    return rep;
  }
  const auto inputs = fuse_inputs(p, q);
  const std::string in = raw(q.dtype, inputs);
  const auto ref = evaluate(p, inputs, q.rows, q.cols);
  for (std::size_t i = 0; i < ref.size(); ++i)
    for (double v : ref[i])
      if (std::isnan(v))
        bad_input("fuse: the float64 evaluation of " + p.outputs[i].name +
                  " gives NaN on the generated inputs (uniform in [-2, 2], or [0.5, 2] where log, sqrt or rsqrt takes an input "
                  "directly): the expression is not defined there (a log or sqrt of a negative value, 0/0, inf - inf?)");
  const auto unfused = output_values(p, q, simulate_schedule(p, q.dtype, "unfused", q.rows, q.cols, in), "unfused");
  std::vector<std::vector<double>> fused;
  if (!rep.fallback) fused = output_values(p, q, simulate_schedule(p, q.dtype, "fused", q.rows, q.cols, in), "fused");
  if (q.profile) {
    rep.profile_l2_bytes = modelled_l2_bytes();
    rep.traffic_unfused = profile_schedule(p, q.dtype, "unfused", q.rows, q.cols, in);
    if (!rep.fallback) rep.traffic_fused = profile_schedule(p, q.dtype, "fused", q.rows, q.cols, in);
  }
  rep.passed = true;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {
    OutputCheck c{p.outputs[i].name, p.outputs[i].kind};
    c.max_rel_err_unfused = max_rel_err(unfused[i], ref[i]);
    c.max_rel_err = rep.fallback ? c.max_rel_err_unfused : max_rel_err(fused[i], ref[i]);
    rep.passed = rep.passed && c.max_rel_err <= rep.tolerance;
    rep.outputs.push_back(c);
  }
  return rep;
}

}  // namespace kl::jit
