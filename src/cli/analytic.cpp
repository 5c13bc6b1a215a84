#include "cli/analytic.h"

#include <fmt/format.h>

#include <set>

#include "cli/common.h"

namespace kl::cli {

void AnalyticFlags::attach(CLI::App& sub) {
  app_ = &sub;
  std::string ops;
  for (const model::AnalyticOp& op : model::analytic_ops()) ops += (ops.empty() ? "" : ", ") + op.name;
  sub.add_option("op", base_.op, ops)->required();
  sub.add_option("--gpu", base_.gpu, "GPU id from `kernelab specs`, e.g. h100-sxm")->required();
  sub.add_option("--dtype", base_.dtype, "fp64, fp32, tf32, fp16, bf16, fp8 (fp8e4m3), fp8e5m2, int8 (default bf16)");
  sub.add_flag("--measured", base_.measured, "measured ceilings where the database has them (default: datasheet)");
  sub.add_flag("--json", json, "print one JSON object");
  std::set<std::string> seen;
  for (const model::AnalyticOp& op : model::analytic_ops()) {
    for (const DimSpec& d : op.dims)
      if (seen.insert(d.name).second)
        sub.add_option(flag_name(d.name), dims_[d.name],
                       d.help.find("default") == std::string::npos ? fmt::format("{} (default {})", d.help, d.default_value) : d.help);
    for (const model::SwitchSpec& w : op.switches)
      if (seen.insert(w.name).second) sub.add_flag(flag_name(w.name), switches_[w.name], w.help);
  }
}

model::Request AnalyticFlags::request() const {
  model::Request r = base_;
  for (const auto& [name, value] : dims_)
    if (app_->count(flag_name(name)) > 0) r.dims[name] = value;
  for (const auto& [name, on] : switches_)
    if (on) r.switches.insert(name);
  return r;
}

nlohmann::json to_json(const model::Analysis& a) {
  const model::Roofline& r = a.roof;
  nlohmann::json j = {{"op", a.op},
                      {"gpu", a.gpu},
                      {"dtype", a.dtype},
                      {"flops", r.flops},
                      {"bytes", r.bytes},
                      {"intensity", r.intensity},
                      {"ridge", r.ridge},
                      {"bound", r.bound()},
                      {"t_compute_s", r.t_compute_s},
                      {"t_memory_s", r.t_memory_s},
                      {"t_lower_bound_s", r.t_lower_bound_s},
                      {"gpu_name", a.gpu_name},
                      {"shape", a.shape},
                      {"counting", a.counting},
                      {"measured", a.measured},
                      {"peak_flops", a.peak.value},
                      {"bandwidth", a.bandwidth.value},
                      {"bandwidth_kind", a.bandwidth_kind},
                      {"sources", {{"peak_flops", a.peak.source}, {"bandwidth", a.bandwidth.source}}}};
  j.update(a.extra);
  return j;
}

}  // namespace kl::cli
