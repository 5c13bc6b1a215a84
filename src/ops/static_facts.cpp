#include "ops/static_facts.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hw/occupancy.h"

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

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : mangled;
  std::free(d);
  return out;
}

KernelFacts& kernel_in(ObjectFacts& o, const std::string& arch, const std::string& mangled) {
  auto& ks = o.kernels[arch];
  for (KernelFacts& k : ks)
    if (k.mangled == mangled) return k;
  KernelFacts k;
  k.mangled = mangled;
  k.name = plain_kernel_name(demangle(mangled));
  ks.push_back(std::move(k));
  return ks.back();
}

int64_t field(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return 0;
  int64_t v = 0;
  for (size_t i = at + key.size(); i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i) v = 10 * v + (line[i] - '0');
  return v;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// The PTX of each .entry in an embedded PTX text: from its name to the brace closing its body.
void split_ptx_entries(ObjectFacts& o, const std::string& arch, const std::string& ptx) {
  for (size_t at = ptx.find(".entry "); at != std::string::npos; at = ptx.find(".entry ", at + 1)) {
    size_t b = at + 7;
    while (b < ptx.size() && ptx[b] == ' ') ++b;
    size_t e = b;
    while (e < ptx.size() && is_name_char(ptx[e])) ++e;
    const size_t open = ptx.find('{', e);
    if (e == b || open == std::string::npos) continue;
    int depth = 0;
    size_t end = open;
    for (; end < ptx.size(); ++end) {
      if (ptx[end] == '{') ++depth;
      else if (ptx[end] == '}' && --depth == 0) break;
    }
    kernel_in(o, arch, ptx.substr(b, e - b)).ptx = ptx.substr(open, end - open + 1);
  }
}

// The opcode of a SASS line "        /*0040*/   @!P0 LDG.E.128 R4, ...": empty for any other line.
std::string_view sass_opcode(std::string_view t) {
  if (t.size() < 6 || t.substr(0, 2) != "/*" || !std::isxdigit(static_cast<unsigned char>(t[2]))) return {};
  const size_t close = t.find("*/");
  if (close == std::string_view::npos) return {};
  t = trim(t.substr(close + 2));
  if (!t.empty() && t.front() == '@') t = trim(t.substr(std::min(t.size(), t.find_first_of(" \t"))));
  size_t n = 0;
  // Letters too: Hopper's shapes are lower-case ("HGMMA.64x128x16.F32").
  while (n < t.size() && (std::isalnum(static_cast<unsigned char>(t[n])) || t[n] == '_' || t[n] == '.'))
    ++n;
  return n && std::isupper(static_cast<unsigned char>(t[0])) ? t.substr(0, n) : std::string_view{};
}

// A rung file's namespace (gpu_rung.h): its path relative to src/ops, '/' as '_', no ".cu".
std::string rung_namespace(std::string source) {
  if (source.size() > 3 && source.ends_with(".cu")) source.resize(source.size() - 3);
  std::replace(source.begin(), source.end(), '/', '_');
  return source;
}

bool names_namespace(const std::string& demangled, const std::string& ns) {
  for (size_t at = demangled.find(ns + "::"); at != std::string::npos; at = demangled.find(ns + "::", at + 1))
    if (at == 0 || !is_name_char(demangled[at - 1])) return true;
  return false;
}

// A unit's object (one rung file, or a batch of several built as one unit: cmake/ops.cmake) split
// into one per file: a file's kernels are those in its namespace, and a kernel in none of them (a
// shared header's, instantiated for the unit) belongs to each file.
void split_unit(CudaStatic& s, const ObjectFacts& unit, const std::vector<std::string>& sources) {
  std::vector<ObjectFacts*> objects;
  std::vector<std::string> spaces;
  for (const std::string& source : sources) {
    ObjectFacts& o = s.objects[source];
    o.source = source;
    o.unit = sources;
    objects.push_back(&o);
    spaces.push_back(rung_namespace(source));
  }
  for (const auto& [arch, kernels] : unit.kernels)
    for (KernelFacts k : kernels) {
      const std::string demangled = demangle(k.mangled);
      const auto owner = std::find_if(spaces.begin(), spaces.end(), [&](const std::string& ns) { return names_namespace(demangled, ns); });
      k.shared = owner == spaces.end();
      if (k.shared) {
        for (ObjectFacts* o : objects) o->kernels[arch].push_back(k);
      } else {
        objects[owner - spaces.begin()]->kernels[arch].push_back(std::move(k));
      }
    }
}

}  // namespace

