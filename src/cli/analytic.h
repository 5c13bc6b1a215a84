// What `roofline` and `explain` share: their flags (the op, --gpu, --dtype, --measured, --json
// and the union of every analytic op's shape options and switches, model::analytic_ops(); the
// model refuses those the chosen op does not take) and the JSON of an analysis.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/analysis.h"

namespace kl::cli {

class AnalyticFlags {
 public:
  void attach(CLI::App& sub);
  model::Request request() const;  // only the options given
  bool json = false;

 private:
  model::Request base_;
  std::map<std::string, int64_t> dims_;
  std::map<std::string, bool> switches_;
  CLI::App* app_ = nullptr;
};

// The roofline keys of the design (op, gpu, dtype, flops, bytes, intensity, ridge, bound,
// t_compute_s, t_memory_s, t_lower_bound_s), a `sources` object for the two ceilings, and the
// analysis' extras (shape, counting, the op-specific fields).
nlohmann::json to_json(const model::Analysis& a);

}  // namespace kl::cli
