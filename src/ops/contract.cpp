#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>
#include <fmt/format.h>

#include "kernelab/error.h"
#include "kernelab/launch_log.h"
#include "kernelab/op.h"

namespace kl {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
    case Backend::sim: return "sim";
  }
  return "?";
}

std::optional<Backend> parse_backend(std::string_view s) {
  for (Backend b : {Backend::cpu, Backend::cuda, Backend::sim})
    if (backend_name(b) == s) return b;
  return std::nullopt;
}

void Problem::wrong_params(const std::string& op) {
  runtime_failure(fmt::format("a problem of op {} does not hold the parameters its rung expects", op));
}

DType Problem::dtype_of(const std::string& tensor) const {
  auto it = tensor_dtypes.find(tensor);
  return it == tensor_dtypes.end() ? dtype : it->second;
}

int64_t Problem::dim(const std::string& name) const {
  auto it = dims.find(name);
  if (it == dims.end()) bad_input(fmt::format("op {} has no dimension '{}'", op, name));
  return it->second;
}

const std::string& Problem::opt(const std::string& name) const {
  auto it = opts.find(name);
  if (it == opts.end()) bad_input(fmt::format("op {} has no option '{}'", op, name));
  return it->second;
}

double Problem::opt_number(const std::string& name) const { return std::stod(opt(name)); }

