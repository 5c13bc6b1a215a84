// `kernelab specs [ID]`: the hardware database, every figure with its source, the per-arch
// limits, and the host CPU as `kernelab probe` last measured it (read from its file; specs never
// probes). ID is a GPU id, an arch (sm_90) or "host".
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "hw/specs.h"
#include "kernelab/error.h"
#include "kernelab/probe.h"

namespace kl::cli {

namespace {

using nlohmann::json;

enum class Unit { count, mhz, bytes, bytes_per_s, flops, ops };

struct FigureRow {
  const char* key;    // JSON key
  const char* label;  // text label
  Unit unit;
  Figure GpuSpec::*member;
};

const FigureRow kRows[] = {
    {"sm_count", "SMs", Unit::count, &GpuSpec::sm_count},
    {"boost_clock_mhz", "boost clock", Unit::mhz, &GpuSpec::boost_clock_mhz},
    {"memory_bytes", "memory", Unit::bytes, &GpuSpec::memory_bytes},
    {"memory_bandwidth", "memory bandwidth", Unit::bytes_per_s, &GpuSpec::memory_bandwidth},
    {"l2_bytes", "L2", Unit::bytes, &GpuSpec::l2_bytes},
    {"nvlink_bandwidth", "NVLink per direction", Unit::bytes_per_s, &GpuSpec::nvlink_bandwidth},
    {"pcie_bandwidth", "PCIe per direction", Unit::bytes_per_s, &GpuSpec::pcie_bandwidth},
};

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::count: return "count";
    case Unit::mhz: return "MHz";
    case Unit::bytes: return "bytes";
    case Unit::bytes_per_s: return "bytes/s";
    case Unit::flops: return "FLOP/s";
    case Unit::ops: return "OP/s";
  }
  return "";
}

std::string show(double v, Unit u) {
  if (v <= 0) return "absent";
  switch (u) {
    case Unit::count: return fmt::format("{:g}", v);
    case Unit::mhz: return fmt::format("{:g} MHz", v);
    case Unit::bytes:
      return v >= (1 << 30) ? fmt::format("{:g} GiB", v / (1 << 30)) : fmt::format("{:g} MiB", v / (1 << 20));
    case Unit::bytes_per_s: return fmt::format("{:.4g} GB/s", v / 1e9);
    case Unit::flops: return v < 1e12 ? fmt::format("{:.4g} GFLOP/s", v / 1e9) : fmt::format("{:g} TFLOP/s", v / 1e12);
    case Unit::ops: return fmt::format("{:g} TOP/s", v / 1e12);
  }
  return "";
}

Unit peak_unit(const std::string& dtype) { return dtype == "int8" ? Unit::ops : Unit::flops; }

json figure_json(const Figure& f, Unit u) { return {{"value", f.value}, {"unit", unit_name(u)}, {"source", f.source}}; }

json gpu_json(const GpuSpec& g) {
  json j = {{"id", g.id}, {"name", g.name}, {"arch", g.arch}};
  for (const FigureRow& r : kRows) j[r.key] = figure_json(g.*r.member, r.unit);
  json peak = json::object(), measured = json::object();
  for (const std::string& d : peak_dtypes()) peak[d] = figure_json(g.peak.at(d), peak_unit(d));
  for (const auto& [k, f] : g.measured) measured[k] = figure_json(f, k.find("bandwidth") != std::string::npos ? Unit::bytes_per_s : Unit::flops);
  j["peak_flops"] = peak;
  j["measured"] = measured;
  return j;
}

