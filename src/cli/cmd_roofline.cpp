// `kernelab roofline OP --gpu ID [shape] [--dtype D] [--measured] [--json]`: the analytic roofline
// of one op on one GPU. Collectives: flops 0, bytes = bytes on the busiest link, the bandwidth is
// the link's per direction (bandwidth_kind nvlink or pcie) and bound "memory" means link-bound;
// their JSON adds message_bytes, bus_factor, algbw and busbw.
#include <fmt/format.h>

#include "cli/analytic.h"
#include "cli/common.h"

namespace kl::cli {

void add_roofline(CLI::App& app) {
  auto* sub = app.add_subcommand("roofline", "analytic: FLOPs, bytes, intensity, ridge point, bound and lower-bound "
                                             "time of an op on a GPU (datasheet ceilings unless --measured)");
  static AnalyticFlags f;
  f.attach(*sub);
  sub->callback([] {
    const model::Analysis a = model::analyze(f.request());
    if (f.json) {
      fmt::print("{}\n", to_json(a).dump(2));
      return;
    }
    const model::Roofline& r = a.roof;
    const std::string bound = std::string(r.bound()) + (a.bandwidth_kind == "memory" ? "" : " (link-bound)");
    fmt::print("{} {} {} on {} ({}), {}\n", a.op, a.shape, a.dtype, a.gpu_name, a.gpu,
               a.measured ? "measured ceilings where known" : "datasheet ceilings");
    print_table({"quantity", "value"},
                {{"flops", fmt::format("{:.4g}", r.flops)},
                 {"bytes", fmt::format("{:.4g} ({})", r.bytes, a.bandwidth_kind)},
                 {"intensity", fmt::format("{:.4g} FLOP/B", r.intensity)},
                 {"ridge", fmt::format("{:.4g} FLOP/B", r.ridge)},
                 {"peak", fmt::format("{:.4g} TFLOP/s {} ({})", a.peak.value / 1e12, a.dtype, a.peak.source)},
                 {"bandwidth", fmt::format("{:.4g} GB/s {} ({})", a.bandwidth.value / 1e9, a.bandwidth_kind, a.bandwidth.source)},
                 {"bound", bound},
                 {"t_compute", format_seconds(r.t_compute_s)},
                 {"t_memory", format_seconds(r.t_memory_s)},
                 {"t_lower_bound", format_seconds(r.t_lower_bound_s)}});
    for (const auto& [key, value] : a.extra.items())
      fmt::print("{:<15}{}\n", key, value.is_string() ? value.get<std::string>() : fmt::format("{:.4g}", value.get<double>()));
    fmt::print("counting: {}\n", a.counting);
  });
}

}  // namespace kl::cli
