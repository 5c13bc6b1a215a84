// The expression language of `kernelab fuse` (expr.h): tokens, a recursive-descent parser that
// builds the DAG directly (hash-consed, so `where(col <= row, x, -1e30)` written twice is one
// node), the checks, the float64 evaluation and the bytes model.
#include "jit/expr.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "kernelab/error.h"
#include "kernelab/rng.h"

namespace kl::jit {
namespace {

struct Token {
  enum Type { name, number, symbol, end } type;
  std::string text;
  double value = 0;
  int pos = 0;  // 1-based column
};

[[noreturn]] void fail(const std::string& text, int pos, const std::string& what) {
  // The expression with a caret under the column, as compilers show it.
  bad_input("fuse: " + what + " at column " + std::to_string(pos) + "\n  " + text + "\n  " + std::string(std::max(pos - 1, 0), ' ') +
            "^");
}

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const int pos = int(i) + 1;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::name, s.substr(i, j - i), 0, pos});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      char* e = nullptr;
      const double v = std::strtod(s.c_str() + i, &e);
      const std::size_t j = std::size_t(e - s.c_str());
      if (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_'))
        fail(s, pos, "a malformed number '" + s.substr(i, j + 1 - i) + "'");
      out.push_back({Token::number, s.substr(i, j - i), v, pos});
      i = j;
    } else {
      static const char* two[] = {"<=", ">=", "=="};
      std::string sym(1, c);
      for (const char* t : two)
        if (s.compare(i, 2, t) == 0) sym = t;
      if (sym.size() == 1 && std::string("+-*/(),;=<>").find(c) == std::string::npos)
        fail(s, pos, std::string("an unexpected character '") + c + "'");
      out.push_back({Token::symbol, sym, 0, pos});
      i += sym.size();
    }
  }
  out.push_back({Token::end, "", 0, int(s.size()) + 1});
  return out;
}

struct FnInfo {
  OpCode op;
  int arity;
};
const std::map<std::string, FnInfo>& functions() {
  static const std::map<std::string, FnInfo> f = {
      {"exp", {OpCode::exp, 1}},       {"log", {OpCode::log, 1}},         {"sqrt", {OpCode::sqrt, 1}},
      {"rsqrt", {OpCode::rsqrt, 1}},   {"tanh", {OpCode::tanh, 1}},       {"erf", {OpCode::erf, 1}},
      {"sigmoid", {OpCode::sigmoid, 1}}, {"relu", {OpCode::relu, 1}},     {"gelu", {OpCode::gelu, 1}},
      {"silu", {OpCode::silu, 1}},     {"max", {OpCode::max, 2}},         {"min", {OpCode::min, 2}},
      {"where", {OpCode::where, 3}},   {"rowsum", {OpCode::rowsum, 1}},   {"rowmax", {OpCode::rowmax, 1}},
      {"rowmean", {OpCode::rowmean, 1}},
  };
  return f;
}

Kind join(Kind a, Kind b) {
  if (a == b) return a;
  if (a == Kind::scalar) return b;
  if (b == Kind::scalar) return a;
  return Kind::full;  // row with col, or anything with full
}

// rowsum(exp(a - m)) with m = rowmax(a), softmax's denominator: taken in m's own pass as an online
// softmax (a running max, the running sum rescaled by exp(old - new) when the max grows), one pass
// over the row fewer. The levels are then counted again, each folded sum at its max's level.
void fold_online_softmax(Program& p) {
  for (Node& n : p.nodes) {
    if (n.op != OpCode::rowsum) continue;
    const Node& e = p.nodes[size_t(n.args[0])];
    if (e.op != OpCode::exp) continue;
    const Node& d = p.nodes[size_t(e.args[0])];
    if (d.op != OpCode::sub) continue;
    const Node& m = p.nodes[size_t(d.args[1])];
    if (m.op == OpCode::rowmax && m.args[0] == d.args[0]) n.online_max = d.args[1];
  }
  for (Node& n : p.nodes) {
    if (n.online_max >= 0) {
      n.level = p.nodes[size_t(n.online_max)].level;
      continue;
    }
    n.level = 0;
    for (int a : n.args) n.level = std::max(n.level, p.nodes[size_t(a)].level + (is_reduction(n.op) ? 1 : 0));
  }
}

