// The op contract: an op is declared once (parameters, cost model, float64 reference,
// variants) and the CLI, tests, benchmarks and report all walk the same registry.
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelab/dtype.h"
#include "kernelab/tensor.h"

namespace kl {

enum class Backend { cpu, cuda, sim };
std::string_view backend_name(Backend b);
std::optional<Backend> parse_backend(std::string_view s);

// One instance of an op: dtype, shape dimensions and choices, as the user gave them, and the
// op's typed parameters parsed from them once (make_problem): what every rung receives.
struct Problem {
  std::string op;
  DType dtype = DType::f32;                   // the problem's dtype; a tensor may have its own
  std::map<std::string, DType> tensor_dtypes;  // tensors whose dtype was chosen apart (op.tensor_dtypes)
  std::map<std::string, int64_t> dims;         // e.g. m, n, k or rows, cols
  std::map<std::string, std::string> opts;     // e.g. a_layout=col, mode=max, causal=1, scale=0.125
  std::any params;                             // the op's parameter struct (Op::parse)

  // The typed parameters; a RuntimeFailure if the problem holds another op's.
  template <class P> const P& as() const {
    const P* p = std::any_cast<P>(&params);
    if (!p) wrong_params(op);
    return *p;
  }
  DType dtype_of(const std::string& tensor) const;  // its own dtype, else the problem's
  int64_t dim(const std::string& name) const;
  const std::string& opt(const std::string& name) const;
  double opt_number(const std::string& name) const;
  bool opt_flag(const std::string& name) const;  // "1"/"true"/"yes"
  std::string shape_str() const;                 // "m=1024,n=1024,k=1024"
  std::string label() const;                     // shape, options and tensor dtypes, for tables

 private:
  [[noreturn]] static void wrong_params(const std::string& op);
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
  bool swept = true;  // the check sweep takes it through 1, 7, 33, 127 and 1000 (not: head counts, head dims)
};

struct OptSpec {
  std::string name;
  std::vector<std::string> values;  // allowed values; empty means a number (or a list, below)
  std::string default_value;
  std::string help;
  bool list = false;  // a comma-separated list of positive integers ("1,17,300"); empty for none
  bool text = false;  // any text, which the op's validate checks (an expression)
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
using Launcher = std::function<void(const Problem&, const Args&)>;

// A kernel a CUDA rung launches: its name as the compilers spell it without namespaces
// ("softmax_warp<float, 4>"), and its address in each build (the host stub under nvcc, the
// function itself in the simulator build), which the launch log records.
struct KernelRef {
  std::string name;
  const void* cuda = nullptr;
  const void* sim = nullptr;
  const void* sim_profile = nullptr;  // the simulator's profiling build (instrumented loads and stores)
};

// "softmax_warp<float, 4>" from a demangled kernel name ("void kl::cuda::(anonymous namespace)::
// softmax_warp<float, 4>(float const*, ...)") or a __PRETTY_FUNCTION__ spelling: no namespaces,
// no return type or parameters, no integer-literal suffixes. Both compilers' names meet here.
std::string plain_kernel_name(std::string_view name);
// The kernel K of kernel_ref<K>'s __PRETTY_FUNCTION__ ("... [with auto K = ...]"), plain.
std::string kernel_name_of_signature(std::string_view pretty);
// "softmax/cuda/v04_warp_vectorized.cu" from a path through src/ops/.
std::string ops_relative_path(std::string_view file);
// The NN of a rung file's vNN ("softmax/cuda/v04_x.cu" -> 4, "experiments/cuda/stride_v01.cu" -> 1).
int ladder_number_of(std::string_view source);

// Kernels that hold the same claims: every PTX and SASS instruction listed must appear in every
// kernel of the group (ptx: "ld.global.nc.v4", sass: "LDG.E.128"); see ops/static_facts.h.
struct KernelGroup {
  std::vector<KernelRef> kernels = {};
  std::vector<std::string> ptx = {}, sass = {};
};

// How a tiled matrix-multiply config divides D = A B (`explain gemm --rung` models it): the block's
// tile of D and the k slice it stages per step, the warp's part of the block tile, and either the
// accumulators one thread owns (CUDA cores, FFMA) or the tensor-core instruction's shape.
struct Tiling {
  int block_m = 0, block_n = 0, block_k = 0;
  int warp_m = 0, warp_n = 0;
  int thread_m = 0, thread_n = 0;  // CUDA cores; 0 with an MMA instruction
  std::string mma = {};            // "mma.sync.m16n8k16", "wgmma.m64n128k16", ...; empty: FFMA
  int mma_m = 0, mma_n = 0, mma_k = 0;
  int stages = 1;  // k slices resident in shared memory at once
  int split_k = 0;  // split-K: one slice per this many k (at most 16 slices); 0: no split
};

// One configuration of a variant (a tile shape, a block size, a stage count): what it launches,
// with how many threads and how much dynamic shared memory, and the launcher that does it.
struct Config {
  std::string name;
  int threads_per_block = 0;       // CUDA rungs: of every launch (0 for CPU variants)
  int64_t dynamic_smem_bytes = 0;  // CUDA rungs: per block, beyond the kernels' static shared memory
  std::vector<KernelGroup> kernels;
  Launcher run;      // on the variant's backend
  Launcher sim_profile_run;  // and a third time with every load and store counted (sim/profile.h)
  Launcher sim_run;  // a CUDA rung built a second time for the SIMT simulator: the same source
  std::function<Reason(const Problem&)> supports = nullptr;  // beyond the variant's own; nullptr: all
  std::optional<Tiling> tiling = std::nullopt;  // tiled matrix multiplies
  bool launches(const void* kernel, Backend b) const;  // kernel is one this config declares (b: cuda or sim)

