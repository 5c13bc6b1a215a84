#include "report/cuda_variants.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "hw/specs.h"
#include "ops/static_facts.h"
#if KERNELAB_HAVE_SIM_OPS
#include "sim/device/sim_profile.h"
#endif

namespace fs = std::filesystem;

namespace kl {

namespace {

// The file's path relative to the source tree when it lies there ("bench/results/h200/x.json").
std::string display_path(const fs::path& file) {
#ifdef KERNELAB_SOURCE_DIR
  std::error_code ec;
  fs::path rel = fs::relative(file, KERNELAB_SOURCE_DIR, ec);
  if (!ec && !rel.empty() && *rel.begin() != "..") return rel.string();
#endif
  return file.string();
}

// When the file's results were made: its generated_at, else the YYYY-MM-DD its name starts with.
std::string results_date(const nlohmann::json& j, const fs::path& file) {
  if (j.is_object() && j.contains("generated_at") && j["generated_at"].is_string()) return j["generated_at"];
  std::smatch m;
  const std::string name = file.filename().string();
  if (std::regex_search(name, m, std::regex("^\\d{4}-\\d{2}-\\d{2}"))) return m.str();
  return "an unknown date";
}

std::string sim_line(const std::vector<const CheckTally*>& ts, const Variant& v, const std::string& sim_absent,
                     bool& passed) {
  int ok = 0, failed = 0, unsupported = 0;
  std::string first_failure, skip_reason;
  for (const CheckTally* t : ts) {
    ok += t->passed, failed += t->failed, unsupported += t->unsupported;
    if (first_failure.empty()) first_failure = t->first_failure;
    if (skip_reason.empty()) skip_reason = t->skip_reason;
  }
  passed = failed == 0 && ok > 0;
  if (failed) return fmt::format("FAILED in the simulator: {} of {} checks ({})", failed, ok + failed, first_failure);
  if (ok) return fmt::format("passes in the simulator ({} of {} checks)", ok, ok);
  if (unsupported) return fmt::format("not checked in the simulator: no case supported ({})", skip_reason);
  if (!v.runs_on(Backend::sim)) return "not checked in the simulator: this build has no simulator version of the rung";
  if (!sim_absent.empty()) return "not checked in the simulator: " + sim_absent;
  return "not checked in the simulator";
}

std::vector<RungProfileSummary> profile_rung([[maybe_unused]] const Op& op, [[maybe_unused]] const Variant& v,
                                             [[maybe_unused]] Device& sim, [[maybe_unused]] const GpuSpec& gpu) {
  std::vector<RungProfileSummary> out;
#if KERNELAB_HAVE_SIM_OPS
  const Config& c = v.configs.front();
  uint64_t seed = 1;
  for (const Problem& p : op.profile_cases(op)) {
    if (v.supports_config(p, c)) continue;
    const Prepared prep = prepare(op, p, seed++);
    const RungProfile r = profile_variant(op, v, c, prep, sim, {uint64_t(gpu.l2_bytes.value), 0}, gpu);
    const auto per = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    const sim::ProfileCounts& t = r.total;
    RungProfileSummary s;
    s.problem = p.label() + " " + std::string(dtype_name(p.dtype));
    s.config = c.name;
    s.ld_sectors_per_request = per(double(t.global_ld_sectors), double(t.global_ld_requests));
    s.st_sectors_per_request = per(double(t.global_st_sectors), double(t.global_st_requests));
    s.ld_conflicts_per_request = per(double(t.shared_ld_wavefronts - t.shared_ld_ideal), double(t.shared_ld_requests));
    s.st_conflicts_per_request = per(double(t.shared_st_wavefronts - t.shared_st_ideal), double(t.shared_st_requests));
    s.active_lanes = per(double(t.memory_lanes), double(t.memory_requests()));
    s.shared = t.shared_ld_requests + t.shared_st_requests > 0;
    s.sectors_over_min = per(r.sector_bytes(), r.min_bytes);
    s.dram_over_min = per(r.dram_bytes(), r.min_bytes);
    s.modelled_time_s = r.time.seconds;
    s.bound = r.time.bound;
    s.gpu = gpu.id;
    s.sampled_scale = r.scale;
    if (!r.check.passed) s.failure = r.check.failure;
    out.push_back(std::move(s));
  }
#endif
  return out;
}

}  // namespace

std::string profile_line(const RungProfileSummary& p) {
  std::string s = fmt::format("{}: {:.1f}/{:.1f} sectors per global ld/st request", p.problem, p.ld_sectors_per_request,
                              p.st_sectors_per_request);
  if (p.shared)
    s += fmt::format(", {:.1f}/{:.1f} bank conflicts per shared ld/st request", p.ld_conflicts_per_request, p.st_conflicts_per_request);
  s += fmt::format(", {:.1f} active lanes per memory instruction, L1 sectors {:.2f}x and DRAM {:.2f}x the fewest bytes (DRAM modelled for {})",
                   p.active_lanes, p.sectors_over_min, p.dram_over_min, p.gpu);
  if (p.sampled_scale != 1) s += fmt::format(", sampled (x{:.2f})", p.sampled_scale);
  if (!p.failure.empty()) s += ", profiled run FAILED: " + p.failure;
  return s;
}

std::string default_results_dir() {
#ifdef KERNELAB_SOURCE_DIR
  return std::string(KERNELAB_SOURCE_DIR) + "/bench/results";
#else
  return "bench/results";
#endif
}

std::map<std::string, GpuVerification> gpu_verifications(const std::string& results_dir,
                                                         std::vector<std::string>* warnings) {
  std::map<std::string, GpuVerification> found;
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) return found;
  std::vector<fs::path> files;  // RESULTS_DIR/<gpu>/*.json, sorted so later names win ties
  for (const auto& gpu_dir : fs::directory_iterator(results_dir, ec))
    if (gpu_dir.is_directory())
      for (const auto& f : fs::directory_iterator(gpu_dir.path(), ec))
        if (f.is_regular_file() && f.path().extension() == ".json") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    nlohmann::json j;
    try {
      std::ifstream in(file);
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      if (warnings) warnings->push_back(fmt::format("{}: not read ({})", display_path(file), e.what()));
      continue;
    }
    if (!j.is_object() || !j.contains("points") || !j["points"].is_array()) continue;
    const std::string date = results_date(j, file);
    std::map<std::string, GpuVerification> in_file;
    std::string device = file.parent_path().filename().string();
    for (const auto& p : j["points"]) {
      if (!p.is_object() || p.value("backend", "") != "cuda") continue;
      device = p.value("device", device);
      GpuVerification& v = in_file[p.value("op", "") + "/" + p.value("variant", "")];
      v.timed = true;
    }
    if (j.contains("checks") && j["checks"].is_array())
      for (const auto& c : j["checks"]) {
        if (!c.is_object()) continue;
        GpuVerification& v = in_file[c.value("op", "") + "/" + c.value("variant", "")];
        const std::string status = c.value("status", "");
        if (status == "ok") ++v.checks_passed;
        else if (status.rfind("FAIL", 0) == 0 && v.failure.empty()) v.failure = c.value("dtype", "") + " " + status;
      }
    for (auto& [key, v] : in_file) {
      auto it = found.find(key);
      if (it != found.end() && it->second.date > date) continue;
      v.device = device, v.date = date, v.file = display_path(file);
      found[key] = v;
    }
  }
  return found;
}