class Parser {
 public:
  Parser(const std::string& text, const std::set<std::string>& vectors) : text_(text), vectors_(vectors), toks_(tokenize(text)) {
    p_.text = text;
  }

  Program run() {
    // First the assigned names, so that a use before the assignment is an error, not an input.
    for (std::size_t i = 0; i + 1 < toks_.size(); ++i) {
      const bool starts = i == 0 || toks_[i - 1].text == ";";
      if (starts && toks_[i].type == Token::name && toks_[i + 1].text == "=") {
        if (assigned_at_.count(toks_[i].text)) fail(text_, toks_[i].pos, "'" + toks_[i].text + "' is assigned twice");
        assigned_at_[toks_[i].text] = toks_[i].pos;
      }
    }
    std::vector<std::string> order;
    while (peek().type != Token::end) {
      if (peek().text == ";") {
        ++at_;
        continue;
      }
      const Token target = next();
      if (target.type != Token::name || peek().text != "=")
        fail(text_, target.pos, "expected NAME = EXPRESSION: a statement without an assignment has no output (an output is a name assigned and never used later)");
      if (target.text == "col" || target.text == "row" || is_function_name(target.text))
        fail(text_, target.pos, "'" + target.text + "' is a reserved name and cannot be assigned");
      ++at_;  // '='
      int id = expr();
      if (p_.nodes[size_t(id)].boolean) fail(text_, p_.nodes[size_t(id)].pos, "a comparison is only allowed as where()'s condition");
      // A statement that names an input, col, row or another statement's value is a copy: a step of its own.
      if (is_leaf(p_.nodes[size_t(id)].op) || !p_.nodes[size_t(id)].name.empty()) id = add({OpCode::copy, {id}}, target.pos);
      if (p_.nodes[size_t(id)].name.empty()) p_.nodes[size_t(id)].name = target.text;
      env_[target.text] = id;
      order.push_back(target.text);
      if (peek().type != Token::end && peek().text != ";") fail(text_, peek().pos, "expected ';' or the end, found '" + peek().text + "'");
    }
    if (order.empty()) fail(text_, 1, "no statements: write NAME = EXPRESSION");
    for (const std::string& v : vectors_)
      if (!vector_used_.count(v)) bad_input("fuse: --vector " + v + " names no input of the expression");
    for (const std::string& name : order) {
      if (used_.count(name)) continue;
      const Node& n = p_.nodes[size_t(env_[name])];
      if (n.kind == Kind::scalar) fail(text_, assigned_at_[name], "output '" + name + "' depends on no input, row or col");
      p_.outputs.push_back({name, n.kind, env_[name]});
    }
    if (p_.outputs.empty()) fail(text_, 1, "no outputs: every assigned name is used later (an output is a name assigned and never used)");
    fold_online_softmax(p_);
    for (const Node& n : p_.nodes) p_.levels = std::max(p_.levels, n.level);
    return std::move(p_);
  }

 private:
  const Token& peek() const { return toks_[at_]; }
  Token next() { return toks_[at_++]; }
  void expect(const std::string& sym, const std::string& what) {
    if (peek().text != sym || peek().type != Token::symbol)
      fail(text_, peek().pos, "expected '" + sym + "' " + what + (peek().type == Token::end ? ", found the end" : ", found '" + peek().text + "'"));
    ++at_;
  }