bool Problem::opt_flag(const std::string& name) const {
  const std::string& v = opt(name);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::string Problem::shape_str() const {
  std::string s;
  for (const auto& [k, v] : dims) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

std::string Problem::label() const {
  std::string s = shape_str();
  for (const auto& [k, v] : opts)
    if (!v.empty()) s += "," + k + "=" + v;  // empty: an option left unset (attention's --seqlens)
  for (const auto& [k, t] : tensor_dtypes) s += "," + k + ":" + std::string(dtype_name(t));
  return s;
}

Config::Config() = default;
Config::Config(const Config&) = default;
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(const Config&) = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

Variant::Variant() = default;
Variant::Variant(const Variant&) = default;
Variant::Variant(Variant&&) noexcept = default;
Variant& Variant::operator=(const Variant&) = default;
Variant& Variant::operator=(Variant&&) noexcept = default;
Variant::~Variant() = default;

bool Config::launches(const void* kernel, Backend b) const {
  for (const KernelGroup& g : kernels)
    for (const KernelRef& k : g.kernels)
      if ((b == Backend::sim ? k.sim : k.cuda) == kernel) return true;
  return false;
}

bool Variant::runs_on(Backend b) const {
  if (b == backend) return true;
  return b == Backend::sim && !configs.empty() && configs.front().sim_run != nullptr;
}

const Config& Variant::config(std::string_view n) const {
  std::string known;
  for (const Config& c : configs) {
    if (c.name == n) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  bad_input(fmt::format("variant {} of {} has no config '{}' (configs: {})", name, op, n, known));
}

Reason Variant::supports_config(const Problem& p, const Config& c) const {
  if (Reason why = supports(p)) return why;
  return c.supports ? c.supports(p) : Reason{};
}

std::string plain_kernel_name(std::string_view name) {
  std::string s(name);
  for (const char* anon : {"(anonymous namespace)::", "{anonymous}::"})
    for (size_t at; (at = s.find(anon)) != std::string::npos;) s.erase(at, std::strlen(anon));
  // Built once: every rung's kernels pass here at start-up, and building the two regexes per call
  // was most of a bare `kernelab specs`'s CPU time.
  static const std::regex qualifier(R"([A-Za-z_][A-Za-z0-9_]*::)"), literal_suffix(R"(\b([0-9]+)(?:ull|ul|ll|u|l)\b)");
  s = std::regex_replace(s, qualifier, "");
  s = std::regex_replace(s, literal_suffix, "$1");
  // Cut the parameter list: the first '(' outside template brackets that follows the name.
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0 && i > 0 && s[i - 1] != ' ') {
      s.resize(i);
      break;
    }
  }
  // A template function's demangled name starts with its return type ("void ").
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  return s;
}

std::string kernel_name_of_signature(std::string_view pretty) {
  const size_t at = pretty.find("K = ");
  if (at == std::string_view::npos) return plain_kernel_name(pretty);
  std::string_view k = pretty.substr(at + 4);
  if (const size_t end = k.rfind(']'); end != std::string_view::npos) k = k.substr(0, end);
  if (const size_t semi = k.find(';'); semi != std::string_view::npos) k = k.substr(0, semi);  // "...; <other params>"
  return plain_kernel_name(k);
}

std::string ops_relative_path(std::string_view file) {
  const size_t at = file.rfind("src/ops/");
  return std::string(at == std::string_view::npos ? file : file.substr(at + 8));
}

int ladder_number_of(std::string_view source) {
  std::smatch m;
  const std::string s(source.substr(source.rfind('/') == std::string_view::npos ? 0 : source.rfind('/') + 1));
  static const std::regex version(R"(v([0-9]+))");
  return std::regex_search(s, m, version) ? std::stoi(m[1]) : 0;
}

Variant cuda_variant(const std::string& op, const std::string& name, const std::string& note, bool peer, const char* file) {
  Variant v;
  v.op = op;
  v.name = name;
  v.backend = Backend::cuda;
  v.note = note;
  v.peer = peer;
  v.source = ops_relative_path(file);
  v.ladder_number = ladder_number_of(v.source);
  return v;
}

Config cuda_config(const std::string& name, int threads, int64_t dynamic_smem, const std::vector<KernelGroup>& kernels,
                   const std::optional<Tiling>& tiling) {
  Config c;
  c.name = name;
  c.threads_per_block = threads;
  c.dynamic_smem_bytes = dynamic_smem;
  c.kernels = kernels;
  c.tiling = tiling;
  return c;
}

namespace {
thread_local LaunchLog* active_log = nullptr;
}

LaunchLog::LaunchLog() : outer_(active_log) { active_log = this; }
LaunchLog::~LaunchLog() { active_log = outer_; }

void record_launch(const void* kernel) {
  if (active_log) active_log->kernels_.push_back(kernel);
}

const Variant* Op::find_variant(std::string_view n) const {
  for (const Variant& v : variants)
    if (v.name == n) return &v;
  return nullptr;
}

namespace {
// Bytes of host memory on this machine; problems that cannot fit are refused up front.
double physical_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

double spec_bytes(const std::vector<TensorSpec>& specs) {
  double total = 0;
  for (const TensorSpec& t : specs) {
    double n = 1;
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    total += n * dtype_bits(t.dtype) / 8.0;
  }
  return total;
}
}  // namespace

Problem make_problem(const Op& op, DType dtype, const std::map<std::string, int64_t>& dims,
                     const std::map<std::string, std::string>& opts, Use use,
                     const std::map<std::string, DType>& tensor_dtypes) {
  Problem p;
  p.op = op.name;
  if (std::find(op.dtypes.begin(), op.dtypes.end(), dtype) == op.dtypes.end()) {
    std::string ok;
    for (DType t : op.dtypes) ok += (ok.empty() ? "" : ", ") + std::string(dtype_name(t));
    bad_input(fmt::format("op {} does not take dtype {} (it takes: {})", op.name, dtype_name(dtype), ok));
  }
  p.dtype = dtype;
  for (const DimSpec& d : op.dims) p.dims[d.name] = d.default_value;
  for (const OptSpec& o : op.opts) p.opts[o.name] = o.default_value;
  for (const auto& [k, v] : dims) {
    if (!p.dims.count(k)) bad_input(fmt::format("op {} has no dimension '{}'", op.name, k));
    if (v <= 0) bad_input(fmt::format("dimension {}={} of op {} must be positive", k, v, op.name));
    if (v > (int64_t{1} << 40)) bad_input(fmt::format("dimension {}={} of op {} is impossibly large", k, v, op.name));
    p.dims[k] = v;
  }
  for (const auto& [k, v] : opts) {
    auto spec = std::find_if(op.opts.begin(), op.opts.end(), [&](const OptSpec& o) { return o.name == k; });
    if (spec == op.opts.end()) bad_input(fmt::format("op {} has no option '{}'", op.name, k));
    const bool unset = v.empty() && spec->default_value.empty();  // left unset, as by default (--seqlens)
    if (unset || spec->text) {
      // nothing to check here (op.validate checks a text)
    } else if (spec->list) {
      if (parse_positive_list(v).empty())
        bad_input(fmt::format("option {}='{}' of op {} is not a comma-separated list of positive integers", k, v, op.name));
    } else if (spec->values.empty()) {
      size_t used = 0;
      double x = 0;
      try {
        x = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || !std::isfinite(x)) bad_input(fmt::format("option {}='{}' of op {} is not a finite number", k, v, op.name));
    } else if (std::find(spec->values.begin(), spec->values.end(), v) == spec->values.end()) {
      std::string ok;
      for (const auto& s : spec->values) ok += (ok.empty() ? "" : ", ") + s;
      bad_input(fmt::format("option {}='{}' of op {} is not one of: {}", k, v, op.name, ok));
    }
    p.opts[k] = v;
  }
  for (const auto& [tensor, t] : tensor_dtypes) {
    auto allowed = op.tensor_dtypes.find(tensor);
    if (allowed == op.tensor_dtypes.end()) {
      std::string free;
      for (const auto& [name, _] : op.tensor_dtypes) free += (free.empty() ? "" : ", ") + name;
      bad_input(fmt::format("op {} has no tensor '{}' whose dtype can be chosen apart (those it has: {})", op.name,
                            tensor, free.empty() ? "none, every tensor follows --dtype" : free));
    }
    if (std::find(allowed->second.begin(), allowed->second.end(), t) == allowed->second.end()) {
      std::string ok;
      for (DType a : allowed->second) ok += (ok.empty() ? "" : ", ") + std::string(dtype_name(a));
      bad_input(fmt::format("tensor {} of op {} does not take dtype {} (it takes: {})", tensor, op.name, dtype_name(t), ok));
    }
    if (t != dtype) p.tensor_dtypes[tensor] = t;
  }
  if (op.derive) op.derive(p, dims);
  if (op.validate) op.validate(p);
  if (op.parse) p.params = op.parse(p);
  if (use == Use::cost_only) return p;
  double need = spec_bytes(op.inputs(p)) + spec_bytes(op.outputs(p));
  double have = physical_memory_bytes();
  if (need > 0.8 * have)
    bad_input(fmt::format("{} {} needs {:.1f} GiB of tensors, more than this machine's {:.1f} GiB can hold",
                          op.name, p.shape_str(), need / (1 << 30), have / (1 << 30)));
  return p;
}

double default_tolerance(DType t) {
  switch (t) {
    case DType::f64: return 1e-12;
    case DType::f32: return 1e-5;                   // different summation orders, ~10^4 terms
    case DType::f16: return 4 * dtype_epsilon(t);   // 4 * 2^-11: output rounding plus fp32 math
    case DType::bf16: return 4 * dtype_epsilon(t);  // 4 * 2^-8
    default: return 4 * dtype_epsilon(t);
  }
}

namespace {
// fn(r, off) for every row r of t's last dimension, rows in parallel: off is the storage offset
// of the row's first element, from its multi-index through the strides.
template <class Fn> void for_each_row(const Tensor& t, Fn&& fn) {
  const Shape& s = t.shape();
  const auto& st = t.strides();
  const int64_t outer = t.numel() / (s.empty() ? 1 : s.back());
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < outer; ++r) {
    int64_t off = 0, rem = r;
    for (size_t d = s.empty() ? 0 : s.size() - 1; d-- > 0;) {  // the outer dimensions (none for rank 0)
      off += (rem % s[d]) * st[d];
      rem /= s[d];
    }
    fn(r, off);
  }
}
}  // namespace

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const int64_t inner = t.shape().empty() ? 1 : t.shape().back(), stride = t.shape().empty() ? 1 : t.strides().back();
  for_each_row(t, [&](int64_t r, int64_t off) {
    for (int64_t j = 0; j < inner; ++j) out[r * inner + j] = t.get(off + j * stride);
  });
  return out;
}

