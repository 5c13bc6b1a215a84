// A CPU variant from a typed function: one config ("default"), the launch receiving the op's
// parameter struct P.
#pragma once
#include <string>

#include "kernelab/op.h"
#include "ops/cpu_isa.h"

namespace kl::inline KL_CPU_ISA {  // one copy per ISA build: cpu_isa.h

template <class P>
Variant cpu_variant(std::string op, std::string name, std::string note, void (*fn)(const P&, const Args&), bool peer = false) {
  Variant v;
  v.op = std::move(op);
  v.name = std::move(name);
  v.backend = Backend::cpu;
  v.note = std::move(note);
  v.peer = peer;
  Config c;
  c.name = "default";
  c.run = [fn](const Problem& p, const Args& a) { fn(p.as<P>(), a); };
  v.configs = {std::move(c)};
  return v;
}

}  // namespace kl::inline KL_CPU_ISA
