#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "kernelab/error.h"

namespace kl::cli {

namespace {
struct Tally {
  int passed = 0, failed = 0, unsupported = 0;
  double worst = 0, tolerance = 0;
  std::string first_failure, skip_reason;
};
}  // namespace

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
    // (op, variant, dtype) -> tally
    std::map<std::tuple<std::string, std::string, std::string>, Tally> tallies;
    std::vector<std::tuple<std::string, std::string, std::string>> order;
    bool all_passed = true;
    uint64_t case_seed = seed;
    for (const Op* op : chosen) {
      for (const Problem& p : op->check_cases(*op)) {
        for (const Variant& v : op->variants) {
          Device* dev = find_device(devs, v.backend);
          if (!dev) continue;
          auto key = std::make_tuple(op->name, v.name, std::string(dtype_name(p.dtype)));
          if (!tallies.count(key)) order.push_back(key);
          Tally& t = tallies[key];
          if (auto why = v.supports(p)) {
            ++t.unsupported;
            t.skip_reason = *why;
            continue;
          }
          CheckResult r = check_variant(*op, v, p, *dev, case_seed++);
          t.worst = std::max(t.worst, r.max_rel_err);
          t.tolerance = std::max(t.tolerance, r.tolerance);
          if (r.passed) {
            ++t.passed;
          } else {
            ++t.failed;
            all_passed = false;
            if (t.first_failure.empty()) t.first_failure = p.label() + ": " + r.failure;
          }
        }
      }
    }
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::vector<std::string>> table;
    for (const auto& key : order) {
      const Tally& t = tallies[key];
      const auto& [op, variant, dtype] = key;
      rows.push_back({{"op", op}, {"variant", variant}, {"dtype", dtype}, {"passed", t.passed}, {"failed", t.failed},
                      {"unsupported", t.unsupported}, {"max_rel_err", t.worst}, {"tolerance", t.tolerance},
                      {"first_failure", t.first_failure}, {"skip_reason", t.skip_reason}});
      table.push_back({op, variant, dtype, fmt::format("{}/{}", t.passed, t.passed + t.failed),
                       fmt::format("{}", t.unsupported), fmt::format("{:.2e}", t.worst), fmt::format("{:.1e}", t.tolerance),
                       t.failed ? "FAIL " + t.first_failure
                       : t.passed + t.failed == 0 ? "skipped: " + t.skip_reason
                                                  : "ok"});
    }
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"passed", all_passed}, {"results", rows}, {"absent_backends", devs.absent}}.dump(2));
    } else {
      print_table({"op", "variant", "dtype", "passed", "unsupported", "max_rel_err", "tolerance", "status"}, table);
      for (const std::string& a : devs.absent) fmt::print("not checked: {}\n", a);
      fmt::print("{}\n", all_passed ? "all variants passed" : "SOME VARIANTS FAILED");
    }
    if (!all_passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace kl::cli