  // Adds a node (or finds the equal one), computing its kind, level and type.
  int add(Node n, int pos) {
    n.pos = pos;
    const bool reduction = is_reduction(n.op);
    n.kind = reduction ? Kind::row : Kind::scalar;
    for (int a : n.args) {
      const Node& c = p_.nodes[size_t(a)];
      if (!reduction) n.kind = join(n.kind, c.kind);
      n.level = std::max(n.level, c.level + (reduction ? 1 : 0));
    }
    n.boolean = n.op >= OpCode::lt && n.op <= OpCode::eq;
    if (n.op == OpCode::col_index) n.kind = Kind::col;
    if (n.op == OpCode::row_index) n.kind = Kind::row;
    if (n.op == OpCode::input) n.kind = p_.inputs[size_t(n.input)].kind;
    std::string key = std::to_string(int(n.op)) + "|" + std::to_string(n.input) + "|";
    char num[40];
    std::snprintf(num, sizeof num, "%.17g", n.value);
    key += num;
    for (int a : n.args) key += '|' + std::to_string(a);
    if (n.op != OpCode::copy)
      if (auto it = seen_.find(key); it != seen_.end()) return it->second;
    p_.nodes.push_back(n);
    const int id = int(p_.nodes.size()) - 1;
    seen_[key] = id;
    return id;
  }

  int number_arg(int id, int pos) {
    if (p_.nodes[size_t(id)].boolean) fail(text_, pos, "a comparison is only allowed as where()'s condition");
    return id;
  }

  int expr() {
    const int a = sum();
    static const std::map<std::string, OpCode> cmp = {{"<", OpCode::lt}, {"<=", OpCode::le}, {">", OpCode::gt}, {">=", OpCode::ge}, {"==", OpCode::eq}};
    if (peek().type == Token::symbol)
      if (auto it = cmp.find(peek().text); it != cmp.end()) {
        const Token op = next();
        const int b = sum();
        if (auto c = cmp.find(peek().text); c != cmp.end() && peek().type == Token::symbol)
          fail(text_, peek().pos, "comparisons do not chain");
        return add({it->second, {number_arg(a, op.pos), number_arg(b, op.pos)}}, op.pos);
      }
    return a;
  }
  int sum() {
    int a = prod();
    while (peek().type == Token::symbol && (peek().text == "+" || peek().text == "-")) {
      const Token op = next();
      const int b = prod();
      a = add({op.text == "+" ? OpCode::add : OpCode::sub, {number_arg(a, op.pos), number_arg(b, op.pos)}}, op.pos);
    }
    return a;
  }
  int prod() {
    int a = unary();
    while (peek().type == Token::symbol && (peek().text == "*" || peek().text == "/")) {
      const Token op = next();
      const int b = unary();
      a = add({op.text == "*" ? OpCode::mul : OpCode::div, {number_arg(a, op.pos), number_arg(b, op.pos)}}, op.pos);
    }
    return a;
  }
  int unary() {
    const Token t = next();
    if (t.type == Token::symbol && t.text == "-") return add({OpCode::neg, {number_arg(unary(), t.pos)}}, t.pos);
    if (t.type == Token::number) return add({OpCode::number, {}, t.value}, t.pos);
    if (t.type == Token::symbol && t.text == "(") {
      const int e = expr();
      expect(")", "to close the '(' at column " + std::to_string(t.pos));
      return e;
    }
    if (t.type == Token::name) {
      if (peek().text == "(" && peek().type == Token::symbol) return call(t);
      return name(t);
    }
    fail(text_, t.pos, t.type == Token::end ? "the expression ends where a value is expected" : "expected a value, found '" + t.text + "'");
  }
  int call(const Token& f) {
    const auto it = functions().find(f.text);
    if (it == functions().end()) {
      std::string known;
      for (const auto& [n, _] : functions()) known += (known.empty() ? "" : ", ") + n;
      fail(text_, f.pos, "unknown function '" + f.text + "' (known: " + known + ")");
    }
    ++at_;  // '('
    std::vector<int> args;
    std::vector<int> at;
    if (!(peek().text == ")" && peek().type == Token::symbol)) {
      for (;;) {
        at.push_back(peek().pos);
        args.push_back(expr());
        if (peek().text == "," && peek().type == Token::symbol) {
          ++at_;
          continue;
        }
        break;
      }
    }
    expect(")", "to close " + f.text + "( at column " + std::to_string(f.pos));
    if (int(args.size()) != it->second.arity)
      fail(text_, f.pos, f.text + "() takes " + std::to_string(it->second.arity) + " argument" + (it->second.arity > 1 ? "s" : "") + ", given " +
                             std::to_string(args.size()));
    for (std::size_t i = 0; i < args.size(); ++i) {
      const bool boolean = p_.nodes[size_t(args[i])].boolean;
      if (it->second.op == OpCode::where && i == 0 && !boolean) fail(text_, at[i], "where()'s first argument must be a comparison (<, <=, >, >=, ==)");
      if (!(it->second.op == OpCode::where && i == 0) && boolean) fail(text_, at[i], "a comparison is only allowed as where()'s condition");
    }
    return add({it->second.op, args}, f.pos);
  }
  int name(const Token& t) {
    if (t.text == "col") return add({OpCode::col_index}, t.pos);
    if (t.text == "row") return add({OpCode::row_index}, t.pos);
    if (is_function_name(t.text)) fail(text_, t.pos, "'" + t.text + "' is a function: write " + t.text + "(...)");
    if (auto e = env_.find(t.text); e != env_.end()) {
      used_.insert(t.text);
      return e->second;
    }
    if (auto a = assigned_at_.find(t.text); a != assigned_at_.end())
      fail(text_, t.pos, "'" + t.text + "' is used before its assignment (column " + std::to_string(a->second) + ")");
    int index = -1;
    for (std::size_t i = 0; i < p_.inputs.size(); ++i)
      if (p_.inputs[i].name == t.text) index = int(i);
    if (index < 0) {
      const bool vec = vectors_.count(t.text) > 0;
      if (vec) vector_used_.insert(t.text);
      p_.inputs.push_back({t.text, vec ? Kind::col : Kind::full});
      index = int(p_.inputs.size()) - 1;
    }
    const int id = add({OpCode::input, {}, 0, index}, t.pos);
    p_.inputs[size_t(index)].node = id;
    return id;
  }

