#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"
#include "kernelab/error.h"
#include "kernelab/ladder.h"
#include "report/report.h"
#include "trace/cupti_tracer.h"

namespace kl::cli {

namespace {
struct BenchFlags {
  std::string op, backend, trace, rung_file;
  std::vector<std::string> variants, configs;
  bool json = false, cold = false;
  double max_seconds = 1.0;
  ProblemFlags problem;

  void attach(CLI::App& sub) {
    sub.add_option("op", op, "the op")->required();
    sub.add_option("--backend", backend, "cpu, cuda or sim (default: every backend present)");
    sub.add_option("--variant", variants, "variants to run (default: all)")->delimiter(',');
    sub.add_option("--rung", rung_file, "a rung file of your own (FILE.cu, written as src/ops/*/cuda/*.cu are), built by nvcc and timed beside the others");
    sub.add_option("--config", configs, "configs to run (default: bench the first of each variant, sweep all)")->delimiter(',');
    sub.add_flag("--json", json, "print one JSON object");
    sub.add_flag("--cold", cold, "flush caches before every timed run");
    sub.add_option("--max-seconds", max_seconds, "timing budget per point after warm-up")->check(CLI::PositiveNumber);
    sub.add_option("--trace", trace, "write a CUPTI trace of the runs (Kineto layout; needs a GPU): FILE.json");
    problem.attach(sub);
  }
  // --rung: the file built by nvcc and added to the op's ladder, timed beside the built-in rungs.
  void load_rung() const {
    if (!rung_file.empty()) load_rung_file(rung_file, op, {.gpu = true});
  }
};

// --trace FILE: CUPTI records from before the devices open until the last run; refused up front
// (RuntimeFailure) where there is no GPU or no CUPTI.
std::unique_ptr<trace::CuptiTracer> start_trace(const BenchFlags& f) {
  return f.trace.empty() ? nullptr : trace::CuptiTracer::start();
}

void finish_trace(std::unique_ptr<trace::CuptiTracer>& tracer, const BenchFlags& f) {
  if (!tracer) return;
  const size_t n = tracer->stop_and_write(f.trace);
  fmt::print(stderr, "trace: {} events written to {} (kernelab trace analyze {})\n", n, f.trace, f.trace);
}

// Benchmarks the chosen configs of every chosen variant on p on each present device: the inputs
// and their reference drawn once for all of them.
std::vector<Point> run_points(const Op& op, const Problem& p, const BenchFlags& f, DeviceSet& devs, bool every_config) {
  BenchOptions opt;
  opt.cold = f.cold;
  opt.max_seconds = f.max_seconds;
  std::vector<Point> points;
  const std::vector<const Variant*> variants = chosen_variants(op, f.variants);
  check_config_names(op, variants, f.configs);
  std::optional<Prepared> prep;
  for (const Variant* v : variants) {
    Device* dev = find_device(devs, v->backend);
    if (!dev && !f.variants.empty())
      runtime_failure(fmt::format("variant {} needs the {} backend, which is not present", v->name, backend_name(v->backend)));
    if (!dev) continue;
    for (const Config* c : chosen_configs(*v, f.configs, !every_config)) {
      if (auto why = v->supports_config(p, *c)) {
        if (!f.variants.empty()) bad_input(fmt::format("variant {} (config {}) does not support {}: {}", v->name, c->name, p.label(), *why));
        continue;
      }
      if (!f.json) fmt::print(stderr, "  timing {} {} {} ...\n", v->name, c->name, p.label());
      if (!prep) prep = prepare(op, p, 0x5EED ^ std::hash<std::string>{}(p.label()));
      points.push_back(bench_variant(op, *v, *c, *prep, *dev, opt));
    }
  }
  return points;
}

void print_ladders(const std::vector<Ladder>& ladders) {
  for (const Ladder& L : ladders) {
    fmt::print("\n{} {} {} on {} ({})\n", L.op, L.label, L.dtype, L.backend, L.device);
    std::vector<std::vector<std::string>> rows;
    for (const LadderRow& r : L.rows) {
      const Point& p = r.point;
      rows.push_back({p.variant + (p.peer ? " (peer)" : ""), p.config, format_seconds(p.median_s),
                      format_seconds(p.host_launch_s) + (p.host_bound ? " (host-bound)" : ""),
                      fmt::format("{}-{}", format_seconds(p.p10_s), format_seconds(p.p90_s)), fmt::format("{:.3f}", p.tflops),
                      fmt::format("{:.1f}", p.gbps), fmt::format("{:.1f}% ({})", p.pct_of_bound, p.bound),
                      format_ratio(r.vs_below), format_ratio(r.vs_peer), fmt::format("{:.1e}", p.max_rel_err)});
    }
    print_table({"variant", "config", "median", "host launch", "p10-p90", "TFLOP/s", "GB/s", "of bound", "vs below", "vs peer", "max_rel_err"}, rows);
    if (!L.rows.empty()) {  // what "of bound" is measured against, and where that figure comes from
      const Point& p = L.rows.front().point;
      fmt::print("of bound: against {:.3f} TFLOP/s and {:.1f} GB/s ({})\n", p.peak_flops / 1e12, p.bandwidth / 1e9, p.ceilings_source);
    }
  }
}

// An absent backend ("cuda: no GPU present (...)") and, by name, the rows it would have had
// and the variants that do not take this problem, grouped by their reason.
void print_not_run(const Op& op, const Problem& p, const std::string& absent) {
  fmt::print("not run: {}\n", absent);
  const std::string backend = absent.substr(0, absent.find(':'));
  std::vector<std::string> would;
  std::map<std::string, std::vector<std::string>> refused;
  for (const Variant& v : op.variants) {
    if (backend_name(v.backend) != backend) continue;
    const std::string name = v.name + (v.peer ? " (peer)" : "");
    if (Reason why = v.supports_config(p, v.configs.front())) refused[*why].push_back(name);
    else would.push_back(name);
  }
  if (!would.empty()) fmt::print("  rows not run: {}\n", fmt::join(would, ", "));
  for (const auto& [why, names] : refused) fmt::print("  {} would not run it either: {}\n", fmt::join(names, ", "), why);
}

nlohmann::json points_json(const std::vector<Point>& points) {
  nlohmann::json arr = nlohmann::json::array();
  for (const Point& p : points) arr.push_back(point_to_json(p));
  return arr;
}

// --against: where each rung of the swept op turns slower than another op's fastest variant on the
// same dims and dtype (gemm_w4a16 --against gemm: the unquantized GEMM), its library peers alone
// where their backend is present (cuBLAS on a GPU, OpenBLAS on the CPU).
struct AgainstPoint {
  std::string value, backend, variant;  // the baseline's fastest variant at this axis value
  double median_s = 0;
};
struct AgainstCrossover {
  std::string variant, config, backend, dtype;
  std::vector<std::pair<std::string, double>> ratios;  // per axis value, the baseline's time over the rung's
  // The first value at which the rung's side flips (faster -> slower or the reverse); ratios.size() if never.
  size_t flip() const {
    for (size_t i = 1; i < ratios.size(); ++i)
      if ((ratios[i].second >= 1.0) != (ratios[0].second >= 1.0)) return i;
    return ratios.size();
  }
  std::string story(const std::string& axis) const {
    const size_t j = flip();
    const bool faster = ratios[0].second >= 1.0;
    if (j == ratios.size()) return fmt::format("{} at every {} swept", faster ? "faster" : "slower", axis);
    return fmt::format("{} up to {}={}, {} from {}={}", faster ? "faster" : "slower", axis, ratios[j - 1].first,
                       faster ? "slower" : "faster", axis, ratios[j].first);
  }
};

std::vector<AgainstPoint> run_against(const Op& base, const std::vector<Problem>& problems, const std::vector<std::string>& values,
                                      const BenchFlags& f, DeviceSet& devs) {
  std::vector<AgainstPoint> out;
  for (size_t i = 0; i < problems.size(); ++i) {
    std::map<std::string, int64_t> dims;
    for (const DimSpec& d : base.dims)
      if (problems[i].dims.count(d.name)) dims[d.name] = problems[i].dim(d.name);
    const Problem q = make_problem(base, problems[i].dtype, dims, {}, Use::run);
    // The library peers that are present and take q (the fp16 GEMM on a GPU: cuBLASLt) are the
    // baseline; every variant where there are none. Timing the naive rungs too cost an H200 window its sweeps.
    BenchFlags all = f;
    all.variants.clear(), all.configs.clear();
    for (const Variant& v : base.variants)
      if (v.peer && find_device(devs, v.backend) && !v.supports_config(q, v.configs.front())) all.variants.push_back(v.name);
    std::map<std::string, AgainstPoint> fastest;  // per backend
    for (const Point& pt : run_points(base, q, all, devs, false)) {
      AgainstPoint& b = fastest[pt.backend];
      if (b.variant.empty() || pt.median_s < b.median_s) b = {values[i], pt.backend, pt.variant, pt.median_s};
    }
    for (auto& [backend, b] : fastest) out.push_back(b);
  }
  return out;
}

std::vector<AgainstCrossover> against_crossovers(const std::vector<Point>& points, const std::vector<Problem>& problems,
                                                 const std::vector<std::string>& values, const std::vector<AgainstPoint>& base) {
  std::map<std::string, AgainstCrossover> by_rung;
  for (size_t i = 0; i < problems.size(); ++i)
    for (const Point& pt : points) {
      if (pt.label != problems[i].label()) continue;
      auto b = std::find_if(base.begin(), base.end(), [&](const AgainstPoint& x) { return x.value == values[i] && x.backend == pt.backend; });
      if (b == base.end()) continue;
      AgainstCrossover& c = by_rung[pt.variant + "/" + pt.config + "/" + pt.backend + "/" + pt.dtype];
      if (c.variant.empty()) c = {pt.variant, pt.config, pt.backend, pt.dtype, {}};
      c.ratios.emplace_back(values[i], b->median_s / pt.median_s);
    }
  std::vector<AgainstCrossover> out;
  for (auto& [key, c] : by_rung) out.push_back(c);
  return out;
}

void print_against(const std::string& axis, const std::string& base, const std::vector<AgainstPoint>& points,
                   const std::vector<AgainstCrossover>& crossovers) {
  fmt::print("\nagainst {} (its fastest variant at each {}, same backend, dims and dtype):\n", base, axis);
  std::vector<std::vector<std::string>> rows;
  for (const AgainstPoint& b : points) rows.push_back({b.value, b.backend, b.variant, format_seconds(b.median_s)});
  print_table({axis, "backend", base + " fastest", "median"}, rows);
  fmt::print("each rung against {} ({}'s median over the rung's; the crossover {}):\n", base, base, axis);
  for (const AgainstCrossover& c : crossovers) {
    std::vector<std::string> speeds;
    for (const auto& [value, ratio] : c.ratios) speeds.push_back(fmt::format("{:.2f}x at {}", ratio, value));
    fmt::print("  {} ({}, {} {}): {}; {}\n", c.variant, c.config, c.backend, c.dtype, c.story(axis), fmt::join(speeds, ", "));
  }
}
}  // namespace

void add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "the ladder table of one op on one problem");
  static BenchFlags f;
  f.attach(*sub);
  sub->callback([] {
    f.load_rung();
    const Op& op = find_op(f.op);
    Problem p = f.problem.problem(op);
    if (f.backend == "sim") bad_input("the simulator (--backend sim) checks correctness; it does not time: use check --backend sim");
    auto tracer = start_trace(f);
    DeviceSet devs = open_devices(wanted_backends(f.backend));
    if (devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    std::vector<Point> points = run_points(op, p, f, devs, false);
    finish_trace(tracer, f);
    if (points.empty()) bad_input(fmt::format("no variant of {} runs {} on the backends present", op.name, p.label()));
    if (f.json) {
      fmt::print("{}\n", nlohmann::json{{"points", points_json(points)}, {"absent_backends", devs.absent}}.dump(2));
      return;
    }
    print_ladders(make_ladders(points));
    for (const std::string& a : devs.absent) print_not_run(op, p, a);
  });
}