  // Out of line (contract.cpp), as Variant's: compiled once, not in each build of each rung file.
  Config();
  Config(const Config&);
  Config(Config&&) noexcept;
  Config& operator=(const Config&);
  Config& operator=(Config&&) noexcept;
  ~Config();
};

struct Variant {
  std::string op;     // the op it belongs to
  std::string name;
  Backend backend = Backend::cpu;
  std::string note;   // one sentence: what this rung changes against the one below, and why
  bool peer = false;  // a library peer (OpenBLAS, cuBLAS, ...)
  // CUDA rungs generated at run time for each problem (the `fused` op's, src/jit): no rung file,
  // so no static facts of a built object; NVRTC's PTX is checked instead (`kernelab fuse --arch`).
  bool generated = false;
  std::string source;  // CUDA rungs: the file, relative to src/ops; it declares the rung
  int ladder_number = 0;  // CUDA rungs: NN of the file's vNN, their place in the ladder
  std::function<Reason(const Problem&)> supports = [](const Problem&) { return Reason{}; };
  std::function<size_t(const Problem&)> workspace_bytes = [](const Problem&) { return size_t{0}; };
  // Its own tolerance where its arithmetic is coarser than the op's (TF32's 10-bit mantissa); nullptr: the op's.
  std::function<double(const Problem&)> tolerance = nullptr;
  std::vector<Config> configs;  // at least one; the first is the default

  bool runs_on(Backend b) const;
  const Config& config(std::string_view name) const;  // BadInput naming the configs it has
  // Why this variant cannot run p with config c (the variant's reason first), or nullopt.
  Reason supports_config(const Problem& p, const Config& c) const;