  const std::string& text_;
  const std::set<std::string>& vectors_;
  std::vector<Token> toks_;
  std::size_t at_ = 0;
  Program p_;
  std::map<std::string, int> env_, assigned_at_;
  std::map<std::string, int> seen_;
  std::set<std::string> used_, vector_used_;
};

}  // namespace

bool is_reduction(OpCode op) { return op == OpCode::rowsum || op == OpCode::rowmax || op == OpCode::rowmean; }
bool is_leaf(OpCode op) { return op == OpCode::input || op == OpCode::number || op == OpCode::col_index || op == OpCode::row_index; }
bool is_function_name(const std::string& name) { return functions().count(name) > 0; }

const char* op_name(OpCode op) {
  static const char* names[] = {"input", "number", "col", "row", "neg", "+", "-", "*", "/", "<", "<=", ">", ">=", "==",
                                "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "relu", "gelu", "silu",
                                "max", "min", "where", "rowsum", "rowmax", "rowmean", "copy"};
  return names[int(op)];
}
const char* kind_name(Kind k) {
  static const char* names[] = {"scalar", "row", "col", "full"};
  return names[int(k)];
}

Program parse(const std::string& text, const std::set<std::string>& vectors) { return Parser(text, vectors).run(); }

int64_t elements(Kind k, int64_t rows, int64_t cols) {
  switch (k) {
    case Kind::scalar: return 1;
    case Kind::row: return rows;
    case Kind::col: return cols;
    default: return rows * cols;
  }
}

