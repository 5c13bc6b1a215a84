// The op contract: an op is declared once (parameters, cost model, float64 reference,
// variants) and the CLI, tests, benchmarks and report all walk the same registry.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernelab/dtype.h"
#include "kernelab/tensor.h"

namespace kl {

enum class Backend { cpu, cuda, sim };
std::string_view backend_name(Backend b);
std::optional<Backend> parse_backend(std::string_view s);

// One instance of an op: dtype, shape dimensions and choices.
struct Problem {
  std::string op;
  DType dtype = DType::f32;
  std::map<std::string, int64_t> dims;      // e.g. m, n, k or rows, cols
  std::map<std::string, std::string> opts;  // e.g. a_layout=col, mode=max, causal=1, scale=0.125

  int64_t dim(const std::string& name) const;
  const std::string& opt(const std::string& name) const;
  double opt_number(const std::string& name) const;
  bool opt_flag(const std::string& name) const;  // "1"/"true"/"yes"
  std::string shape_str() const;                 // "m=1024,n=1024,k=1024"
  std::string label() const;                     // shape and options, for tables
};

// FLOPs as the field counts them, and the fewest bytes the op must move: each input read once,
// each output written once.
struct Cost {
  double flops = 0;
  double bytes = 0;
};

struct DimSpec {
  std::string name;
  int64_t default_value;
  std::string help;
};

struct OptSpec {
  std::string name;
  std::vector<std::string> values;  // allowed values; empty means a number
  std::string default_value;
  std::string help;
};

struct TensorSpec {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<int64_t> strides;  // empty: contiguous row-major
  double lo = -1, hi = 1;        // range of the random inputs
  // Inputs that are not uniform values (a pointer-chase cycle): fills the host tensor instead.
  std::function<void(Tensor&, uint64_t seed)> fill = nullptr;
};

// What a variant runs on: tensors resident on its backend, in the op's declared order.
struct Args {
  std::span<const Tensor> in;
  std::span<Tensor> out;
  void* workspace = nullptr;  // workspace_bytes(problem) bytes on the variant's backend
  void* stream = nullptr;     // cudaStream_t for the cuda backend
};

using Reason = std::optional<std::string>;  // nullopt: supported; otherwise why not

struct Variant {
  std::string name;
  Backend backend = Backend::cpu;
  std::string note;   // one sentence: what this rung changes against the one below, and why
  bool peer = false;  // a library peer (OpenBLAS, cuBLAS, ...)
  std::function<Reason(const Problem&)> supports = [](const Problem&) { return Reason{}; };
  std::function<size_t(const Problem&)> workspace_bytes = [](const Problem&) { return size_t{0}; };
  std::function<void(const Problem&, const Args&)> run;
  // A CUDA rung built a second time for the SIMT simulator: the same source, run on the CPU.
  std::function<void(const Problem&, const Args&)> sim_run;
  // CUDA rungs: the source file (relative to src/ops) and the PTX instructions the rung claims
  // to use (e.g. "ld.global.nc.v4", "shfl.sync"), which the static checks look for.
  std::string source;
  std::vector<std::string> ptx_claims;
  // CUDA rungs: threads per block of the rung's main launch (its occupancy in `kernelab list`);
  // 0 when the rung does not state it.
  int threads_per_block = 0;
  bool runs_on(Backend b) const { return b == backend || (b == Backend::sim && sim_run); }
};

struct Op {
  std::string name;
  std::string summary;
  std::string counting;  // the FLOP and byte counting convention, in words
  std::vector<DimSpec> dims;
  std::vector<OptSpec> opts;
  std::vector<DType> dtypes;
  std::function<void(const Problem&)> validate;  // throws BadInput naming the bad value
  std::function<Cost(const Problem&)> cost;
  std::function<std::vector<TensorSpec>(const Problem&)> inputs;
  std::function<std::vector<TensorSpec>(const Problem&)> outputs;
  // The float64 reference: one vector of doubles per output, row-major logical order.
  std::function<std::vector<std::vector<double>>(const Problem&, std::span<const Tensor>)> reference;
  std::function<std::vector<Problem>(const Op&)> check_cases;   // the correctness sweep
  std::function<std::vector<Problem>(const Op&)> report_cases;  // the default benchmark suite
  // Largest acceptable error (see max_rel_err) for a problem, and how the error is normalised:
  // per row for row-wise ops, over the whole output where rows are not independent problems
  // (a gemm row of one element would turn a cancellation into a large relative error).
  std::function<double(const Problem&)> tolerance;
  bool error_per_row = true;
  // An execution-model or memory-hierarchy experiment (exp_*): fp32 only, swept along the axis
  // it studies rather than over the operators' shape and dtype sweep; may have no CPU variant.
  bool experiment = false;
  std::vector<Variant> variants;

  const Variant* find_variant(std::string_view name) const;
};

const std::vector<Op>& registry();
const Op& find_op(std::string_view name);  // BadInput naming the op and the known ones

// A problem of `op` with its defaults, the given overrides, validated. BadInput on any bad value,
// and, when it is to run here (not only be costed), on tensors that cannot fit in host memory.
enum class Use { run, cost_only };
Problem make_problem(const Op& op, DType dtype, const std::map<std::string, int64_t>& dims = {},
                     const std::map<std::string, std::string>& opts = {}, Use use = Use::run);

// Tolerance by dtype used by most ops: a few units of roundoff of the output format
// (fp32 results allow for a different summation order over up to ~10^4 terms).
double default_tolerance(DType t);

// Error of one output against its reference: the largest |y - r| in a row divided by the
// largest |r| of that row (a row is the last dimension), maximised over rows; with per_row
// false, the whole output is one row. Non-finite y where r is finite gives +inf.
double max_rel_err(const Tensor& y, const std::vector<double>& ref, bool per_row = true);

// Reads a host tensor in logical row-major order as doubles (strides applied).
std::vector<double> to_doubles(const Tensor& t);

}  // namespace kl
