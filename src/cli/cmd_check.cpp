#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "kernelab/error.h"

namespace kl::cli {

void add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "every variant against the float64 reference on a sweep of random shapes");
  static std::vector<std::string> ops;
  static std::string backend;
  static bool json = false;
  static uint64_t seed = 1;
  sub->add_option("ops", ops, "ops to check (default: all)");
  sub->add_option("--backend", backend, "cpu, cuda or sim (default: every backend present)");
  sub->add_option("--seed", seed, "base seed of the random inputs");
  sub->add_flag("--json", json, "print one JSON object");
  sub->callback([] {
    std::vector<const Op*> chosen;
    for (const std::string& n : ops) chosen.push_back(&find_op(n));
    if (ops.empty())
      for (const Op& op : registry()) chosen.push_back(&op);
    DeviceSet devs = open_devices(wanted_backends(backend));
    if (!backend.empty() && devs.present.empty()) runtime_failure("backend " + devs.absent.front());
    uint64_t case_seed = seed;
    std::vector<CheckTally> tallies;
    for (const Op* op : chosen)
      for (CheckTally& t : check_op(*op, devs, case_seed)) tallies.push_back(t);
    bool all_passed = true;
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::vector<std::string>> table;
    for (const CheckTally& t : tallies) {
      all_passed = all_passed && t.failed == 0;
      rows.push_back({{"op", t.op}, {"variant", t.variant}, {"backend", t.backend}, {"dtype", t.dtype}, {"passed", t.passed},
                      {"failed", t.failed}, {"unsupported", t.unsupported}, {"max_rel_err", t.worst},
                      {"tolerance", t.tolerance}, {"first_failure", t.first_failure}, {"skip_reason", t.skip_reason}});
      const std::string status = t.failed ? "FAIL " + t.first_failure
                                 : t.passed == 0 ? "skipped: " + t.skip_reason
                                                 : "ok";
      table.push_back({t.op, t.variant, t.backend, t.dtype, fmt::format("{}/{}", t.passed, t.passed + t.failed),
                       fmt::format("{}", t.unsupported), fmt::format("{:.2e}", t.worst), fmt::format("{:.1e}", t.tolerance),
                       status});
    }
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"passed", all_passed}, {"results", rows}, {"absent_backends", devs.absent}}.dump(2));
    } else {
      print_table({"op", "variant", "backend", "dtype", "passed", "unsupported", "max_rel_err", "tolerance", "status"}, table);
      for (const std::string& a : devs.absent) fmt::print("not checked: {}\n", a);
      fmt::print("{}\n", all_passed ? "all variants passed" : "SOME VARIANTS FAILED");
    }
    if (!all_passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace kl::cli
