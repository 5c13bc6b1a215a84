#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "ops/gpu_resources.h"

namespace kl::cli {

void add_list(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "ops, variants, backends and what each rung changes");
  static bool json = false;
  sub->add_flag("--json", json, "print one JSON object");
  sub->callback([] {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : registry()) {
      nlohmann::json vs = nlohmann::json::array();
      for (const Variant& v : op.variants) {
        nlohmann::json j = {{"name", v.name}, {"backend", backend_name(v.backend)}, {"peer", v.peer}, {"note", v.note}};
        if (v.backend == Backend::cuda) j.update(variant_static_json(v));  // resources, occupancy (gpu_resources.h)
        vs.push_back(j);
      }
      nlohmann::json dims = nlohmann::json::array(), opts = nlohmann::json::array(), dtypes = nlohmann::json::array();
      for (const DimSpec& d : op.dims) dims.push_back({{"name", d.name}, {"default", d.default_value}, {"help", d.help}});
      for (const OptSpec& o : op.opts)
        opts.push_back({{"name", o.name}, {"values", o.values}, {"default", o.default_value}, {"help", o.help}});
      for (DType t : op.dtypes) dtypes.push_back(dtype_name(t));
      ops.push_back({{"op", op.name}, {"summary", op.summary}, {"counting", op.counting}, {"dims", dims},
                     {"options", opts}, {"dtypes", dtypes}, {"experiment", op.experiment}, {"variants", vs}});
    }
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"ops", ops}}.dump(2));
      return;
    }
    for (const Op& op : registry()) {
      fmt::print("{}: {}\n", op.name, op.summary);
      for (const Variant& v : op.variants) {
        fmt::print("  {:<16} {:<5} {}{}\n", v.name, backend_name(v.backend), v.peer ? "[peer] " : "", v.note);
        if (v.backend == Backend::cuda) fmt::print("  {:<22} {}\n", "", variant_resources_line(v));
      }
    }
  });
}

}  // namespace kl::cli