json arch_json(const ArchLimits& a) {
  return {{"arch", a.arch},
          {"cc", fmt::format("{}.{}", a.cc_major, a.cc_minor)},
          {"family", a.family},
          {"max_threads_per_block", a.max_threads_per_block},
          {"max_threads_per_sm", a.max_threads_per_sm},
          {"max_warps_per_sm", a.max_warps_per_sm},
          {"max_blocks_per_sm", a.max_blocks_per_sm},
          {"regs_per_sm", a.regs_per_sm},
          {"max_regs_per_block", a.max_regs_per_block},
          {"max_regs_per_thread", a.max_regs_per_thread},
          {"reg_alloc_unit", a.reg_alloc_unit},
          {"warp_alloc_granularity", a.warp_alloc_granularity},
          {"smem_per_sm", a.smem_per_sm},
          {"max_smem_per_block", a.max_smem_per_block},
          {"reserved_smem_per_block", a.reserved_smem_per_block},
          {"smem_alloc_unit", a.smem_alloc_unit},
          {"source", a.source}};
}

// The host as `kernelab probe` stored it, read without probing.
json host_json() {
  const std::string path = host_ceilings_path();
  json h = {{"id", "host"}, {"name", host_cpu_name()}, {"path", path}, {"measured", false}};
  std::ifstream f(path);
  if (!f) {
    h["note"] = "not measured yet: run kernelab probe";
    return h;
  }
  try {
    json p = json::parse(f);
    const std::string src = fmt::format("kernelab probe {}", p.at("measured_at").get<std::string>());
    const int threads = p.at("threads").get<int>();
    h["measured"] = true;
    h["measured_cpu"] = p.at("cpu");
    h["threads"] = threads;
    h["memory_bandwidth"] = {{"value", p.at("triad_bytes_per_s")}, {"unit", "bytes/s"},
                             {"source", fmt::format("{} (STREAM triad, {} threads, 3 arrays of {:g} MiB)", src, threads,
                                                    p.at("triad_array_bytes").get<double>() / (1 << 20))}};
    h["peak_flops"] = {{"fp32", {{"value", p.at("fma_flops_all")}, {"unit", "FLOP/s"},
                                 {"source", fmt::format("{} (FMA loop, {} threads)", src, threads)}}},
                       {"fp32_one_thread", {{"value", p.at("fma_flops_1t")}, {"unit", "FLOP/s"},
                                            {"source", fmt::format("{} (FMA loop, one thread)", src)}}}};
    if (p.at("cpu").get<std::string>() != host_cpu_name())
      h["note"] = fmt::format("measured on '{}', not this CPU: run kernelab probe", p.at("cpu").get<std::string>());
  } catch (const std::exception& e) {
    h["measured"] = false;
    h["note"] = fmt::format("could not read {} ({}): run kernelab probe", path, e.what());
  }
  return h;
}

void print_gpu(const GpuSpec& g) {
  const ArchLimits& a = find_arch(g.arch);
  fmt::print("{}  {}  ({}, {})\n", g.id, g.name, g.arch, a.family);
  std::vector<std::vector<std::string>> rows;
  for (const FigureRow& r : kRows) rows.push_back({r.label, show((g.*r.member).value, r.unit), (g.*r.member).source});
  for (const std::string& d : peak_dtypes())
    rows.push_back({d + " peak", show(g.peak.at(d).value, peak_unit(d)), g.peak.at(d).source});
  for (const auto& [k, f] : g.measured)
    rows.push_back({"measured " + k, show(f.value, k.find("bandwidth") != std::string::npos ? Unit::bytes_per_s : Unit::flops), f.source});
  if (g.measured.empty()) rows.push_back({"measured", "none", "no published measurement recorded"});
  print_table({"  figure", "value", "source"}, [&] {
    for (auto& r : rows) r[0] = "  " + r[0];
    return rows;
  }());
  fmt::print("\n");
}