void add_sweep(CLI::App& app) {
  auto* sub = app.add_subcommand("sweep", "the ladder over one shape axis, with the crossovers");
  static BenchFlags f;
  static std::string axis, against;
  f.attach(*sub);
  sub->add_option("--axis", axis, "NAME=v1,v2,...")->required();
  sub->add_option("--against", against,
                  "another op timed on the same dims and dtype at each value; prints where each rung turns slower than its "
                  "fastest variant (gemm_w4a16 --against gemm: the unquantized GEMM)");
  sub->callback([] {
    f.load_rung();
    const Op& op = find_op(f.op);
    auto eq = axis.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == axis.size()) bad_input(fmt::format("--axis '{}' is not NAME=v1,v2,...", axis));
    const std::string name = axis.substr(0, eq);
    std::vector<std::string> values;
    for (size_t at = eq + 1; at <= axis.size();) {
      size_t next = axis.find(',', at);
      if (next == std::string::npos) next = axis.size();
      values.push_back(axis.substr(at, next - at));
      at = next + 1;
    }
    const bool is_dim = std::any_of(op.dims.begin(), op.dims.end(), [&](const DimSpec& d) { return d.name == name; });
    const bool is_opt = std::any_of(op.opts.begin(), op.opts.end(), [&](const OptSpec& o) { return o.name == name; });
    if (!is_dim && !is_opt) bad_input(fmt::format("op {} has no axis '{}'", op.name, name));
    // Every value is validated before anything is timed: a bad one is refused up front.
    std::vector<Problem> problems;
    for (const std::string& value : values) {
      auto dims = f.problem.given_dims(op);
      auto opts = f.problem.given_opts(op);
      if (is_dim) {
        size_t used = 0;
        int64_t x = 0;
        try {
          x = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || value.empty()) bad_input(fmt::format("axis value '{}' of {} is not an integer", value, name));
        dims[name] = x;
      } else {
        opts[name] = value;
      }
      problems.push_back(make_problem(op, f.problem.dtype(op), dims, opts, Use::run, f.problem.given_tensor_dtypes()));
    }
    const Op* base = against.empty() ? nullptr : &find_op(against);
    if (base && base->name == op.name) bad_input(fmt::format("--against {}: the op swept itself", against));
    auto tracer = start_trace(f);
    DeviceSet devs = open_devices(wanted_backends(f.backend));
    if (devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    std::vector<Point> points;
    for (const Problem& p : problems)
      for (Point& pt : run_points(op, p, f, devs, true)) points.push_back(pt);
    const std::vector<AgainstPoint> base_points = base ? run_against(*base, problems, values, f, devs) : std::vector<AgainstPoint>{};
    const std::vector<AgainstCrossover> base_crossovers = against_crossovers(points, problems, values, base_points);
    finish_trace(tracer, f);
    auto ladders = make_ladders(points);
    auto crossovers = find_crossovers(ladders, name);
    if (f.json) {
      nlohmann::json cj = nlohmann::json::array();
      for (const Crossover& c : crossovers)
        cj.push_back({{"op", c.op}, {"variant", c.variant}, {"config", c.config}, {"below", c.below}, {"backend", c.backend}, {"dtype", c.dtype},
                      {"axis", name}, {"value", c.axis_value}, {"speedup", c.speedup}});
      nlohmann::json out = {{"axis", name}, {"points", points_json(points)}, {"crossovers", cj}, {"absent_backends", devs.absent}};
      if (base) {
        nlohmann::json bp = nlohmann::json::array(), bc = nlohmann::json::array();
        for (const AgainstPoint& b : base_points)
          bp.push_back({{"value", b.value}, {"backend", b.backend}, {"variant", b.variant}, {"median_s", b.median_s}});
        for (const AgainstCrossover& c : base_crossovers) {
          nlohmann::json ratios = nlohmann::json::array();
          for (const auto& [value, ratio] : c.ratios) ratios.push_back({{"value", value}, {"speedup", ratio}});
          const size_t j = c.flip();
          bc.push_back({{"variant", c.variant}, {"config", c.config}, {"backend", c.backend}, {"dtype", c.dtype}, {"speedups", ratios},
                        {"crossover", j < c.ratios.size() ? nlohmann::json(c.ratios[j].first) : nlohmann::json(nullptr)},
                        {"story", c.story(name)}});
        }
        out["against"] = {{"op", base->name}, {"points", bp}, {"crossovers", bc}};
      }
      fmt::print("{}\n", out.dump(2));
      return;
    }
    print_ladders(ladders);
    fmt::print("\ncrossovers along {} (a rung slower than the rung below):\n", name);
    if (crossovers.empty()) fmt::print("  none: every rung is at least as fast as the one below at every value\n");
    for (const Crossover& c : crossovers)
      fmt::print("  {}={}: {} ({}) is {:.2f}x the speed of {} ({} {})\n", name, c.axis_value, c.variant, c.config, c.speedup, c.below,
                 c.backend, c.dtype);
    if (base) print_against(name, base->name, base_points, base_crossovers);
  });
}

}  // namespace kl::cli
