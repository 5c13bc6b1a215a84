#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "ops/static_facts.h"

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
        nlohmann::json configs = nlohmann::json::array();
        for (const Config& c : v.configs) configs.push_back({{"name", c.name}});
        nlohmann::json j = {{"name", v.name}, {"backend", backend_name(v.backend)}, {"peer", v.peer}, {"note", v.note}, {"configs", configs}};
        if (v.generated) j["generated"] = true;  // its kernels come from each problem (the fused op)
        if (v.backend == Backend::cuda) j.update(variant_static_json(v));  // resources, occupancy per config (static_facts.h)
        vs.push_back(j);
      }
      nlohmann::json dims = nlohmann::json::array(), opts = nlohmann::json::array(), dtypes = nlohmann::json::array();
      for (const DimSpec& d : op.dims) dims.push_back({{"name", d.name}, {"default", d.default_value}, {"help", d.help}});
      for (const OptSpec& o : op.opts)
        opts.push_back({{"name", o.name}, {"values", o.values}, {"default", o.default_value}, {"help", o.help}, {"text", o.text}});
      for (DType t : op.dtypes) dtypes.push_back(dtype_name(t));
      nlohmann::json tensor_dtypes = nlohmann::json::object();
      for (const auto& [tensor, ts] : op.tensor_dtypes)
        for (DType t : ts) tensor_dtypes[tensor].push_back(dtype_name(t));
      ops.push_back({{"op", op.name}, {"summary", op.summary}, {"counting", op.counting}, {"dims", dims},
                     {"options", opts}, {"dtypes", dtypes}, {"tensor_dtypes", tensor_dtypes}, {"experiment", op.experiment}, {"variants", vs}});
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
        if (v.configs.size() > 1) {
          std::string names;
          for (const Config& c : v.configs) names += (names.empty() ? "" : ", ") + c.name;
          fmt::print("  {:<22} configs: {}\n", "", names);
        }
      }
    }
  });
}

}  // namespace kl::cli