std::vector<CudaVariantRow> cuda_variant_rows(const std::vector<CheckTally>& tallies, const std::string& sim_absent,
                                              const std::string& results_dir, std::vector<std::string>* notes, Device* sim,
                                              const std::string& gpu_id) {
  const auto verified = gpu_verifications(results_dir, notes);
  const GpuSpec& gpu = find_gpu(gpu_id);
  std::vector<CudaVariantRow> rows;
  for (const Op& op : registry())
    for (const Variant& v : op.variants) {
      if (v.backend != Backend::cuda) continue;
      CudaVariantRow r;
      r.op = op.name;
      r.variant = v.name;
      r.source = v.source;
      std::vector<const CheckTally*> ts;
      for (const CheckTally& t : tallies)
        if (t.op == op.name && t.variant == v.name && t.backend == "sim") ts.push_back(&t);
      r.simulator = sim_line(ts, v, sim_absent, r.sim_passed);
      r.resources = variant_resources_line(v);
      r.static_info = variant_static_json(v);
      if (auto it = verified.find(op.name + "/" + v.name); it != verified.end()) {
        const GpuVerification& g = it->second;
        r.gpu_verified = g.failure.empty();
        r.gpu_device = g.device;
        r.gpu_date = g.date;
        r.gpu_file = g.file;
        if (!g.failure.empty()) r.gpu = fmt::format("FAILED its check on {} at {}: {} ({})", g.device, g.date, g.failure, g.file);
        else if (g.timed) r.gpu = fmt::format("verified on {} at {} ({})", g.device, g.date, g.file);
        else r.gpu = fmt::format("checked on {} at {} ({} checks passed; not timed) ({})", g.device, g.date, g.checks_passed, g.file);
      } else {
        r.gpu = "not yet run on a GPU";
      }
      if (!sim) r.memory = "not profiled: " + (sim_absent.empty() ? std::string("the simulator did not run") : sim_absent);
      else if (v.peer) r.memory = "not profiled: a library peer launches its own kernels";
      else if (!op.profile_cases) r.memory = "not profiled: the op names no profile cases";
      else if (!v.configs.front().sim_profile_run) r.memory = "not profiled: this build has no profiling version of the rung";
      else r.profiles = profile_rung(op, v, *sim, gpu);
      for (const RungProfileSummary& p : r.profiles) r.memory += (r.memory.empty() ? "" : "; ") + profile_line(p);
      if (sim && r.memory.empty()) r.memory = "not profiled: no profile case is supported";
      rows.push_back(std::move(r));
    }
  return rows;
}

}  // namespace kl