void print_arch(const ArchLimits& a) {
  fmt::print("{} (cc {}.{}, {}): {} threads/block, {} threads ({} warps) and {} blocks per SM, {} registers per SM "
             "(per block {}, per thread {}, allocated per warp in units of {}, warps in groups of {}), shared memory {} "
             "bytes per SM, {} per block with the opt-in, {} reserved per block, allocated in units of {}\n  source: {}\n",
             a.arch, a.cc_major, a.cc_minor, a.family, a.max_threads_per_block, a.max_threads_per_sm, a.max_warps_per_sm,
             a.max_blocks_per_sm, a.regs_per_sm, a.max_regs_per_block, a.max_regs_per_thread, a.reg_alloc_unit,
             a.warp_alloc_granularity, a.smem_per_sm, a.max_smem_per_block, a.reserved_smem_per_block, a.smem_alloc_unit,
             a.source);
}

void print_host(const json& h) {
  fmt::print("host  {}\n", h.at("name").get<std::string>());
  if (!h.at("measured").get<bool>()) {
    fmt::print("  {} ({})\n\n", h.at("note").get<std::string>(), h.at("path").get<std::string>());
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"  memory bandwidth", show(h["memory_bandwidth"]["value"].get<double>(), Unit::bytes_per_s),
       h["memory_bandwidth"]["source"]},
      {"  fp32 peak", show(h["peak_flops"]["fp32"]["value"].get<double>(), Unit::flops), h["peak_flops"]["fp32"]["source"]},
      {"  fp32 peak, 1 thread", show(h["peak_flops"]["fp32_one_thread"]["value"].get<double>(), Unit::flops),
       h["peak_flops"]["fp32_one_thread"]["source"]}};
  print_table({"  figure", "value", "source"}, rows);
  if (h.contains("note")) fmt::print("  note: {}\n", h["note"].get<std::string>());
  fmt::print("\n");
}

}  // namespace

void add_specs(CLI::App& app) {
  auto* sub = app.add_subcommand("specs", "the hardware database with the source of each figure");
  static std::string id;
  static bool json_out = false;
  sub->add_option("id", id, "a GPU id (h100-sxm, ...), an arch (sm_90) or 'host'; all when omitted");
  sub->add_flag("--json", json_out, "print one JSON object");
  sub->callback([] {
    const GpuSpec* gpu = nullptr;
    const ArchLimits* arch = nullptr;
    bool host = id.empty() || id == "host";
    for (const GpuSpec& g : gpu_specs())
      if (g.id == id) gpu = &g;
    for (const ArchLimits& a : arch_limits())
      if (a.arch == id) arch = &a;
    if (!id.empty() && !gpu && !arch && !host) {
      std::vector<std::string> ids;
      for (const GpuSpec& g : gpu_specs()) ids.push_back(g.id);
      std::vector<std::string> archs;
      for (const ArchLimits& a : arch_limits()) archs.push_back(a.arch);
      bad_input(fmt::format("unknown GPU '{}' (known: {}; also 'host' and the archs {})", id, fmt::join(ids, ", "),
                            fmt::join(archs, ", ")));
    }
    std::vector<const GpuSpec*> gpus;
    std::vector<const ArchLimits*> archs;
    if (id.empty()) {
      for (const GpuSpec& g : gpu_specs()) gpus.push_back(&g);
      for (const ArchLimits& a : arch_limits()) archs.push_back(&a);
    } else if (gpu) {
      gpus.push_back(gpu);
      archs.push_back(&find_arch(gpu->arch));
    } else if (arch) {
      archs.push_back(arch);
    }
    if (json_out) {
      json out = json::object();
      if (!gpus.empty() || id.empty()) {
        out["gpus"] = json::array();
        for (const GpuSpec* g : gpus) out["gpus"].push_back(gpu_json(*g));
      }
      if (!archs.empty()) {
        out["archs"] = json::array();
        for (const ArchLimits* a : archs) out["archs"].push_back(arch_json(*a));
      }
      if (host) out["host"] = host_json();
      fmt::print("{}\n", out.dump(2));
      return;
    }
    for (const GpuSpec* g : gpus) print_gpu(*g);
    for (const ArchLimits* a : archs) print_arch(*a);
    if (!archs.empty()) fmt::print("\n");
    if (host) print_host(host_json());
  });
}

}  // namespace kl::cli
