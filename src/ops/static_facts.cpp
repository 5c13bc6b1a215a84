#include "ops/gpu_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "hw/occupancy.h"
#include "hw/specs.h"

namespace kl {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    size_t next = s.find(sep, at);
    parts.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

KernelResources kernel_from_json(const std::string& name, const nlohmann::json& a) {
  KernelResources k;
  k.name = name;
  k.registers = a.value("registers", 0);
  k.smem_bytes = a.value("smem_bytes", int64_t{0});
  k.spill_store_bytes = a.value("spill_store_bytes", int64_t{0});
  k.spill_load_bytes = a.value("spill_load_bytes", int64_t{0});
  k.stack_frame_bytes = a.value("stack_frame_bytes", int64_t{0});
  k.lmem_bytes = a.value("lmem_bytes", int64_t{0});
  return k;
}

nlohmann::json kernel_json(const KernelResources& k) {
  return {{"name", k.name},
          {"registers", k.registers},
          {"smem_bytes", k.smem_bytes},
          {"spill_bytes", k.spill_bytes()},
          {"spill_store_bytes", k.spill_store_bytes},
          {"spill_load_bytes", k.spill_load_bytes},
          {"stack_frame_bytes", k.stack_frame_bytes}};
}

}  // namespace

KernelResources RungStatic::max_over_kernels(const std::string& arch) const {
  KernelResources m;
  m.name = "max";
  auto it = kernels.find(arch);
  if (it == kernels.end()) return m;
  for (const KernelResources& k : it->second) {
    m.registers = std::max(m.registers, k.registers);
    m.smem_bytes = std::max(m.smem_bytes, k.smem_bytes);
    m.spill_store_bytes = std::max(m.spill_store_bytes, k.spill_store_bytes);
    m.spill_load_bytes = std::max(m.spill_load_bytes, k.spill_load_bytes);
    m.stack_frame_bytes = std::max(m.stack_frame_bytes, k.stack_frame_bytes);
    m.lmem_bytes = std::max(m.lmem_bytes, k.lmem_bytes);
  }
  return m;
}

const RungStatic* CudaStatic::find(const std::string& source) const {
  auto it = rungs.find(source);
  return it == rungs.end() ? nullptr : &it->second;
}

bool cuda_static_expected() {
#ifdef KERNELAB_CUDA_STATIC_JSON
  return true;
#else
  return false;
#endif
}

CudaStatic load_cuda_static(const std::string& path) {
  CudaStatic s;
  s.path = path;
  std::ifstream in(path);
  if (!in) {
    s.why_not = fmt::format("not available: {} not found (built by the kernelab_cuda_static target)", path);
    return s;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    s.archs = j.at("archs").get<std::vector<std::string>>();
    for (const auto& [source, f] : j.at("sources").items()) {
      RungStatic& r = s.rungs[source];
      r.source = source;
      for (const auto& [arch, ptx] : f.at("ptx").items()) r.ptx_files[arch] = ptx.get<std::string>();
      for (const auto& [name, k] : f.at("kernels").items())
        for (const std::string& arch : s.archs)
          if (k.contains(arch))
            (k.value("entry", true) ? r.kernels : r.device_functions)[arch].push_back(kernel_from_json(name, k[arch]));
    }
  } catch (const nlohmann::json::exception& e) {
    s.rungs.clear();
    s.why_not = fmt::format("not available: {} is malformed ({})", path, e.what());
  }
  return s;
}

const CudaStatic& cuda_static() {
#ifdef KERNELAB_CUDA_STATIC_JSON
  static const CudaStatic s = load_cuda_static(KERNELAB_CUDA_STATIC_JSON);
#else
  static const CudaStatic s = [] {
    CudaStatic n;
    n.why_not = kNoCudaCompiler;
    return n;
  }();
#endif
  return s;
}

std::vector<std::string> ptx_opcodes(std::string_view ptx) {
  std::vector<std::string> ops;
  bool in_block_comment = false;
  for (std::string_view line : split(ptx, '\n')) {
    std::string text;  // the line without comments
    for (size_t i = 0; i < line.size(); ++i) {
      if (in_block_comment) {
        if (line.substr(i, 2) == "*/") in_block_comment = false, ++i;
      } else if (line.substr(i, 2) == "/*") {
        in_block_comment = true, ++i;
      } else if (line.substr(i, 2) == "//") {
        break;
      } else {
        text += line[i];
      }
    }
    for (std::string_view stmt : split(text, ';')) {
      stmt = trim(stmt);
      while (!stmt.empty() && (stmt.front() == '{' || stmt.front() == '}')) stmt = trim(stmt.substr(1));
      // A label ("$L__BB0_2:"): a colon before any blank, not one of a qualifier's "::" (L1::no_allocate).
      if (size_t colon = stmt.find(':'); colon != std::string_view::npos && stmt.find_first_of(" \t") > colon &&
                                         stmt.substr(colon, 2) != "::")
        stmt = trim(stmt.substr(colon + 1));
      if (!stmt.empty() && stmt.front() == '@') {  // a predicate guard: "@%p1 bra ...", "@!%p2 ..."
        size_t sp = stmt.find_first_of(" \t");
        stmt = sp == std::string_view::npos ? std::string_view{} : trim(stmt.substr(sp));
      }
      if (stmt.empty() || stmt.front() == '.') continue;  // a directive or declaration
      std::string_view op = stmt.substr(0, stmt.find_first_of(" \t"));
      if (std::isalpha(static_cast<unsigned char>(op.front()))) ops.emplace_back(op);
    }
  }
  return ops;
}