  // Out of line (contract.cpp): inline, these copies and destructors of strings, functions and
  // vectors were a quarter of the code each rung file's builds generated.
  Variant();
  Variant(const Variant&);
  Variant(Variant&&) noexcept;
  Variant& operator=(const Variant&);
  Variant& operator=(Variant&&) noexcept;
  ~Variant();
};

// A CUDA rung's variant_of (ops/gpu_rung.h) in the parts that do not depend on its op's parameters,
// compiled once: the variant with its source file and ladder number, and a config with its kernels.
Variant cuda_variant(const std::string& op, const std::string& name, const std::string& note, bool peer, const char* file);
Config cuda_config(const std::string& name, int threads, int64_t dynamic_smem, const std::vector<KernelGroup>& kernels,
                   const std::optional<Tiling>& tiling);

struct Op {
  std::string name;
  std::string summary;
  std::string counting;  // the FLOP and byte counting convention, in words
  std::vector<DimSpec> dims;
  std::vector<OptSpec> opts;
  std::vector<DType> dtypes;
  // Tensors whose dtype may differ from the problem's (a bf16 x int4 GEMM's weights and
  // scales): name -> the dtypes it takes. The others follow the problem's dtype.
  std::map<std::string, std::vector<DType>> tensor_dtypes;
  // Dimensions that follow from options (attention's --seqlens sets the batch and the lengths),
  // before validate; `given` holds the dimensions the user set, which it may refuse to override.
  std::function<void(Problem&, const std::map<std::string, int64_t>& given)> derive = nullptr;
  std::function<void(const Problem&)> validate;  // throws BadInput naming the bad value
  std::function<std::any(const Problem&)> parse;  // the typed parameters rungs receive
  std::function<Cost(const Problem&)> cost;
  std::function<std::vector<TensorSpec>(const Problem&)> inputs;
  // Inputs that follow from the others, filled after the random ones (attention_bwd's O and LSE
  // are the forward pass's outputs on its Q, K and V).
  std::function<void(const Problem&, std::vector<Tensor>& inputs)> derived_inputs = nullptr;
  std::function<std::vector<TensorSpec>(const Problem&)> outputs;
  // The float64 reference: one vector of doubles per output, row-major logical order.
  std::function<std::vector<std::vector<double>>(const Problem&, std::span<const Tensor>)> reference;
  std::function<std::vector<Problem>(const Op&)> check_cases;   // the correctness sweep
  std::function<std::vector<Problem>(const Op&)> report_cases;  // the default benchmark suite
  // The problems the report profiles each CUDA rung on in the simulator (`sim profile`): small
  // enough to simulate in a second, large enough to show the ladder's lesson. None: not profiled.
  std::function<std::vector<Problem>(const Op&)> profile_cases;
  // Largest acceptable error (see max_rel_err) for a problem, and how the error is normalised:
  // per row for row-wise ops, over the whole output where rows are not independent problems
  // (a gemm row of one element would turn a cancellation into a large relative error).
  std::function<double(const Problem&)> tolerance;
  // Where set, the op computed as a naive implementation in the input dtype would compute it (each
  // intermediate rounded to it), one vector per output: a variant may then err up to twice this
  // baseline's error plus the tolerance above as a rounding floor (FlashAttention's rule).
  std::function<std::vector<std::vector<double>>(const Problem&, std::span<const Tensor>)> dtype_baseline = nullptr;
  bool error_per_row = true;
  // An execution-model or memory-hierarchy experiment (exp_*): fp32 only, swept along the axis
  // it studies rather than over the operators' shape and dtype sweep; may have no CPU variant.
  bool experiment = false;
  std::vector<Variant> variants;

  const Variant* find_variant(std::string_view name) const;
};

const std::vector<Op>& registry();
const Op& find_op(std::string_view name);  // BadInput naming the op and the known ones
// `--rung FILE.cu`: the rungs of a user's rung file, from its builds' rung_user() (nvcc's, the
// simulator's, its profiling build's; those not built are null), added to the ladder of the op
// they declare. Returns them; BadInput when they declare an op that is not registered or take a
// name the op already has.
using RungFile = std::vector<Variant> (*)();
std::vector<Variant> add_user_rungs(RungFile cuda, RungFile sim, RungFile sim_profile, const std::string& file);

// A problem of `op` with its defaults, the given overrides, validated. BadInput on any bad value,
// and, when it is to run here (not only be costed), on tensors that cannot fit in host memory.
enum class Use { run, cost_only };
Problem make_problem(const Op& op, DType dtype, const std::map<std::string, int64_t>& dims = {},
                     const std::map<std::string, std::string>& opts = {}, Use use = Use::run,
                     const std::map<std::string, DType>& tensor_dtypes = {});

// Tolerance by dtype used by most ops: a few units of roundoff of the output format
// (fp32 results allow for a different summation order over up to ~10^4 terms).
double default_tolerance(DType t);

// Error of one output against its reference: the largest |y - r| in a row divided by the
// largest |r| of that row (a row is the last dimension), maximised over rows; with per_row
// false, the whole output is one row. Non-finite y where r is finite gives +inf; an infinite r
// must be matched exactly.
double max_rel_err(const Tensor& y, const std::vector<double>& ref, bool per_row = true);
// The same over values already read, rows of `row` values (0: one row).
double max_rel_err(const std::vector<double>& got, const std::vector<double>& ref, size_t row);

// "1,17,300" as {1, 17, 300}; empty when the text is not a list of positive integers.
std::vector<int64_t> parse_positive_list(std::string_view text);

// Reads a host tensor in logical row-major order as doubles (strides applied).
std::vector<double> to_doubles(const Tensor& t);

// A reference's outputs, each moved in: a braced list would copy them (a GiB each at 16384 x 8192).
template <class... V> std::vector<std::vector<double>> reference_outputs(V&&... v) {
  std::vector<std::vector<double>> out;
  out.reserve(sizeof...(v));
  (out.push_back(std::forward<V>(v)), ...);
  return out;
}

}  // namespace kl
