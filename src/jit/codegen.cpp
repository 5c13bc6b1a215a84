// The code generator of `kernelab fuse` (codegen.h): the DAG of expr.h printed as CUDA C++.
#include "jit/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

namespace kl::jit {
namespace {

// A number as the kernel's fp32 constant. One that rounds to an infinity or below float's normal
// range is written by its bits: NVRTC refuses a literal out of float's range (-1e39f), which the
// kernel would round to -inf anyway.
std::string literal(double v) {
  const float f = static_cast<float>(v);
  if (std::isinf(f) || (f != 0 && std::fabs(f) < FLT_MIN)) return fmt::format("__int_as_float({:#010x})", std::bit_cast<uint32_t>(f));
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

// A C++ name for a user's name: kept as written unless it could meet one of ours or a keyword.
std::string safe(const std::string& name) {
  static const std::set<std::string> reserved = {
      "r", "c", "i", "n", "T", "ld", "st", "rows", "cols", "staged", "stage", "row_off", "out", "block_sum", "block_max",
      "float", "int", "double", "char", "bool", "long", "short", "auto", "const", "for", "if", "else", "return", "void", "do",
      "while", "size_t", "new", "delete", "this", "true", "false", "class", "struct", "template", "typedef", "using",
      "namespace", "switch", "case", "default", "break", "continue", "static", "extern", "signed", "unsigned", "union",
      "volatile", "register", "sizeof", "operator", "public", "private", "protected", "virtual", "friend", "goto",
      "inline", "enum", "mutable", "try", "catch", "throw", "typename", "and", "or", "not", "xor", "half", "main", "run",
      // what the kernels call or read: a local of that name would hide it
      "expf", "logf", "sqrtf", "rsqrtf", "tanhf", "erff", "fmaxf", "fminf", "threadIdx", "blockIdx", "blockDim", "gridDim",
      "warpSize", "partial", "std", "printf", "assert", "nullptr", "NULL", "INFINITY", "NAN",
      // the fused kernel's 16-byte path
      "k", "c0", "vec", "V", "ld_vec", "st_vec", "ld_stage", "st_stage", "stage_swap", "float2", "float4", "uint4", "make_float4"};
  const bool ours = name.rfind("kl_", 0) == 0 || name.rfind("in_", 0) == 0 || name.rfind("out_", 0) == 0 ||
                    name.rfind("acc", 0) == 0 || name.rfind("__", 0) == 0 ||
                    (name.size() > 1 && name[0] == 't' && std::all_of(name.begin() + 1, name.end(), ::isdigit));
  return reserved.count(name) || ours ? "u_" + name : name;
}

std::string var(const Program& p, int id) {
  const Node& n = p.nodes[size_t(id)];
  if (n.op == OpCode::input) return safe(p.inputs[size_t(n.input)].name);
  if (!n.name.empty()) return safe(n.name);
  return fmt::format("t{}", id);
}

// The expression that defines node `id` from its arguments, each written by `ref`.
std::string definition(const Program& p, int id, const std::function<std::string(int)>& ref) {
  const Node& n = p.nodes[size_t(id)];
  std::vector<std::string> a;
  for (int x : n.args) a.push_back(ref(x));
  switch (n.op) {
    case OpCode::number: return literal(n.value);
    case OpCode::col_index: return "float(c)";
    case OpCode::row_index: return "float(r)";
    case OpCode::neg: return "-" + a[0];
    case OpCode::add: return a[0] + " + " + a[1];
    case OpCode::sub: return a[0] + " - " + a[1];
    case OpCode::mul: return a[0] + " * " + a[1];
    case OpCode::div: return a[0] + " / " + a[1];
    case OpCode::lt: return a[0] + " < " + a[1];
    case OpCode::le: return a[0] + " <= " + a[1];
    case OpCode::gt: return a[0] + " > " + a[1];
    case OpCode::ge: return a[0] + " >= " + a[1];
    case OpCode::eq: return a[0] + " == " + a[1];
    case OpCode::exp: return "expf(" + a[0] + ")";
    case OpCode::log: return "logf(" + a[0] + ")";
    case OpCode::sqrt: return "sqrtf(" + a[0] + ")";
    case OpCode::rsqrt: return "rsqrtf(" + a[0] + ")";
    case OpCode::tanh: return "tanhf(" + a[0] + ")";
    case OpCode::erf: return "erff(" + a[0] + ")";
    case OpCode::sigmoid: return "kl_sigmoid(" + a[0] + ")";
    case OpCode::relu: return "fmaxf(" + a[0] + ", 0.0f)";
    case OpCode::gelu: return "kl_gelu(" + a[0] + ")";
    case OpCode::silu: return "kl_silu(" + a[0] + ")";
    case OpCode::max: return "fmaxf(" + a[0] + ", " + a[1] + ")";
    case OpCode::min: return "fminf(" + a[0] + ", " + a[1] + ")";
    case OpCode::where: return a[0] + " ? " + a[1] + " : " + a[2];
    case OpCode::copy: return a[0];
    default: return "/* unreachable */ 0.0f";
  }
}

// A scalar node (numbers only) written inline, parenthesised.
std::string scalar_inline(const Program& p, int id) {
  const Node& n = p.nodes[size_t(id)];
  if (n.op == OpCode::number) return literal(n.value);
  return fmt::format("({})", definition(p, id, [&](int a) { return scalar_inline(p, a); }));
}

std::string statement_comment(const Program& p, int id) {
  const Node& n = p.nodes[size_t(id)];
  std::string args;
  for (int a : n.args) {
    const Node& x = p.nodes[size_t(a)];
    const std::string shown = x.kind == Kind::scalar ? scalar_inline(p, a) : x.op == OpCode::col_index || x.op == OpCode::row_index ? op_name(x.op) : var(p, a);
    args += (args.empty() ? "" : ", ") + shown;
  }
  return fmt::format("{} = {}({})", var(p, id), op_name(n.op), args);
}

std::string prelude(FuseDType t, const std::string& expr) {
  std::string s = fmt::format(
      "// Generated by `kernelab fuse` from:\n//   {}\n// dtype {}: tensors stored as {}, arithmetic in fp32.\n"
      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\n",
      expr, fuse_dtype_name(t), fuse_dtype_ctype(t));
  return s;
}

std::string helpers(FuseDType t) {
  std::string s = fmt::format("typedef {} T;  // the tensors' dtype\n\n", fuse_dtype_ctype(t));
  switch (t) {
    case FuseDType::fp32:
      s += "__device__ __forceinline__ float ld(const float* p) { return *p; }\n"
           "__device__ __forceinline__ void st(float* p, float v) { *p = v; }\n"
           "constexpr int V = 4;  // elements in 16 bytes\n"
           "__device__ __forceinline__ void ld_vec(const float* p, float* v) {\n"
           "  const float4 q = *reinterpret_cast<const float4*>(p);\n"
           "  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;\n}\n"
           "__device__ __forceinline__ void st_vec(float* p, const float* v) { *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]); }\n";
      break;
    case FuseDType::fp16:
      s += "__device__ __forceinline__ float ld(const __half* p) { return __half2float(*p); }\n"
           "__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }\n"
           "constexpr int V = 8;  // elements in 16 bytes\n"
           "__device__ __forceinline__ void ld_vec(const __half* p, float* v) {\n"
           "  const uint4 q = *reinterpret_cast<const uint4*>(p);\n"
           "  const __half2* h = reinterpret_cast<const __half2*>(&q);\n"
           "  for (int i = 0; i < 4; ++i) { const float2 f = __half22float2(h[i]); v[2 * i] = f.x, v[2 * i + 1] = f.y; }\n}\n"
           "__device__ __forceinline__ void st_vec(__half* p, const float* v) {\n"
           "  uint4 q;\n  __half2* h = reinterpret_cast<__half2*>(&q);\n"
           "  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);\n"
           "  *reinterpret_cast<uint4*>(p) = q;\n}\n";
      break;
    case FuseDType::bf16:
      s += "__device__ __forceinline__ float ld(const __nv_bfloat16* p) { return __bfloat162float(*p); }\n"
           "__device__ __forceinline__ void st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }\n"
           "constexpr int V = 8;  // elements in 16 bytes\n"
           "__device__ __forceinline__ void ld_vec(const __nv_bfloat16* p, float* v) {\n"
           "  const uint4 q = *reinterpret_cast<const uint4*>(p);\n"
           "  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&q);\n"
           "  for (int i = 0; i < 4; ++i) { const float2 f = __bfloat1622float2(h[i]); v[2 * i] = f.x, v[2 * i + 1] = f.y; }\n}\n"
           "__device__ __forceinline__ void st_vec(__nv_bfloat16* p, const float* v) {\n"
           "  uint4 q;\n  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&q);\n"
           "  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);\n"
           "  *reinterpret_cast<uint4*>(p) = q;\n}\n";
      break;
  }
  s += R"(// A staged input's V floats (V a multiple of 4) at column c0, by 16-byte shared-memory accesses.
// With V = 8 (16-bit dtypes) a lane's two float4 halves swap places in every other group of 4
// lanes: the 8 lanes of a 16-byte access's phase then cover all 32 banks, where in place lanes 4
// apart would share 4 banks (a 2-way conflict on every stage store and load).
__device__ __forceinline__ int stage_swap(int c0) { return V == 8 ? (c0 / V >> 2 & 1) * 4 : 0; }
__device__ __forceinline__ void st_stage(float* s, int c0, const float* v) {
  const int swap = stage_swap(c0);
  for (int i = 0; i < V; i += 4) *reinterpret_cast<float4*>(s + (i ^ swap)) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
}
__device__ __forceinline__ void ld_stage(const float* s, int c0, float* v) {
  const int swap = stage_swap(c0);
  for (int i = 0; i < V; i += 4) {
    const float4 q = *reinterpret_cast<const float4*>(s + (i ^ swap));
    v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
  }
}
__device__ __forceinline__ float kl_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float kl_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float kl_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }  // erf form

// Over the block (blockDim.x a multiple of 32): each warp by shuffles, then the warps'
// partials through shared memory; every thread returns the result.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // the previous call's readers are done with partial[]
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x % 32 < blockDim.x / 32 ? partial[threadIdx.x % 32] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float block_max(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x % 32 < blockDim.x / 32 ? partial[threadIdx.x % 32] : __int_as_float(0xff800000);  // -inf
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The online softmax's step: m the running max, s the running sum of exp(x - m), rescaled when
// the max grows; one exp per element. A -inf x adds nothing (not exp(-inf - -inf), a NaN).
__device__ __forceinline__ void kl_online(float x, float& m, float& s) {
  if (x > m) {
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else if (x != __int_as_float(0xff800000)) {
    s += expf(x - m);
  }
}
// A thread's running sum rescaled to the row's max (0 from a thread that saw no finite value).
__device__ __forceinline__ float kl_rescaled(float s, float m, float row_max) {
  return m == __int_as_float(0xff800000) ? 0.0f : s * expf(m - row_max);
}

)";
  return s;
}

std::string reduction_init(OpCode op) { return op == OpCode::rowmax ? "__int_as_float(0xff800000)" : "0.0f"; }
std::string reduction_step(OpCode op, const std::string& acc, const std::string& x) {
  return op == OpCode::rowmax ? acc + " = fmaxf(" + acc + ", " + x + ");" : acc + " += " + x + ";";
}
std::string reduction_result(OpCode op, const std::string& acc) {
  if (op == OpCode::rowmax) return "block_max(" + acc + ")";
  if (op == OpCode::rowmean) return "block_sum(" + acc + ") / float(cols)";
  return "block_sum(" + acc + ")";
}

// The nodes `targets` need, reductions and leaves included but not looked through.
std::set<int> needed(const Program& p, const std::vector<int>& targets) {
  std::set<int> seen;
  std::vector<int> stack(targets);
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    if (is_reduction(p.nodes[size_t(id)].op)) continue;
    for (int a : p.nodes[size_t(id)].args) stack.push_back(a);
  }
  return seen;
}

// What pass `pass` of the fused kernel evaluates per column: the arguments of its reductions (a
// folded online sum has none of its own: it is taken from its max's argument), or in the last
// pass the outputs.
std::vector<int> pass_targets(const Program& p, int pass) {
  std::vector<int> t;
  for (std::size_t id = 0; id < p.nodes.size(); ++id)
    if (pass <= p.levels && is_reduction(p.nodes[id].op) && p.nodes[id].level == pass && p.nodes[id].online_max < 0)
      t.push_back(p.nodes[id].args[0]);
  if (pass == p.levels + 1)
    for (const Tensor& o : p.outputs)
      if (o.kind != Kind::row) t.push_back(o.node);
  return t;
}

// The online sum folded into reduction `max_id` (a rowmax) in its pass, or -1.
int online_sum_of(const Program& p, int max_id) {
  for (std::size_t id = 0; id < p.nodes.size(); ++id)
    if (p.nodes[id].online_max == max_id) return int(id);
  return -1;
}

std::string fused_kernel(const Program& p) {
  std::string s;
  std::map<int, std::set<int>> passes_of_input;
  const int passes = p.levels + 1;
  auto targets_of = [&](int pass) { return pass_targets(p, pass); };
  for (int pass = 1; pass <= passes; ++pass)
    for (int id : needed(p, targets_of(pass)))
      if (p.nodes[size_t(id)].op == OpCode::input && p.nodes[size_t(id)].kind == Kind::full) passes_of_input[p.nodes[size_t(id)].input].insert(pass);
  std::map<int, int> slot;  // input -> its row in stage[]
  for (const auto& [input, used] : passes_of_input)
    if (used.size() > 1) slot[input] = int(slot.size());

  std::string params;
  for (const Tensor& in : p.inputs) params += fmt::format("const T* __restrict__ in_{}, ", in.name);
  for (const Tensor& out : p.outputs) params += fmt::format("T* __restrict__ out_{}, ", out.name);
  s += "// One block per row; the row in a loop over columns, once per reduction level.\n";
  s += fmt::format("__global__ void {}({}int rows, int cols, int staged, int vec) {{\n", kFusedKernel, params);
  s += "  extern __shared__ float stage[];  // (staged inputs, cols) fp32, when `staged`\n";
  s += "  const int r = blockIdx.x;\n  const size_t row_off = size_t(r) * cols;\n";
  s += "  (void)rows, (void)row_off, (void)stage, (void)staged, (void)vec;\n";
  std::set<int> declared;  // row-level values at function scope
  auto ref = [&](int id) -> std::string {
    const Node& n = p.nodes[size_t(id)];
    if (n.kind == Kind::scalar) return scalar_inline(p, id);
    if (n.op == OpCode::col_index) return "float(c)";
    if (n.op == OpCode::row_index) return "float(r)";
    return var(p, id);
  };
  auto declare_row_values = [&](const std::set<int>& need, const std::string& indent) {
    for (int id : need) {
      const Node& n = p.nodes[size_t(id)];
      if (n.kind != Kind::row || is_leaf(n.op) || is_reduction(n.op) || declared.count(id)) continue;
      s += fmt::format("{}const {} {} = {};\n", indent, n.boolean ? "bool" : "float", var(p, id), definition(p, id, ref));
      declared.insert(id);
    }
  };
  for (int pass = 1; pass <= passes; ++pass) {
    const std::vector<int> targets = targets_of(pass);
    if (targets.empty()) continue;
    const std::set<int> need = needed(p, targets);
    std::vector<int> reds;
    for (std::size_t id = 0; id < p.nodes.size(); ++id)
      if (pass <= p.levels && is_reduction(p.nodes[id].op) && p.nodes[id].level == pass) reds.push_back(int(id));
    s += pass <= p.levels ? fmt::format("\n  // pass {}: the reductions of level {}\n", pass, pass) : "\n  // last pass: the outputs\n";
    declare_row_values(need, "  ");
    for (int id : reds)
      s += fmt::format("  float acc{} = {};  // {}{}\n", id, reduction_init(p.nodes[size_t(id)].op), statement_comment(p, id),
                       p.nodes[size_t(id)].online_max < 0 ? "" : ", online: beside " + var(p, p.nodes[size_t(id)].online_max));
    // The column loop twice: 16-byte loads and stores of V columns per thread and step where every
    // row starts 16-byte aligned (`vec`), else one column at a time.
    auto column_loop = [&](bool vectorized) {
      auto vec_name = [](const char* kind, int i) { return fmt::format("kl_{}{}", kind, i); };
      if (vectorized) s += "    for (int c0 = threadIdx.x * V; c0 < cols; c0 += blockDim.x * V) {\n";
      else s += "    for (int c = threadIdx.x; c < cols; c += blockDim.x) {\n";
      if (vectorized) {
        for (int id : need) {
          const Node& n = p.nodes[size_t(id)];
          if (n.op != OpCode::input) continue;
          const std::string ptr = "in_" + p.inputs[size_t(n.input)].name;
          const std::string at = n.kind == Kind::col ? "c0" : "row_off + c0";
          const std::string v = vec_name("v", id);
          s += fmt::format("      float {}[V];\n", v);
          if (!slot.count(n.input)) {
            s += fmt::format("      ld_vec(&{}[{}], {});\n", ptr, at, v);
          } else if (*passes_of_input[n.input].begin() == pass) {  // 16-byte shared stores, swizzled: no bank conflict
            s += fmt::format("      ld_vec(&{}[{}], {});\n", ptr, at, v);
            s += fmt::format("      if (staged) st_stage(&stage[{} * cols + c0], c0, {});  // a later pass reads it here\n", slot[n.input], v);
          } else {
            s += fmt::format("      if (staged) ld_stage(&stage[{} * cols + c0], c0, {});\n      else ld_vec(&{}[{}], {});\n", slot[n.input],
                             v, ptr, at, v);
          }
        }
        if (pass == passes)
          for (std::size_t i = 0; i < p.outputs.size(); ++i)
            if (p.outputs[i].kind != Kind::row) s += fmt::format("      float {}[V];\n", vec_name("o", int(i)));
        s += "#pragma unroll\n      for (int k = 0; k < V; ++k) {\n        const int c = c0 + k;\n        (void)c;\n";
      }
      const std::string ind = vectorized ? "        " : "      ";
      for (int id : need) {
        const Node& n = p.nodes[size_t(id)];
        if (n.op != OpCode::input) continue;
        const std::string name = var(p, id), ptr = "in_" + p.inputs[size_t(n.input)].name;
        if (vectorized) {  // loaded, and staged, above
          s += fmt::format("{}const float {} = {}[k];\n", ind, name, vec_name("v", id));
          continue;
        }
        const std::string global = n.kind == Kind::col ? fmt::format("ld(&{}[c])", ptr) : fmt::format("ld(&{}[row_off + c])", ptr);
        if (n.kind == Kind::col || !slot.count(n.input)) {
          s += fmt::format("{}const float {} = {};\n", ind, name, global);
        } else if (*passes_of_input[n.input].begin() == pass) {
          s += fmt::format("{}const float {} = {};\n", ind, name, global);
          s += fmt::format("{}if (staged) stage[{} * cols + c] = {};  // a later pass reads it here\n", ind, slot[n.input], name);
        } else {
          s += fmt::format("{}const float {} = staged ? stage[{} * cols + c] : {};\n", ind, name, slot[n.input], global);
        }
      }
      for (int id : need) {
        const Node& n = p.nodes[size_t(id)];
        if (is_leaf(n.op) || is_reduction(n.op) || n.kind == Kind::row || n.kind == Kind::scalar) continue;
        s += fmt::format("{}const {} {} = {};\n", ind, n.boolean ? "bool" : "float", var(p, id), definition(p, id, ref));
      }
      for (int id : reds) {
        const Node& n = p.nodes[size_t(id)];
        const std::string x = ref(n.args[0]), acc = "acc" + std::to_string(id);
        if (n.online_max >= 0) continue;  // with its max
        if (const int sum = online_sum_of(p, id); sum >= 0) s += fmt::format("{}kl_online({}, {}, acc{});\n", ind, x, acc, sum);
        else s += ind + reduction_step(n.op, acc, x) + "\n";
      }
      if (pass == passes)
        for (std::size_t i = 0; i < p.outputs.size(); ++i) {
          const Tensor& o = p.outputs[i];
          if (o.kind == Kind::row) continue;
          if (vectorized) s += fmt::format("{}{}[k] = {};\n", ind, vec_name("o", int(i)), ref(o.node));
          else if (o.kind == Kind::full) s += fmt::format("{}st(&out_{}[row_off + c], {});\n", ind, o.name, ref(o.node));
          else s += fmt::format("{}if (r == 0) st(&out_{}[c], {});\n", ind, o.name, ref(o.node));
        }
      if (vectorized) {
        s += "      }\n";
        if (pass == passes)
          for (std::size_t i = 0; i < p.outputs.size(); ++i) {
            const Tensor& o = p.outputs[i];
            if (o.kind == Kind::full) s += fmt::format("      st_vec(&out_{}[row_off + c0], {});\n", o.name, vec_name("o", int(i)));
            if (o.kind == Kind::col) s += fmt::format("      if (r == 0) st_vec(&out_{}[c0], {});\n", o.name, vec_name("o", int(i)));
          }
      }
      s += "    }\n";
    };
    s += "  if (vec) {\n";
    column_loop(true);
    s += "  } else {\n";
    column_loop(false);
    s += "  }\n";
    for (int id : reds) {
      const Node& n = p.nodes[size_t(id)];
      const std::string result = n.online_max < 0 ? reduction_result(n.op, "acc" + std::to_string(id))
                                                  // each thread's sum rescaled to the row's max (the max's result, declared just above)
                                                  : fmt::format("block_sum(kl_rescaled(acc{}, acc{}, {}))", id, n.online_max, var(p, n.online_max));
      s += fmt::format("  const float {} = {};\n", var(p, id), result);
    }
  }
  bool row_outputs = false;
  for (const Tensor& o : p.outputs) row_outputs |= o.kind == Kind::row;
  if (row_outputs) {
    std::vector<int> t;
    for (const Tensor& o : p.outputs)
      if (o.kind == Kind::row) t.push_back(o.node);
    s += "\n  // the per-row outputs\n";
    declare_row_values(needed(p, t), "  ");
    for (const Tensor& o : p.outputs)
      if (o.kind == Kind::row) s += fmt::format("  if (threadIdx.x == 0) st(&out_{}[r], {});\n", o.name, ref(o.node));
  }
  s += "}\n";
  return s;
}

// The steps of the unfused chain: every node that is not a leaf or a number's arithmetic.
std::vector<int> steps(const Program& p) {
  std::vector<int> out;
  for (std::size_t id = 0; id < p.nodes.size(); ++id)
    if (!is_leaf(p.nodes[id].op) && p.nodes[id].kind != Kind::scalar) out.push_back(int(id));
  return out;
}
bool buffered(const Program& p, int id) {
  const Node& n = p.nodes[size_t(id)];
  return n.op == OpCode::input || (!is_leaf(n.op) && n.kind != Kind::scalar);
}
// A step's operands that live in buffers, each once (x * x reads x once).
std::set<int> buffered_operands(const Program& p, const Node& n) {
  std::set<int> out;
  for (int a : n.args)
    if (buffered(p, a)) out.insert(a);
  return out;
}
std::string buffer_name(const Program& p, int id) {
  const Node& n = p.nodes[size_t(id)];
  return n.op == OpCode::input ? "in_" + p.inputs[size_t(n.input)].name : "buf_" + var(p, id);
}
std::string index_of(Kind k) {
  switch (k) {
    case Kind::row: return "r";
    case Kind::col: return "c";
    default: return "size_t(r) * cols + c";
  }
}

std::string unfused_kernels(const Program& p) {
  std::string s;
  for (int id : steps(p)) {
    const Node& n = p.nodes[size_t(id)];
    const std::set<int> operands = buffered_operands(p, n);
    std::string params;
    for (int a : operands) params += fmt::format("const T* __restrict__ {}, ", buffer_name(p, a));
    auto ref = [&](int a) -> std::string {
      const Node& x = p.nodes[size_t(a)];
      if (buffered(p, a)) {
        const std::string load = fmt::format("ld(&{}[{}])", buffer_name(p, a), index_of(x.kind));
        return x.boolean ? "(" + load + " != 0.0f)" : load;
      }
      if (x.kind == Kind::scalar) return scalar_inline(p, a);
      return x.op == OpCode::col_index ? "float(c)" : "float(r)";
    };
    s += fmt::format("// step {}: {}  ({})\n", id, statement_comment(p, id), kind_name(n.kind));
    s += fmt::format("__global__ void kl_step{}({}T* __restrict__ out, int rows, int cols) {{\n", id, params);
    if (is_reduction(n.op)) {
      s += "  const int r = blockIdx.x;\n";
      s += fmt::format("  float acc = {};\n", reduction_init(n.op));
      s += "  for (int c = threadIdx.x; c < cols; c += blockDim.x) " + reduction_step(n.op, "acc", ref(n.args[0])) + "\n";
      s += fmt::format("  const float v = {};\n  if (threadIdx.x == 0) st(&out[r], v);\n}}\n\n", reduction_result(n.op, "acc"));
      continue;
    }
    const std::string count = n.kind == Kind::full ? "(long long)rows * cols" : n.kind == Kind::row ? "rows" : "cols";
    s += fmt::format("  const long long n = {};\n", count);
    s += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n";
    if (n.kind == Kind::full) s += "    const int r = int(i / cols), c = int(i % cols);\n";
    if (n.kind == Kind::row) s += "    const int r = int(i), c = 0;\n";
    if (n.kind == Kind::col) s += "    const int r = 0, c = int(i);\n";
    s += "    (void)r, (void)c;\n";
    const std::string value = definition(p, id, ref);
    s += n.boolean ? fmt::format("    st(&out[i], ({}) ? 1.0f : 0.0f);\n", value) : fmt::format("    st(&out[i], {});\n", value);
    s += "  }\n}\n\n";
  }
  return s;
}

// The host side of one dtype in the simulator program: allocate, copy, poison, launch, read back.
std::string host_run(const Program& p) {
  std::string s = "int run(bool fused, int rows, int cols, const char* kl_in_path, const char* kl_out_path) {\n";
  s += "  std::vector<char> host = read_all(kl_in_path);\n  size_t at = 0;\n";
  s += "  const int threads = kl_block_threads(cols);\n";
  for (const Tensor& in : p.inputs) {
    s += fmt::format("  const size_t n_{0} = {1};\n  T* in_{0} = nullptr;\n  CHECK(cudaMalloc(&in_{0}, n_{0} * sizeof(T)));\n", in.name,
                     in.kind == Kind::col ? "size_t(cols)" : "size_t(rows) * cols");
    s += fmt::format("  if (at + n_{0} * sizeof(T) > host.size()) {{ std::fprintf(stderr, \"inputs too short\\n\"); return 2; }}\n", in.name);
    s += fmt::format("  CHECK(cudaMemcpy(in_{0}, host.data() + at, n_{0} * sizeof(T), cudaMemcpyHostToDevice));\n  at += n_{0} * sizeof(T);\n", in.name);
  }
  auto count = [](Kind k) { return k == Kind::row ? "size_t(rows)" : k == Kind::col ? "size_t(cols)" : "size_t(rows) * cols"; };
  s += "  std::vector<std::pair<T*, size_t>> outputs;\n";
  s += "  if (fused) {\n";
  std::string args;
  for (const Tensor& in : p.inputs) args += "in_" + in.name + ", ";
  for (const Tensor& o : p.outputs) {
    s += fmt::format("    T* out_{0} = nullptr;\n    CHECK(cudaMalloc(&out_{0}, {1} * sizeof(T)));\n    CHECK(cudaMemset(out_{0}, 0xFF, {1} * sizeof(T)));\n",
                     o.name, count(o.kind));
    s += fmt::format("    outputs.push_back({{out_{}, {}}});\n", o.name, count(o.kind));
    args += "out_" + o.name + ", ";
  }
  s += fmt::format("    const size_t stage_bytes = size_t({}) * cols * sizeof(float);\n", fused_stage_floats(p));
  s += "    const int staged = stage_bytes <= 48 * 1024;  // else a later pass reads its input again\n";
  s += "    const int vec = cols % V == 0;  // cudaMalloc's pointers are 256-byte aligned: every row starts 16-byte aligned\n";
  s += fmt::format("    {}<<<rows, threads, staged ? stage_bytes : 0>>>({}rows, cols, staged, vec);\n", kFusedKernel, args);
  s += "    CHECK(cudaGetLastError());\n  } else {\n";
  const std::vector<UnfusedStep> chain = unfused_steps(p);
  for (const UnfusedStep& step : chain)
    s += fmt::format("    T* {0} = nullptr;\n    CHECK(cudaMalloc(&{0}, {1} * sizeof(T)));\n    CHECK(cudaMemset({0}, 0xFF, {1} * sizeof(T)));\n",
                     buffer_name(p, step.node), count(p.nodes[size_t(step.node)].kind));
  for (const UnfusedStep& step : chain) {
    std::string a;
    for (int o : step.operands) a += buffer_name(p, o) + ", ";
    const std::string grid = step.reduction ? "rows" : fmt::format("kl_grid({})", count(p.nodes[size_t(step.node)].kind));
    const std::string block = step.reduction ? "threads" : "256";
    s += fmt::format("    kl_step{}<<<{}, {}>>>({}{}, rows, cols);\n    CHECK(cudaGetLastError());\n", step.node, grid, block, a,
                     buffer_name(p, step.node));
  }
  for (const Tensor& o : p.outputs) s += fmt::format("    outputs.push_back({{{}, {}}});\n", buffer_name(p, o.node), count(o.kind));
  s += "  }\n  CHECK(cudaDeviceSynchronize());\n";
  s += "  std::vector<char> result;\n  for (const auto& [ptr, n] : outputs) {\n    const size_t base = result.size();\n"
       "    result.resize(base + n * sizeof(T));\n    CHECK(cudaMemcpy(result.data() + base, ptr, n * sizeof(T), cudaMemcpyDeviceToHost));\n  }\n";
  s += "  return write_all(kl_out_path, result);\n}\n";
  return s;
}

}  // namespace

std::vector<UnfusedStep> unfused_steps(const Program& p) {
  std::vector<UnfusedStep> out;
  for (int id : steps(p)) {
    const Node& n = p.nodes[size_t(id)];
    const std::set<int> operands = buffered_operands(p, n);
    out.push_back({id, std::vector<int>(operands.begin(), operands.end()), is_reduction(n.op)});
  }
  return out;
}

const char* fuse_dtype_name(FuseDType t) { return t == FuseDType::fp32 ? "fp32" : t == FuseDType::fp16 ? "fp16" : "bf16"; }
const char* fuse_dtype_ctype(FuseDType t) { return t == FuseDType::fp32 ? "float" : t == FuseDType::fp16 ? "__half" : "__nv_bfloat16"; }
double fuse_tolerance(FuseDType t) { return t == FuseDType::fp32 ? 1e-5 : t == FuseDType::fp16 ? 2e-3 : 2e-2; }
int fuse_dtype_bytes(FuseDType t) { return t == FuseDType::fp32 ? 4 : 2; }

int block_threads(int64_t cols) { return int(std::clamp<int64_t>((cols + 31) / 32 * 32, 32, 256)); }

int64_t fused_stage_floats(const Program& p) {
  // As fused_kernel decides: a full input needed by more than one pass.
  std::map<int, std::set<int>> passes_of_input;
  for (int pass = 1; pass <= p.levels + 1; ++pass) {
    for (int id : needed(p, pass_targets(p, pass)))
      if (p.nodes[size_t(id)].op == OpCode::input && p.nodes[size_t(id)].kind == Kind::full) passes_of_input[p.nodes[size_t(id)].input].insert(pass);
  }
  int64_t n = 0;
  for (const auto& [_, used] : passes_of_input) n += used.size() > 1;
  return n;
}

std::string fused_source(const Program& p, FuseDType t) { return prelude(t, p.text) + helpers(t) + fused_kernel(p); }

std::string unfused_source(const Program& p, FuseDType t) {
  return prelude(t, p.text) + "// The unfused chain: one kernel per step, every intermediate stored in the dtype.\n" + helpers(t) + unfused_kernels(p);
}

std::string simulator_program(const Program& p) {
  std::string s = "// Generated by `kernelab fuse` for the simulator: both schedules, every dtype, the shape at run time.\n";
  s += fmt::format("// expression: {}\n", p.text);
  s += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <algorithm>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <string>\n#include <vector>\n\n";
  s += R"(#define CHECK(call) do { const cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); return 1; } } while (0)

static std::vector<char> read_all(const char* path) {
  std::vector<char> v;
  if (FILE* f = std::fopen(path, "rb")) {
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) v.insert(v.end(), buf, buf + n);
    std::fclose(f);
  }
  return v;
}
static int write_all(const char* path, const std::vector<char>& v) {
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(v.data(), 1, v.size(), f) != v.size()) { std::fprintf(stderr, "cannot write %s\n", path); return 1; }
  return std::fclose(f) == 0 ? 0 : 1;
}
static int kl_grid(size_t n) { return int(std::min<size_t>((n + 255) / 256, 64)); }  // grid-stride loops beyond
)";
  s += fmt::format("static int kl_block_threads(int cols) {{ return std::max(32, std::min(256, (cols + 31) / 32 * 32)); }}\n\n");
  for (FuseDType t : {FuseDType::fp32, FuseDType::fp16, FuseDType::bf16}) {
    s += fmt::format("namespace kl_{} {{\n", fuse_dtype_name(t));
    s += helpers(t) + fused_kernel(p) + "\n" + unfused_kernels(p) + host_run(p);
    s += fmt::format("}}  // namespace kl_{}\n\n", fuse_dtype_name(t));
  }
  s += R"(int main(int argc, char** argv) {
  if (argc != 7) { std::fprintf(stderr, "usage: %s fp32|fp16|bf16 fused|unfused ROWS COLS INPUTS.bin OUTPUTS.bin\n", argv[0]); return 2; }
  const std::string dtype = argv[1];
  const bool fused = std::string(argv[2]) == "fused";
  const int rows = std::atoi(argv[3]), cols = std::atoi(argv[4]);
  if (rows < 1 || cols < 1) { std::fprintf(stderr, "bad shape\n"); return 2; }
  if (dtype == "fp32") return kl_fp32::run(fused, rows, cols, argv[5], argv[6]);
  if (dtype == "fp16") return kl_fp16::run(fused, rows, cols, argv[5], argv[6]);
  if (dtype == "bf16") return kl_bf16::run(fused, rows, cols, argv[5], argv[6]);
  std::fprintf(stderr, "unknown dtype %s\n", argv[1]);
  return 2;
}
)";
  return s;
}

}  // namespace kl::jit