std::vector<std::vector<double>> evaluate(const Program& p, const std::vector<std::vector<double>>& inputs, int64_t rows, int64_t cols) {
  std::vector<std::vector<double>> v(p.nodes.size());
  auto at = [&](int id, int64_t r, int64_t c) {
    const std::vector<double>& x = v[size_t(id)];
    switch (p.nodes[size_t(id)].kind) {
      case Kind::scalar: return x[0];
      case Kind::row: return x[size_t(r)];
      case Kind::col: return x[size_t(c)];
      default: return x[size_t(r * cols + c)];
    }
  };
  for (std::size_t id = 0; id < p.nodes.size(); ++id) {
    const Node& n = p.nodes[id];
    const int64_t count = elements(n.kind, rows, cols);
    std::vector<double>& out = v[id];
    if (n.op == OpCode::input) {
      out = inputs[size_t(n.input)];
      continue;
    }
    out.assign(size_t(count), 0.0);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = n.kind == Kind::full ? i / cols : n.kind == Kind::row ? i : 0;
      const int64_t c = n.kind == Kind::full ? i % cols : n.kind == Kind::col ? i : 0;
      if (n.op == OpCode::number) out[size_t(i)] = n.value;
      else if (n.op == OpCode::col_index) out[size_t(i)] = double(c);
      else if (n.op == OpCode::row_index) out[size_t(i)] = double(r);
      else if (is_reduction(n.op)) {
        double acc = n.op == OpCode::rowmax ? -INFINITY : 0.0;
        for (int64_t k = 0; k < cols; ++k) {
          const double x = at(n.args[0], r, k);
          acc = n.op == OpCode::rowmax ? std::fmax(acc, x) : acc + x;
        }
        out[size_t(i)] = n.op == OpCode::rowmean ? acc / double(cols) : acc;
      } else {
        double a[3] = {0, 0, 0};
        for (std::size_t k = 0; k < n.args.size(); ++k) a[k] = at(n.args[k], r, c);
        out[size_t(i)] = apply_op(n.op, a[0], a[1], a[2]);
      }
    }
  }
  std::vector<std::vector<double>> result;
  for (const Tensor& o : p.outputs) result.push_back(v[size_t(o.node)]);
  return result;
}

double draw_input(Rng& rng, bool positive) {
  double x;
  do x = positive ? rng.uniform(0.5, 2.0) : rng.uniform(-2.0, 2.0);
  while (std::fabs(x) < 1.0 / 64);
  return x;
}

bool feeds_positive_only(const Program& p, int input) {
  for (const Node& n : p.nodes)
    if ((n.op == OpCode::log || n.op == OpCode::sqrt || n.op == OpCode::rsqrt) && p.nodes[size_t(n.args[0])].op == OpCode::input &&
        p.nodes[size_t(n.args[0])].input == input)
      return true;
  return false;
}

int64_t bytes_unfused(const Program& p, int64_t rows, int64_t cols, int64_t dtype_bytes) {
  int64_t b = 0;
  for (const Node& n : p.nodes) {
    if (is_leaf(n.op) || n.kind == Kind::scalar) continue;
    std::set<int> operands;  // an operand used twice is read once
    for (int a : n.args)
      if (p.nodes[size_t(a)].op == OpCode::input || (!is_leaf(p.nodes[size_t(a)].op) && p.nodes[size_t(a)].kind != Kind::scalar))
        operands.insert(a);
    for (int a : operands) b += elements(p.nodes[size_t(a)].kind, rows, cols) * dtype_bytes;
    b += elements(n.kind, rows, cols) * dtype_bytes;
  }
  return b;
}

int64_t bytes_fused(const Program& p, int64_t rows, int64_t cols, int64_t dtype_bytes) {
  int64_t b = 0;
  for (const Tensor& t : p.inputs) b += elements(t.kind, rows, cols) * dtype_bytes;
  for (const Tensor& t : p.outputs) b += elements(t.kind, rows, cols) * dtype_bytes;
  return b;
}

}  // namespace kl::jit
