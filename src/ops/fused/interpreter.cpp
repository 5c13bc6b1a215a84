// The fused op's CPU rung: the expression's DAG walked one row at a time in fp32, each node's
// values for the row in a buffer of cols floats (one float for a per-row value), outputs rounded
// to the dtype once. An interpreter, not a generated kernel: the CPU side of the comparison.
#include <cmath>

#include "ops/fused/fused.h"

namespace kl {

namespace {

using jit::Kind;
using jit::Node;
using jit::OpCode;

void interpret(const Problem& problem, const Args& args) {
  const FusedParams& f = problem.as<FusedParams>();
  const jit::Program& p = f.program;
  const int64_t rows = f.rows, cols = f.cols;
#pragma omp parallel
  {
    std::vector<std::vector<float>> v(p.nodes.size());
    for (std::size_t id = 0; id < p.nodes.size(); ++id)
      v[id].resize(p.nodes[id].kind == Kind::full || p.nodes[id].kind == Kind::col ? std::size_t(cols) : 1);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (std::size_t id = 0; id < p.nodes.size(); ++id) {
        const Node& n = p.nodes[id];
        std::vector<float>& out = v[id];
        auto arg = [&](std::size_t k, int64_t c) {
          const std::vector<float>& x = v[std::size_t(n.args[k])];
          return x.size() == 1 ? x[0] : x[std::size_t(c)];
        };
        if (n.op == OpCode::input) {
          const Tensor& t = args.in[std::size_t(n.input)];
          const int64_t base = n.kind == Kind::full ? r * cols : 0;
          for (int64_t c = 0; c < cols; ++c) out[std::size_t(c)] = float(t.get(base + c));
        } else if (n.op == OpCode::number) {
          out[0] = float(n.value);
        } else if (n.op == OpCode::row_index) {
          out[0] = float(r);
        } else if (n.op == OpCode::col_index) {
          for (int64_t c = 0; c < cols; ++c) out[std::size_t(c)] = float(c);
        } else if (jit::is_reduction(n.op)) {
          float acc = n.op == OpCode::rowmax ? -INFINITY : 0.0f;
          for (int64_t c = 0; c < cols; ++c) acc = n.op == OpCode::rowmax ? std::fmax(acc, arg(0, c)) : acc + arg(0, c);
          out[0] = n.op == OpCode::rowmean ? acc / float(cols) : acc;
        } else {
          for (std::size_t c = 0; c < out.size(); ++c) {
            float a[3] = {0, 0, 0};
            for (std::size_t k = 0; k < n.args.size(); ++k) a[k] = arg(k, int64_t(c));
            out[c] = jit::apply_op(n.op, a[0], a[1], a[2]);
          }
        }
      }
      for (std::size_t i = 0; i < p.outputs.size(); ++i) {
        const jit::Tensor& o = p.outputs[i];
        const std::vector<float>& x = v[std::size_t(o.node)];
        Tensor& t = args.out[i];
        if (o.kind == Kind::row) t.set(r, x[0]);
        else if (o.kind == Kind::full)
          for (int64_t c = 0; c < cols; ++c) t.set(r * cols + c, x[std::size_t(c)]);
        else if (r == 0)  // a row vector: the same in every row
          for (int64_t c = 0; c < cols; ++c) t.set(c, x[std::size_t(c)]);
      }
    }
  }
}

}  // namespace

std::vector<Variant> fused_cpu_variants() {
  Variant v;
  v.op = "fused";
  v.name = "cpu_interpreted";
  v.backend = Backend::cpu;
  v.note = "the expression's DAG walked a row at a time in fp32, every node's values for the row in an L1-resident buffer";
  Config c;
  c.name = "default";
  c.run = interpret;
  v.configs = {std::move(c)};
  return {v};
}

}  // namespace kl