const KernelFacts* ObjectFacts::find(const std::string& arch, const std::string& plain_name) const {
  auto it = kernels.find(arch);
  if (it == kernels.end()) return nullptr;
  for (const KernelFacts& k : it->second)
    if (k.name == plain_name) return &k;
  return nullptr;
}

const ObjectFacts* CudaStatic::find(const std::string& source) const {
  auto it = objects.find(source);
  return it == objects.end() ? nullptr : &it->second;
}

bool cuda_static_expected() {
#ifdef KERNELAB_CUDA_STATIC_DIR
  return true;
#else
  return false;
#endif
}

CudaStatic parse_cuobjdump(std::string_view text) {
  CudaStatic s;
  std::set<std::string> archs;
  ObjectFacts* obj = nullptr;
  std::string arch, mode, sass_kernel, pending_res, ptx;
  ObjectFacts unit;
  std::vector<std::string> unit_sources;
  auto end_object = [&] {
    if (obj && !ptx.empty()) split_ptx_entries(*obj, arch, ptx);
    ptx.clear();
    if (obj) split_unit(s, unit, unit_sources);
    unit = {};
  };
  for (std::string_view line : split(text, '\n')) {
    if (line.rfind("#kernelab-object ", 0) == 0) {
      end_object();
      unit_sources.clear();
      for (std::string_view source : split(trim(line.substr(17)), ' '))
        if (!source.empty()) unit_sources.emplace_back(source);
      obj = &unit;
      mode.clear();
      continue;
    }
    if (!obj) continue;
    if (line.rfind("Fatbin elf code:", 0) == 0 || line.rfind("Fatbin ptx code:", 0) == 0) {
      if (!ptx.empty()) split_ptx_entries(*obj, arch, ptx);
      ptx.clear();
      mode = line[7] == 'e' ? "elf" : "ptx-header";
      continue;
    }
    if (line.rfind("arch = ", 0) == 0) {
      arch = std::string(trim(line.substr(7)));
      archs.insert(arch);
      continue;
    }
    if (mode == "ptx-header" && line.rfind(".version", 0) == 0) mode = "ptx";
    if (mode == "ptx") {
      ptx.append(line).push_back('\n');
      continue;
    }
    const std::string_view t = trim(line);
    if (t.rfind("Function : ", 0) == 0) {  // SASS of a function follows
      sass_kernel = std::string(trim(t.substr(11)));
      kernel_in(*obj, arch, sass_kernel);
    } else if (t.rfind("Function ", 0) == 0 && t.back() == ':') {  // resource usage, on the next line
      pending_res = std::string(t.substr(9, t.size() - 10));
    } else if (!pending_res.empty() && t.rfind("REG:", 0) == 0) {
      KernelFacts& k = kernel_in(*obj, arch, pending_res);
      k.registers = static_cast<int>(field(t, "REG:"));
      k.smem_bytes = field(t, "SHARED:");
      k.stack_bytes = field(t, "STACK:");
      k.local_bytes = field(t, "LOCAL:");
      pending_res.clear();
    } else if (!sass_kernel.empty()) {
      if (std::string_view op = sass_opcode(t); !op.empty()) kernel_in(*obj, arch, sass_kernel).sass.emplace_back(op);
    }
  }
  end_object();
  s.archs.assign(archs.begin(), archs.end());
  return s;
}

