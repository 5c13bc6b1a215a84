// `kernelab fuse`: the expression language of elementwise and row-reduction chains, parsed
// into one DAG (equal subexpressions are one node), its float64 evaluation (the reference)
// and its bytes model. The code generator (codegen.h) turns the same DAG into CUDA.
//
//   program  := stmt (';' stmt)* [';']          stmt := NAME '=' expr
//   expr     := sum [('<'|'<='|'>'|'>='|'==') sum]  (a comparison: only where()'s condition)
//   sum      := prod (('+'|'-') prod)*          prod := unary (('*'|'/') unary)*
//   unary    := '-' unary | NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
//
// Names: `col` and `row` are the element's indices; a name assigned and never used later is
// an output; any other unassigned name is an input, a (rows, cols) tensor or, when listed in
// --vector, a row vector of length cols broadcast over the rows. Errors throw kl::BadInput
// naming the column (1-based) in the expression.
#pragma once
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kl {
class Rng;
}

namespace kl::jit {

// What a value varies over: nothing (a number), the row only (a reduction's result, `row`),
// the column only (a row vector, `col`), or both.
enum class Kind : uint8_t { scalar, row, col, full };

enum class OpCode : uint8_t {
  input, number, col_index, row_index,
  neg, add, sub, mul, div,
  lt, le, gt, ge, eq,                      // comparisons: booleans, only where()'s first argument
  exp, log, sqrt, rsqrt, tanh, erf, sigmoid, relu, gelu, silu,
  max, min, where,
  rowsum, rowmax, rowmean,
  copy,                                    // an output that is an input or a number as written
};

struct Node {
  Node(OpCode o, std::vector<int> a = {}, double v = 0, int in = -1) : op(o), args(std::move(a)), value(v), input(in) {}
  OpCode op;
  std::vector<int> args;  // node ids, all smaller than this node's
  double value = 0;       // number
  int input = -1;         // input: index into Program::inputs
  Kind kind = Kind::scalar;
  bool boolean = false;   // a comparison
  int level = 0;          // reductions on the longest path to an input: a reduction of level L is pass L of the fused kernel
  int online_max = -1;    // rowsum(exp(a - m)) with m = rowmax(a): m's id; the sum is taken in m's pass (online softmax)
  std::string name;       // the statement's name when this node is a statement's value (for readable code)
  int pos = 0;            // column in the expression where it was written (for messages)
};

struct Tensor {
  std::string name;
  Kind kind;  // full or col (a --vector) for inputs; any but scalar for outputs
  int node = -1;
};

struct Program {
  std::string text;
  std::vector<Node> nodes;      // topological: arguments first
  std::vector<Tensor> inputs;   // in order of first use
  std::vector<Tensor> outputs;  // in order of assignment
  int levels = 0;               // the deepest reduction level (0: elementwise only)
};

bool is_reduction(OpCode op);
bool is_leaf(OpCode op);            // input, number, col, row: no kernel of their own
const char* op_name(OpCode op);     // as written ("rowsum", "+", "where", ...)
const char* kind_name(Kind k);      // "scalar", "row", "col", "full"
bool is_function_name(const std::string& name);

// Parses and checks `text`. `vectors` names the inputs that are row vectors (an unknown name
// there is BadInput).
Program parse(const std::string& text, const std::set<std::string>& vectors);

// An elementwise node's value from its arguments' (a comparison gives 1 or 0, where's condition is
// nonzero for true), in the float64 reference and the CPU interpreter alike; NaN for a leaf or a
// reduction, which no elementwise step computes.
template <class F> F apply_op(OpCode op, F a, F b, F c) {
  switch (op) {
    case OpCode::neg: return -a;
    case OpCode::add: return a + b;
    case OpCode::sub: return a - b;
    case OpCode::mul: return a * b;
    case OpCode::div: return a / b;
    case OpCode::lt: return a < b;
    case OpCode::le: return a <= b;
    case OpCode::gt: return a > b;
    case OpCode::ge: return a >= b;
    case OpCode::eq: return a == b;
    case OpCode::exp: return std::exp(a);
    case OpCode::log: return std::log(a);
    case OpCode::sqrt: return std::sqrt(a);
    case OpCode::rsqrt: return F(1) / std::sqrt(a);
    case OpCode::tanh: return std::tanh(a);
    case OpCode::erf: return std::erf(a);
    case OpCode::sigmoid: return F(1) / (F(1) + std::exp(-a));
    case OpCode::relu: return a > 0 ? a : F(0);
    case OpCode::gelu: return F(0.5) * a * (F(1) + std::erf(a * F(0.70710678118654752)));  // the erf form (PyTorch's default)
    case OpCode::silu: return a / (F(1) + std::exp(-a));
    case OpCode::max: return std::fmax(a, b);
    case OpCode::min: return std::fmin(a, b);
    case OpCode::where: return a != 0 ? b : c;
    case OpCode::copy: return a;
    default: return F(NAN);
  }
}

// Elements of a value of kind k in a (rows, cols) problem.
int64_t elements(Kind k, int64_t rows, int64_t cols);

// The reference: every output evaluated in float64 from the inputs' values (each input's
// elements, row-major), one vector per output.
std::vector<std::vector<double>> evaluate(const Program& p, const std::vector<std::vector<double>>& inputs, int64_t rows,
                                          int64_t cols);

// Whether input i is the direct argument of log, sqrt or rsqrt (its values must be positive).
bool feeds_positive_only(const Program& p, int input);

// One input value as `kernelab fuse` and the `fused` op draw them: uniform in [-2, 2] with
// |x| >= 1/64 (never zero), or in [0.5, 2] for an input that feeds_positive_only.
double draw_input(Rng& rng, bool positive);

// The bytes model. Unfused: every step (each node that is not a leaf) reads each of its
// buffer operands (inputs and earlier steps) and writes its result, all in the dtype: what an
// eager framework moves with one kernel per op. Fused: each input read once, each output
// written once.
int64_t bytes_unfused(const Program& p, int64_t rows, int64_t cols, int64_t dtype_bytes);
int64_t bytes_fused(const Program& p, int64_t rows, int64_t cols, int64_t dtype_bytes);

}  // namespace kl::jit
