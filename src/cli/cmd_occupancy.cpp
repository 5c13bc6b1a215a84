// `kernelab occupancy`: active blocks and warps per SM for one launch shape on one arch, the
// limiting resource and why. The arithmetic is src/hw/occupancy (the toolkit's calculator).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "hw/occupancy.h"

namespace kl::cli {

void add_occupancy(CLI::App& app) {
  auto* sub = app.add_subcommand("occupancy", "active blocks and warps per SM, occupancy, the limiting resource");
  static std::string arch;
  static int threads = 0, regs = 0;
  static int64_t smem = 0;
  static bool json = false;
  sub->add_option("--arch", arch, "sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120")->required();
  sub->add_option("--threads", threads, "threads per block")->required();
  sub->add_option("--regs", regs, "registers per thread (ptxas -v: 'Used N registers')")->required();
  sub->add_option("--smem", smem, "shared memory per block in bytes (static + dynamic)")->default_val(0);
  sub->add_flag("--json", json, "print one JSON object");
  sub->callback([] {
    const ArchLimits& a = find_arch(arch);
    const Occupancy o = compute_occupancy(a, threads, regs, smem);
    if (json) {
      fmt::print("{}\n", occupancy_json(o).dump(2));
      return;
    }
    fmt::print("{} ({}): {} threads/block, {} registers/thread, {} bytes shared memory/block\n", a.arch, a.family,
               o.threads_per_block, o.regs_per_thread, o.smem_per_block);
    fmt::print("  active blocks per SM  {}\n", o.active_blocks_per_sm);
    fmt::print("  active warps per SM   {} of {}\n", o.active_warps_per_sm, o.max_warps_per_sm);
    fmt::print("  occupancy             {:.1f}%\n", 100.0 * o.occupancy);
    auto lim = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("unlimited"); };
    fmt::print("  blocks allowed by     warps {}, registers {}, shared memory {}, block slots {}\n", lim(o.blocks_by_warps),
               lim(o.blocks_by_registers), lim(o.blocks_by_shared_memory), lim(o.blocks_by_blocks));
    fmt::print("  limiter               {}\n", limiter_explanation(o, a));
    if (o.limiters.size() > 1) fmt::print("  (tied: {})\n", fmt::join(o.limiters, ", "));
  });
}

}  // namespace kl::cli
