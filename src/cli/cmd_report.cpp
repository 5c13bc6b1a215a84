#include <fmt/format.h>
#include <algorithm>
#include <set>

#include "cli/common.h"
#include "kernelab/error.h"
#include "kernelab/probe.h"
#include "report/cuda_variants.h"
#include "report/report.h"

namespace kl::cli {

void add_report(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "check and benchmark the default suite on every backend present; write the report");
  static std::string out = "report";
  static double max_seconds = 0.3;
  static std::string results_dir = default_results_dir();
  static std::string backend;
  sub->add_option("--out", out, "output folder (index.html, report.md, results.json)");
  sub->add_option("--backend", backend, "cpu, cuda or sim only (default: every backend present)");
  sub->add_option("--max-seconds", max_seconds, "timing budget per point")->check(CLI::PositiveNumber);
  sub->add_option("--results", results_dir, "committed GPU results (<gpu>/*.json) that mark CUDA variants verified");
  sub->callback([] {
    ReportData r;
    r.generated_at = utc_now();
    r.commit = build_commit();
    r.host = host_cpu_name();
    const std::vector<Backend> wanted = wanted_backends(backend);
    DeviceSet devs = open_devices(wanted);
    if (devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    r.absent_backends = devs.absent;
    BenchOptions opt;
    opt.max_seconds = max_seconds;
    opt.min_runs = 5;
    opt.cold = true;  // caches flushed before every run: no point rides on a cache-resident working set
    std::set<std::pair<std::string, std::string>> roofs_done;
    uint64_t seed = 1;
    bool all_passed = true;
    std::vector<CheckTally> tallies;  // every check, for the CUDA variants section
    for (const Op& op : registry()) {
      int passed = 0, failed = 0;
      for (const CheckTally& t : check_op(op, devs, seed)) {
        passed += t.passed;
        failed += t.failed;
        all_passed = all_passed && t.failed == 0;
        if (t.failed)
          r.check_summary.push_back(fmt::format("{} {} ({}) {} FAILED: {}", op.name, t.variant, t.config, t.dtype, t.first_failure));
        tallies.push_back(t);
      }
      r.check_summary.push_back(fmt::format("{}: {} of {} checks passed (every variant, the sweep of shapes and dtypes "
                                            "of `kernelab check {}`)", op.name, passed, passed + failed, op.name));
      for (const Problem& p : op.report_cases(op)) {
        const Prepared prep = prepare(op, p, seed++);  // the inputs and reference, once for every variant
        for (const Variant& v : op.variants) {
          Device* dev = find_device(devs, v.backend);
          const Config& c = v.configs.front();  // the default config; `sweep` times them all
          if (!dev || v.supports_config(p, c)) continue;
          fmt::print(stderr, "report: {} {} {} {}\n", op.name, v.name, dtype_name(p.dtype), p.label());
          try {
            r.points.push_back(bench_variant(op, v, c, prep, *dev, opt));
          } catch (const RuntimeFailure& e) {  // one point's failure (a peer's library refusing, say) costs that point alone
            all_passed = false;
            r.check_summary.push_back(fmt::format("{} {} {} {}: not timed: {}", op.name, v.name, dtype_name(p.dtype), p.label(), e.what()));
            continue;
          }
          if (roofs_done.insert({dev->name(), std::string(dtype_name(p.dtype))}).second) {
            Ceilings c = dev->ceilings(p.dtype);
            r.roofs.push_back({dev->name(), std::string(backend_name(dev->backend())), std::string(dtype_name(p.dtype)),
                               c.peak_flops, c.bandwidth, c.flops_source, c.bandwidth_source});
          }
        }
      }
    }
    std::string sim_absent;
    for (const std::string& a : devs.absent)
      if (a.rfind("sim:", 0) == 0) sim_absent = a;
    if (std::find(wanted.begin(), wanted.end(), Backend::sim) == wanted.end()) sim_absent = "sim: not asked for (--backend " + backend + ")";
    fmt::print(stderr, "report: profiling every CUDA rung in the simulator\n");
    r.cuda_variants = cuda_variant_rows(tallies, sim_absent, results_dir, &r.cuda_notes, find_device(devs, Backend::sim));
    write_report(r, out);
    fmt::print("wrote {0}/index.html, {0}/report.md, {0}/results.json ({1} points)\n", out, r.points.size());
    for (const std::string& a : devs.absent) fmt::print("not run: {}\n", a);
    if (!all_passed) {
      fmt::print(stderr, "kernelab: some checks FAILED; see {}/report.md\n", out);
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace kl::cli
