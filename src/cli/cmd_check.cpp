#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "kernelab/error.h"

namespace kl::cli {

namespace {
struct CheckFlags {
  std::vector<std::string> ops, variants, configs;
  std::string backend, rung_file;
  bool json = false, race_check = false;
  uint64_t seed = 1;
  ProblemFlags problem;
};

// `check OP --rows 7 --cols 1000 ...`: that one problem, every variant and config, the launched
// kernels shown; otherwise the op's built-in sweep.
void check_one_problem(const Op& op, const CheckFlags& f, DeviceSet& devs) {
  const Problem p = f.problem.problem(op);
  const std::vector<const Variant*> variants = chosen_variants(op, f.variants);
  check_config_names(op, variants, f.configs);
  bool all_passed = true;
  int ran = 0;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::vector<std::string>> table;
  const Prepared prep = prepare(op, p, f.seed);
  for (auto& dev : devs.present)
    for (const Variant* v : variants) {
      if (!v->runs_on(dev->backend())) continue;
      for (const Config* c : chosen_configs(*v, f.configs, false)) {
        const CheckResult r = check_variant(op, *v, *c, prep, *dev);
        const bool unsupported = r.failure.rfind("unsupported: ", 0) == 0;
        all_passed = all_passed && (r.passed || unsupported);
        ran += unsupported ? 0 : 1;
        rows.push_back({{"op", op.name}, {"variant", v->name}, {"config", c->name}, {"backend", backend_name(dev->backend())},
                        {"shape", p.label()}, {"dtype", dtype_name(p.dtype)}, {"passed", r.passed}, {"unsupported", unsupported},
                        {"max_rel_err", r.max_rel_err}, {"tolerance", r.tolerance}, {"failure", r.failure}, {"launched", r.launched}});
        std::string launched;
        for (const std::string& k : r.launched) launched += (launched.empty() ? "" : ", ") + k;
        table.push_back({v->name, c->name, std::string(backend_name(dev->backend())), fmt::format("{:.2e}", r.max_rel_err),
                         r.passed ? "ok" : unsupported ? r.failure : "FAIL " + r.failure, launched});
      }
    }
  if (ran == 0 && all_passed) bad_input(fmt::format("no chosen variant of {} runs {} on the backends present", op.name, p.label()));
  if (f.json) {
    fmt::print("{}\n", nlohmann::json{{"passed", all_passed}, {"results", rows}, {"absent_backends", devs.absent}}.dump(2));
  } else {
    fmt::print("{} {} {}\n", op.name, p.label(), dtype_name(p.dtype));
    print_table({"variant", "config", "backend", "max_rel_err", "status", "launched"}, table);
    for (const std::string& a : devs.absent) fmt::print("not checked: {}\n", a);
    fmt::print("{}\n", all_passed ? "all variants passed" : "SOME VARIANTS FAILED");
  }
  if (!all_passed) throw CLI::RuntimeError(1);
}
}  // namespace

void add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "every variant against the float64 reference on a sweep of random shapes, or on the shape given");
  static CheckFlags f;
  sub->add_option("ops", f.ops, "ops to check (default: all)");
  sub->add_option("--backend", f.backend, "cpu, cuda or sim (default: every backend present)");
  sub->add_option("--variant", f.variants, "variants to check (default: all)")->delimiter(',');
  sub->add_option("--rung", f.rung_file, "a rung file of your own (FILE.cu, written as src/ops/*/cuda/*.cu are), checked in the simulator");
  sub->add_option("--config", f.configs, "configs to check (default: all)")->delimiter(',');
  sub->add_option("--seed", f.seed, "base seed of the random inputs");
  sub->add_flag("--race-check", f.race_check,
                "in the simulator, run every launch with the threads between barriers in forward and in reversed order; a difference is a race and fails the case");
  sub->add_flag("--json", f.json, "print one JSON object");
  f.problem.attach(*sub);
  sub->callback([] {
    if (f.race_check) {  // read by the simulator's options at its first launch
      if (!f.backend.empty() && f.backend != "sim") bad_input("--race-check runs in the simulator: --backend sim");
      f.backend = "sim";
      setenv("KERNELAB_SIM_RACE_CHECK", "1", 1);
    }
    if (!f.rung_file.empty()) {  // the file's rungs, on the simulator, unless --variant names others too
      if (f.ops.size() > 1) bad_input("--rung: name one op, or none (the file declares it)");
      if (!f.backend.empty() && f.backend != "sim" && f.backend != "cuda") bad_input("--rung: a rung file runs on --backend sim or cuda");
      const LoadedRungs loaded = load_rung_file(f.rung_file, f.ops.empty() ? "" : f.ops.front(),
                                                {.sim = f.backend != "cuda", .gpu = f.backend == "cuda"});
      f.ops = {loaded.op->name};
      if (f.variants.empty()) f.variants = loaded.names;
      if (f.backend.empty()) f.backend = "sim";
    }
    std::vector<const Op*> chosen;
    for (const std::string& n : f.ops) chosen.push_back(&find_op(n));
    if (f.ops.empty())
      for (const Op& op : registry()) chosen.push_back(&op);
    DeviceSet devs = open_devices(wanted_backends(f.backend));
    if (!f.backend.empty() && devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    if (chosen.size() == 1 && f.problem.any_given(*chosen.front())) return check_one_problem(*chosen.front(), f, devs);
    if (!f.variants.empty() && chosen.size() != 1) bad_input("--variant needs exactly one op");
    uint64_t case_seed = f.seed;
    std::vector<CheckTally> tallies;
    for (const Op* op : chosen) {
      check_config_names(*op, chosen_variants(*op, f.variants), f.configs);
      for (CheckTally& t : check_op(*op, devs, case_seed, {}, f.variants))
        if (f.configs.empty() || std::find(f.configs.begin(), f.configs.end(), t.config) != f.configs.end()) tallies.push_back(t);
    }
    bool all_passed = true;
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::vector<std::string>> table;
    for (const CheckTally& t : tallies) {
      all_passed = all_passed && t.failed == 0;
      rows.push_back({{"op", t.op}, {"variant", t.variant}, {"config", t.config}, {"backend", t.backend}, {"dtype", t.dtype},
                      {"passed", t.passed}, {"failed", t.failed}, {"unsupported", t.unsupported}, {"max_rel_err", t.worst},
                      {"tolerance", t.tolerance}, {"first_failure", t.first_failure}, {"skip_reason", t.skip_reason}});
      const std::string status = t.failed ? "FAIL " + t.first_failure
                                 : t.passed == 0 ? "skipped: " + t.skip_reason
                                                 : "ok";
      table.push_back({t.op, t.variant, t.config, t.backend, t.dtype, fmt::format("{}/{}", t.passed, t.passed + t.failed),
                       fmt::format("{}", t.unsupported), fmt::format("{:.2e}", t.worst), fmt::format("{:.1e}", t.tolerance),
                       status});
    }
    if (f.json) {
      fmt::print("{}\n", nlohmann::json{{"passed", all_passed}, {"results", rows}, {"absent_backends", devs.absent}}.dump(2));
    } else {
      print_table({"op", "variant", "config", "backend", "dtype", "passed", "unsupported", "max_rel_err", "tolerance", "status"}, table);
      for (const std::string& a : devs.absent) fmt::print("not checked: {}\n", a);
      fmt::print("{}\n", all_passed ? "all variants passed" : "SOME VARIANTS FAILED");
    }
    if (!all_passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace kl::cli