// As the vector form below, reading y in place, rows in parallel: no double copy of y (a GiB and
// a second or more of page faults at 16384 x 8192).
double max_rel_err(const Tensor& y, const std::vector<double>& ref, bool per_row) {
  if (static_cast<size_t>(y.numel()) != ref.size()) return INFINITY;
  const int64_t inner = y.shape().empty() ? 1 : y.shape().back(), stride = y.shape().empty() ? 1 : y.strides().back();
  std::vector<double> diff(static_cast<size_t>(y.numel() / inner)), scale(diff.size());
  for_each_row(y, [&](int64_t r, int64_t off) {
    double d = 0, sc = 0;
    for (int64_t j = 0; j < inner; ++j) {
      const double got = y.get(off + j * stride), want = ref[static_cast<size_t>(r * inner + j)];
      if (!std::isfinite(want) || !std::isfinite(got)) {  // an infinite reference must be matched exactly
        if (got != want) d = INFINITY;
        continue;
      }
      d = std::max(d, std::abs(got - want));
      sc = std::max(sc, std::abs(want));
    }
    diff[static_cast<size_t>(r)] = d, scale[static_cast<size_t>(r)] = sc;
  });
  if (diff.empty()) return 0.0;
  const auto rel = [](double d, double sc) { return sc > 0 ? d / sc : (d > 0 ? INFINITY : 0.0); };
  if (!per_row || y.shape().empty())
    return rel(*std::max_element(diff.begin(), diff.end()), *std::max_element(scale.begin(), scale.end()));
  double worst = 0;
  for (size_t r = 0; r < diff.size(); ++r) worst = std::max(worst, rel(diff[r], scale[r]));
  return worst;
}

double max_rel_err(const std::vector<double>& got, const std::vector<double>& ref, size_t row) {
  if (got.size() != ref.size()) return INFINITY;
  if (row == 0) row = got.size();
  double worst = 0;
  for (size_t r0 = 0; r0 < got.size(); r0 += row) {
    double diff = 0, scale = 0;
    for (size_t i = r0; i < r0 + row; ++i) {
      if (!std::isfinite(ref[i])) {  // an infinity (attention's LSE of a row with no keys) must be matched exactly
        if (got[i] != ref[i]) return INFINITY;
        continue;
      }
      if (!std::isfinite(got[i])) return INFINITY;
      diff = std::max(diff, std::abs(got[i] - ref[i]));
      scale = std::max(scale, std::abs(ref[i]));
    }
    double e = scale > 0 ? diff / scale : (diff > 0 ? INFINITY : 0.0);
    worst = std::max(worst, e);
  }
  return worst;
}

std::vector<int64_t> parse_positive_list(std::string_view text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    int64_t v = 0;
    if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string_view::npos) return {};
    for (char c : item) v = v * 10 + (c - '0');
    if (v <= 0) return {};
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

}  // namespace kl