CudaStatic load_cuda_static(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string all;
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(dir, ec))
    if (f.path().extension() == ".txt") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  CudaStatic s = parse_cuobjdump(all);
  s.dir = dir;
  if (files.empty())
    s.why_not = fmt::format("not available: no cuobjdump dump in {} (built by the kl_cuda_static target; needs cuobjdump "
                            "and nvdisasm: scripts/install-deps.sh installs them)", dir);
  else if (s.objects.empty())
    s.why_not = fmt::format("not available: the dumps in {} hold no rung object (malformed)", dir);
  return s;
}

const CudaStatic& cuda_static() {
#ifdef KERNELAB_CUDA_STATIC_DIR
  static const CudaStatic s = load_cuda_static(KERNELAB_CUDA_STATIC_DIR);
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

std::vector<std::string> config_violations(const Variant& v, const Config& c, const CudaStatic& s) {
  std::vector<std::string> problems;
  const ObjectFacts* o = s.find(v.source);
  if (!o) return {fmt::format("{} is not among the built objects in {}", v.source, s.dir)};
  for (const KernelGroup& g : c.kernels)
    for (const KernelRef& ref : g.kernels)
      for (const std::string& arch : s.archs) {
        const KernelFacts* k = o->find(arch, ref.name);
        if (!k) {
          problems.push_back(fmt::format("kernel {} is not in the {} code of {}", ref.name, arch, v.source));
          continue;
        }
        if (k->registers > kMaxRegistersPerThread)
          problems.push_back(fmt::format("{} on {}: {} registers per thread, over {}", k->name, arch, k->registers, kMaxRegistersPerThread));
        if (k->stack_bytes || k->local_bytes)
          problems.push_back(fmt::format("{} on {}: {} bytes of stack frame, {} of local memory: spills or a stack array", k->name,
                                         arch, k->stack_bytes, k->local_bytes));
        for (const std::string& op : k->sass)
          if (claim_matches("LDL", op) || claim_matches("STL", op)) {
            problems.push_back(fmt::format("{} on {}: local-memory instruction {} in its SASS", k->name, arch, op));
            break;
          }
        if (arch != kStaticArch) continue;
        const std::vector<std::string> ptx = ptx_opcodes(k->ptx);
        if (k->ptx.empty()) problems.push_back(fmt::format("{}: no {} PTX embedded for it", k->name, arch));
        for (const std::string& claim : g.ptx)
          if (std::none_of(ptx.begin(), ptx.end(), [&](const std::string& op) { return claim_matches(claim, op); }))
            problems.push_back(fmt::format("{} claims PTX {} but its {} PTX has no such instruction", k->name, claim, arch));
        for (const std::string& claim : g.sass)
          if (std::none_of(k->sass.begin(), k->sass.end(), [&](const std::string& op) { return claim_matches(claim, op); }))
            problems.push_back(fmt::format("{} claims SASS {} but its {} SASS has no such instruction", k->name, claim, arch));
        for (const std::string& op : ptx)
          if (claim_matches("ld.local", op) || claim_matches("st.local", op)) {
            problems.push_back(fmt::format("{}: local-memory instruction {} in its PTX", k->name, op));
            break;
          }
      }
  return problems;
}

namespace {

nlohmann::json config_json(const Variant& v, const Config& c, const ObjectFacts& o, KernelFacts& max) {
  nlohmann::json kernels = nlohmann::json::array(), ptx_claims = nlohmann::json::array(), sass_claims = nlohmann::json::array();
  for (const KernelGroup& g : c.kernels) {
    for (const std::string& x : g.ptx) ptx_claims.push_back(x);
    for (const std::string& x : g.sass) sass_claims.push_back(x);
    for (const KernelRef& ref : g.kernels) {
      const KernelFacts* k = o.find(kStaticArch, ref.name);
      if (!k) {
        kernels.push_back({{"name", ref.name}, {"static", fmt::format("not in the {} code of {}", kStaticArch, v.source)}});
        continue;
      }
      max.registers = std::max(max.registers, k->registers);
      max.smem_bytes = std::max(max.smem_bytes, k->smem_bytes);
      max.stack_bytes = std::max(max.stack_bytes, k->stack_bytes);
      kernels.push_back({{"name", k->name}, {"registers", k->registers}, {"smem_bytes", k->smem_bytes},
                         {"spill_bytes", k->stack_bytes}, {"stack_frame_bytes", k->stack_bytes}, {"ptx_claims", g.ptx},
                         {"sass_claims", g.sass}});
    }
  }
  nlohmann::json j = {{"name", c.name},       {"threads_per_block", c.threads_per_block}, {"dynamic_smem_bytes", c.dynamic_smem_bytes},
                      {"kernels", kernels},   {"registers", max.registers},               {"smem_bytes", max.smem_bytes + c.dynamic_smem_bytes},
                      {"spill_bytes", max.stack_bytes}, {"ptx_claims", ptx_claims},       {"sass_claims", sass_claims}};
  if (!c.threads_per_block) {
    j["occupancy_sm90"] = "unknown: the config does not state its threads per block";
  } else if (!occupancy_available()) {
    j["occupancy_sm90"] = "unknown: this build has no cuda_occupancy.h";
  } else {
    try {  // sm_90a's limits are sm_90's; the config's largest kernel
      j["occupancy_sm90"] = occupancy_json(
          compute_occupancy(find_arch("sm_90"), c.threads_per_block, max.registers, max.smem_bytes + c.dynamic_smem_bytes));
    } catch (const std::exception& e) {
      j["occupancy_sm90"] = std::string("not computable: ") + e.what();
    }
  }
  return j;
}

}  // namespace

nlohmann::json variant_static_json(const Variant& v, const CudaStatic& s) {
  std::set<std::string> claims;
  for (const Config& c : v.configs)
    for (const KernelGroup& g : c.kernels) claims.insert(g.ptx.begin(), g.ptx.end());
  nlohmann::json j = {{"source", v.source}, {"ptx_claims", claims}};
  if (!v.configs.empty() && v.configs.front().threads_per_block) j["threads_per_block"] = v.configs.front().threads_per_block;
  const ObjectFacts* o = s.available() && !v.generated ? s.find(v.source) : nullptr;
  if (!o || v.peer) {
    j["static"] = v.peer            ? std::string("no kernel of ours: the library launches its own")
                  : v.generated     ? std::string(kGeneratedRung)
                  : !s.available() ? s.why_not
                                   : fmt::format("not available: {} holds no object for {}", s.dir, v.source);
    nlohmann::json configs = nlohmann::json::array();
    for (const Config& c : v.configs) configs.push_back({{"name", c.name}, {"threads_per_block", c.threads_per_block}});
    j["configs"] = configs;
    return j;
  }
  nlohmann::json configs = nlohmann::json::array();
  for (const Config& c : v.configs) {
    KernelFacts max;
    configs.push_back(config_json(v, c, *o, max));
  }
  const nlohmann::json& first = configs.front();
  j["arch"] = kStaticArch;
  for (const char* key : {"registers", "smem_bytes", "spill_bytes", "kernels", "occupancy_sm90"}) j[key] = first[key];
  j["stack_frame_bytes"] = first["spill_bytes"];
  j["configs"] = configs;
  return j;
}

std::string variant_resources_line(const Variant& v, const CudaStatic& s) {
  if (v.peer) return "no kernel of ours: the library launches its own";
  if (v.generated) return kGeneratedRung;
  const ObjectFacts* o = s.available() ? s.find(v.source) : nullptr;
  if (!o || v.configs.empty())
    return !s.available() ? s.why_not : fmt::format("not available: no object for {}", v.source);
  KernelFacts max;
  const nlohmann::json j = config_json(v, v.configs.front(), *o, max);
  const size_t n = j["kernels"].size();
  return fmt::format("{}: {} registers, {} B smem, {}{}{}", kStaticArch, max.registers, max.smem_bytes + v.configs.front().dynamic_smem_bytes,
                     max.stack_bytes ? fmt::format("{} B stack frame", max.stack_bytes) : std::string("no spills"),
                     n > 1 ? fmt::format(" (max of {} kernels)", n) : "",
                     v.configs.size() > 1 ? fmt::format(", config {} of {}", v.configs.front().name, v.configs.size()) : "");
}

}  // namespace kl
