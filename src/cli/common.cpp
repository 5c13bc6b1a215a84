#include "cli/common.h"

#include <dlfcn.h>

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "kernelab/error.h"
#if KERNELAB_HAVE_SIM
#include "sim/run/driver.h"
#endif

namespace kl::cli {

int args_after_separator = 0;


std::string flag_name(const std::string& name) {
  std::string f = "--" + name;
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

void ProblemFlags::attach(CLI::App& app) {
  app_ = &app;
  std::set<std::string> seen;
  for (const Op& op : registry()) {
    for (const DimSpec& d : op.dims)
      if (seen.insert(d.name).second) app.add_option(flag_name(d.name), dims_[d.name], d.help);
    for (const OptSpec& o : op.opts)
      if (seen.insert(o.name).second) app.add_option(flag_name(o.name), opts_[o.name], o.help);
  }
  app.add_option("--dtype", dtype_flag, "fp32, fp16, bf16, ...");
  app.add_option("--tensor-dtype", tensor_dtype_flags, "a tensor's own dtype, NAME=DTYPE (the op's list says which tensors may)")
      ->delimiter(',');
}

std::map<std::string, int64_t> ProblemFlags::given_dims(const Op& op) const {
  std::map<std::string, int64_t> out;
  for (const auto& [name, value] : dims_) {
    if (app_->count(flag_name(name)) == 0) continue;
    bool known = std::any_of(op.dims.begin(), op.dims.end(), [&](const DimSpec& d) { return d.name == name; });
    if (!known) bad_input(fmt::format("op {} has no shape option {}", op.name, flag_name(name)));
    out[name] = value;
  }
  return out;
}

std::map<std::string, std::string> ProblemFlags::given_opts(const Op& op) const {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : opts_) {
    if (app_->count(flag_name(name)) == 0) continue;
    bool known = std::any_of(op.opts.begin(), op.opts.end(), [&](const OptSpec& o) { return o.name == name; });
    if (!known) bad_input(fmt::format("op {} has no option {}", op.name, flag_name(name)));
    out[name] = value;
  }
  return out;
}

DType ProblemFlags::dtype(const Op& op) const {
  if (dtype_flag.empty()) return op.dtypes.front();
  auto t = parse_dtype(dtype_flag);
  if (!t) bad_input(fmt::format("unknown dtype '{}'", dtype_flag));
  return *t;
}

std::map<std::string, DType> ProblemFlags::given_tensor_dtypes() const {
  std::map<std::string, DType> out;
  for (const std::string& f : tensor_dtype_flags) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) bad_input(fmt::format("--tensor-dtype '{}' is not NAME=DTYPE", f));
    auto t = parse_dtype(f.substr(eq + 1));
    if (!t) bad_input(fmt::format("unknown dtype '{}' in --tensor-dtype {}", f.substr(eq + 1), f));
    out[f.substr(0, eq)] = *t;
  }
  return out;
}

bool ProblemFlags::any_given(const Op& op) const {
  return !given_dims(op).empty() || !given_opts(op).empty() || !dtype_flag.empty() || !tensor_dtype_flags.empty();
}

Problem ProblemFlags::problem(const Op& op) const {
  return make_problem(op, dtype(op), given_dims(op), given_opts(op), Use::run, given_tensor_dtypes());
}

std::vector<Backend> wanted_backends(const std::string& flag) {
  if (flag.empty()) return {Backend::cpu, Backend::cuda, Backend::sim};
  auto b = parse_backend(flag);
  if (!b) bad_input(fmt::format("unknown backend '{}' (known: cpu, cuda, sim)", flag));
  return {*b};
}

std::vector<const Variant*> chosen_variants(const Op& op, const std::vector<std::string>& names) {
  std::vector<const Variant*> out;
  if (names.empty()) {
    for (const Variant& v : op.variants) out.push_back(&v);
    return out;
  }
  for (const std::string& n : names) {
    const Variant* v = op.find_variant(n);
    if (!v) {
      std::string known;
      for (const Variant& x : op.variants) known += (known.empty() ? "" : ", ") + x.name;
      bad_input(fmt::format("op {} has no variant '{}' (variants: {})", op.name, n, known));
    }
    out.push_back(v);
  }
  return out;
}

std::vector<const Config*> chosen_configs(const Variant& v, const std::vector<std::string>& names, bool first_only) {
  std::vector<const Config*> out;
  for (const Config& c : v.configs)
    if (names.empty() ? (!first_only || out.empty()) : std::find(names.begin(), names.end(), c.name) != names.end())
      out.push_back(&c);
  return out;
}

void check_config_names(const Op& op, const std::vector<const Variant*>& variants, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::string known;
    bool found = false;
    for (const Variant* v : variants)
      for (const Config& c : v->configs) {
        found = found || c.name == n;
        known += (known.empty() ? "" : ", ") + v->name + ":" + c.name;
      }
    if (!found) bad_input(fmt::format("no chosen variant of {} has config '{}' (variant:config pairs: {})", op.name, n, known));
  }
}

LoadedRungs load_rung_file(const std::string& file, const std::string& op_name, RungBuilds builds) {
#if !KERNELAB_HAVE_SIM
  (void)op_name, (void)builds;
  bad_input(fmt::format("--rung {}: this build has no simulator to build it for (the CUDA toolkit's headers were not found)", file));
#else
  auto entry = [&](const std::string& library, const char* symbol) {
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open: its code runs until we exit
    if (!handle) runtime_failure(fmt::format("--rung {}: cannot load its build {}: {}", file, library, dlerror()));
    void* fn = dlsym(handle, symbol);
    if (!fn) bad_input(fmt::format("--rung {}: it declares no rungs (a KL_RUNGS block, as src/ops/*/cuda/*.cu have)", file));
    return reinterpret_cast<RungFile>(fn);
  };
  // kl::cuda::rung_user(), kl::sim_ops::rung_user(), kl::sim_profile::rung_user()
  const RungFile gpu = builds.gpu ? entry(sim::build_rung_library(file, sim::RungBuild::cuda), "_ZN2kl4cuda9rung_userEv") : nullptr;
  const RungFile simulated = builds.sim ? entry(sim::build_rung_library(file, sim::RungBuild::sim), "_ZN2kl7sim_ops9rung_userEv") : nullptr;
  const RungFile prof =
      builds.sim_profile ? entry(sim::build_rung_library(file, sim::RungBuild::sim_profile), "_ZN2kl11sim_profile9rung_userEv") : nullptr;
  LoadedRungs out;
  for (const Variant& v : add_user_rungs(gpu, simulated, prof, file)) {
    if (!op_name.empty() && v.op != op_name) bad_input(fmt::format("--rung {}: its rung {} is of op {}, not {}", file, v.name, v.op, op_name));
    if (out.op && out.op->name != v.op) bad_input(fmt::format("--rung {}: its rungs declare two ops, {} and {}", file, out.op->name, v.op));
    out.op = &find_op(v.op);
    out.names.push_back(v.name);
  }
  return out;
#endif
}

std::string format_seconds(double s) {
  if (s < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

std::string format_ratio(const std::optional<double>& r) { return r ? fmt::format("{:.2f}x", *r) : ""; }

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) s += fmt::format("{:<{}}", r[i], w[i] + 2);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    fmt::print("{}\n", s);
  };
  line(header);
  for (const auto& r : rows) line(r);
}

}  // namespace kl::cli