bool claim_matches(std::string_view claim, std::string_view opcode) {
  const auto want = split(claim, '.'), have = split(opcode, '.');
  if (want.empty() || have.empty() || want[0] != have[0]) return false;
  size_t i = 1;
  for (size_t j = 1; i < want.size() && j < have.size(); ++j)
    if (want[i] == have[j]) ++i;
  return i == want.size();
}

std::vector<std::string> ptx_violations(std::string_view ptx, const std::vector<std::string>& claims) {
  std::vector<std::string> problems;
  const std::vector<std::string> ops = ptx_opcodes(ptx);
  for (const std::string& c : claims)
    if (std::none_of(ops.begin(), ops.end(), [&](const std::string& op) { return claim_matches(c, op); }))
      problems.push_back(fmt::format("claims {} but no PTX instruction matches it", c));
  int local = 0;
  std::string first;
  for (const std::string& op : ops)
    if (claim_matches("ld.local", op) || claim_matches("st.local", op)) {
      if (!local++) first = op;
    }
  if (local) problems.push_back(fmt::format("{} local-memory instruction{} (first: {}): spills or a stack array", local,
                                            local == 1 ? "" : "s", first));
  return problems;
}

std::vector<std::string> resource_violations(const RungStatic& r) {
  std::vector<std::string> problems;
  for (const auto* group : {&r.kernels, &r.device_functions})
    for (const auto& [arch, ks] : *group)
      for (const KernelResources& k : ks) {
        if (k.spill_bytes())
          problems.push_back(fmt::format("{} on {}: {} bytes spill stores, {} bytes spill loads", k.name, arch,
                                         k.spill_store_bytes, k.spill_load_bytes));
        if (k.registers > kMaxRegistersPerThread)
          problems.push_back(fmt::format("{} on {}: {} registers per thread, over {}", k.name, arch, k.registers,
                                         kMaxRegistersPerThread));
      }
  return problems;
}

nlohmann::json variant_static_json(const Variant& v, const CudaStatic& s) {
  nlohmann::json j = {{"source", v.source}, {"ptx_claims", v.ptx_claims}};
  if (v.threads_per_block) j["threads_per_block"] = v.threads_per_block;
  const RungStatic* r = s.available() ? s.find(v.source) : nullptr;
  if (!r || !r->kernels.count(kStaticArch)) {
    j["static"] = !s.available() ? s.why_not
                                 : fmt::format("not available: {} has no {} entry for {}", s.path, kStaticArch, v.source);
    return j;
  }
  const KernelResources m = r->max_over_kernels(kStaticArch);
  j["arch"] = kStaticArch;
  j["registers"] = m.registers;
  j["smem_bytes"] = m.smem_bytes;
  j["spill_bytes"] = m.spill_bytes();
  j["stack_frame_bytes"] = m.stack_frame_bytes;
  nlohmann::json ks = nlohmann::json::array();
  for (const KernelResources& k : r->kernels.at(kStaticArch)) ks.push_back(kernel_json(k));
  j["kernels"] = ks;
  if (auto it = r->ptx_files.find(kStaticArch); it != r->ptx_files.end()) j["ptx_file"] = it->second;
  // Occupancy on sm_90 (sm_90a's limits are sm_90's) with the rung's largest kernel.
  if (!v.threads_per_block) {
    j["occupancy_sm90"] = "unknown: the rung does not state its threads per block (gpu_variant's threads_per_block)";
  } else if (!occupancy_available()) {
    j["occupancy_sm90"] = "unknown: this build has no cuda_occupancy.h";
  } else {
    try {
      j["occupancy_sm90"] = occupancy_json(compute_occupancy(find_arch("sm_90"), v.threads_per_block, m.registers, m.smem_bytes));
    } catch (const std::exception& e) {
      j["occupancy_sm90"] = std::string("not computable: ") + e.what();
    }
  }
  return j;
}

std::string variant_resources_line(const Variant& v, const CudaStatic& s) {
  const RungStatic* r = s.available() ? s.find(v.source) : nullptr;
  if (!r || !r->kernels.count(kStaticArch))
    return !s.available() ? s.why_not : fmt::format("not available: no {} entry for {}", kStaticArch, v.source);
  const KernelResources m = r->max_over_kernels(kStaticArch);
  const size_t n = r->kernels.at(kStaticArch).size();
  return fmt::format("{}: {} registers, {} B smem, {}{}", kStaticArch, m.registers, m.smem_bytes,
                     m.spill_bytes() ? fmt::format("{} B spilled", m.spill_bytes()) : std::string("no spills"),
                     n > 1 ? fmt::format(" (max of {} kernels)", n) : "");
}

}  // namespace kl
