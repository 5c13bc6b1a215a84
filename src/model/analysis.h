// The analytic tools' table of ops: what `roofline` and `explain` accept (shape options, switches),
// how each op's FLOPs and bytes are counted and which ceilings bound it. The registry ops come in
// with their own cost model (make_problem + op.cost); attention, the collectives and the quantized
// gemm forms use the models of cost.h.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "hw/specs.h"
#include "kernelab/op.h"
#include "model/cost.h"
#include "model/roofline.h"

namespace kl::model {

// What the user asked for: only the options given (the op's defaults fill the rest).
struct Request {
  std::string op, gpu, dtype = "bf16";
  bool measured = false;                 // measured ceilings where the database has them
  std::map<std::string, int64_t> dims;   // shape options by name, e.g. "kv_heads"
  std::set<std::string> switches;        // boolean options given, e.g. "causal"

  int64_t dim(const std::string& name, int64_t fallback) const;
  bool has(const std::string& name) const { return switches.count(name) > 0; }
};

struct Analysis {
  std::string op, gpu, gpu_name, dtype, shape;
  std::string counting;      // the convention behind flops and bytes, in words
  Figure peak, bandwidth;    // the two ceilings, each with its source
  std::string bandwidth_kind;  // what the bytes move over: "memory" (HBM/GDDR), "nvlink" or "pcie"
  bool measured = false;
  Roofline roof;
  nlohmann::json extra = nlohmann::json::object();  // op-specific fields for --json
};

struct SwitchSpec {
  std::string name, help;
};

struct AnalyticOp {
  std::string name, summary;
  std::vector<DimSpec> dims;  // shape options with their defaults
  std::vector<SwitchSpec> switches;
  std::function<Analysis(const Request&, const Format&, const GpuSpec&)> analyze;
  std::function<std::string(const Request&, const Analysis&)> story;  // explain's text after the header
};

const std::vector<AnalyticOp>& analytic_ops();
const AnalyticOp& find_analytic_op(std::string_view name);  // BadInput naming the known ones

// The op's FLOPs and bytes on the GPU's ceilings. BadInput for an unknown op, GPU or dtype, an
// option the op does not take, a non-positive dimension, or a shape the op's model refuses.
Analysis analyze(const Request& req);

// The shapes of the model ops, defaults filled in (shared by analyze and explain).
GemmShape gemm_shape(const Request& req);
AttentionShape attention_shape(const Request& req);  // kv-heads defaults to heads, seq-kv to seq-q

// The same request's roofline for another cost on the analysis' ceilings.
Roofline reroof(const Analysis& a, const Cost& c);

}  // namespace kl::model
