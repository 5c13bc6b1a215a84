// CPU rungs compiled once per x86 instruction-set level and chosen at run time, so that one
// binary runs at its best on any x86-64 CPU (no -march=native baked in).
//
// Every file named *cpu.cpp in an op folder is compiled three times (cmake/cpu_isa.cmake):
//   isa_generic   x86-64 baseline (SSE2)
//   isa_avx2      x86-64-v3: AVX2, FMA, F16C, BMI2
//   isa_avx512    x86-64-v4: AVX-512 F/BW/VL/DQ/CD, 512-bit vectors preferred
// with KL_CPU_ISA naming that build's namespace. The helpers of cpu_math.h and cpu_variant.h sit
// in inline namespaces KL_CPU_ISA, so an inline function compiled for AVX-512 is a symbol of
// its own, never the copy the linker keeps for a generic caller (a test checks the objects for
// shared weak symbols: cmake/cpu_isa_object.py check). A file defines its exported function as
// KL_CPU_ISA::name, its header declares all three with KL_CPU_ISA_DECLARE, and the op merges the
// lists of the levels the CPU runs with cpu::dispatched, whose rungs call the level isa() names at each run.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kernelab/op.h"

#ifndef KL_CPU_ISA
#define KL_CPU_ISA isa_generic
#endif

// Declared here first, so that this build's namespace is the inline one wherever it is reopened.
namespace kl {
inline namespace KL_CPU_ISA {}  // cpu_variant, and each file's exported function
namespace cpu {
inline namespace KL_CPU_ISA {}  // the helpers of cpu_math.h
}
}  // namespace kl

// Declares `decl` in each ISA namespace (inside namespace kl).
#define KL_CPU_ISA_DECLARE(decl) \
  namespace isa_generic {        \
  decl;                          \
  }                              \
  namespace isa_avx2 {           \
  decl;                          \
  }                              \
  namespace isa_avx512 {         \
  decl;                          \
  }
// The builds' variant lists of `fn(args...)`, merged into one that dispatches at run time. Only
// the levels this CPU runs are asked for theirs: an AVX-512 build's list-making code may itself
// hold AVX-512 instructions (GCC builds a Variant with zmm moves), an illegal instruction on AVX2.
#define KL_CPU_ISA_VARIANTS(fn, ...)                                    \
  ::kl::cpu::dispatched([&](::kl::cpu::Isa level) {                     \
    switch (level) {                                                    \
      case ::kl::cpu::Isa::avx512: return ::kl::isa_avx512::fn(__VA_ARGS__); \
      case ::kl::cpu::Isa::avx2: return ::kl::isa_avx2::fn(__VA_ARGS__);     \
      default: return ::kl::isa_generic::fn(__VA_ARGS__);               \
    }                                                                   \
  })

namespace kl::cpu {

enum class Isa { generic, avx2, avx512 };  // in ascending order: a CPU that runs one runs those below it

const char* isa_name(Isa isa);          // "generic", "avx2", "avx512"
std::string isa_extensions(Isa isa);    // the extensions its build uses, for probe and bench
Isa isa_supported();                    // the best level this CPU (and its OS) runs
// The level the CPU rungs run: the best supported, or KERNELAB_CPU_ISA / set_isa's choice, which
// must be supported (a bad_input error names the choices otherwise).
Isa isa();
void set_isa(Isa isa);                  // for tests; checked as KERNELAB_CPU_ISA is
Isa parse_isa(const std::string& name);  // bad_input on an unknown name

// One variant list from the builds' of every level up to isa_supported() (same names and configs
// in the same order; `list_of(level)` is called for those alone), each config running the build
// of the level isa() names when it runs.
std::vector<Variant> dispatched(const std::function<std::vector<Variant>(Isa)>& list_of);

}  // namespace kl::cpu
