// How `sim profile` and `sim run --profile` show the simulator profiler's counts.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/profile.h"

namespace kl::cli {

// {"name", "launches", "grid", "block", "blocks_total", "blocks_run", "metrics": {ncu name: value}}
nlohmann::json kernel_profile_json(const sim::KernelProfile& k);
// One row per kernel: requests, sectors per request, wavefronts, conflicts, lanes; a note when sampled.
void print_kernel_profiles(const std::vector<sim::KernelProfile>& kernels);
void add_sim_profile(CLI::App& sim);

}  // namespace kl::cli
