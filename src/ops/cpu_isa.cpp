#include "ops/cpu_isa.h"

#include <atomic>
#include <cstdlib>

#include "kernelab/error.h"

namespace kl::cpu {

namespace {
constexpr int kNoChoice = -1;
std::atomic<int> chosen{kNoChoice};

Isa checked(Isa want, const std::string& by) {
  if (static_cast<int>(want) > static_cast<int>(isa_supported()))
    bad_input(std::string(by) + " asks for the " + isa_name(want) + " CPU rungs, which this CPU does not run (it runs up to " +
              isa_name(isa_supported()) + ")");
  return want;
}
}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

std::string isa_extensions(Isa isa) {
  switch (isa) {
    case Isa::generic: return "SSE2 (x86-64 baseline)";
    case Isa::avx2: return "AVX2, FMA, F16C (x86-64-v3)";
    case Isa::avx512: return "AVX-512 F/BW/VL/DQ, AVX2, FMA, F16C (x86-64-v4)";
  }
  return "?";
}

Isa isa_supported() {
  static const Isa best = [] {
    __builtin_cpu_init();  // libgcc's checks include the OS saving the vector registers (XCR0)
    if (__builtin_cpu_supports("x86-64-v4")) return Isa::avx512;
    if (__builtin_cpu_supports("x86-64-v3")) return Isa::avx2;
    return Isa::generic;
  }();
  return best;
}

Isa parse_isa(const std::string& name) {
  for (Isa i : {Isa::generic, Isa::avx2, Isa::avx512})
    if (name == isa_name(i)) return i;
  bad_input("unknown CPU instruction-set level '" + name + "' (choices: generic, avx2, avx512)");
}

Isa isa() {
  int c = chosen.load(std::memory_order_relaxed);
  if (c == kNoChoice) {
    const char* env = std::getenv("KERNELAB_CPU_ISA");
    c = static_cast<int>(env && *env ? checked(parse_isa(env), "KERNELAB_CPU_ISA") : isa_supported());
    chosen.store(c, std::memory_order_relaxed);
  }
  return static_cast<Isa>(c);
}

void set_isa(Isa isa) { chosen.store(static_cast<int>(checked(isa, "set_isa")), std::memory_order_relaxed); }

std::vector<Variant> dispatched(const std::function<std::vector<Variant>(Isa)>& list_of) {
  std::vector<std::vector<Variant>> per_isa;  // indexed by Isa; isa() never names a level past isa_supported()
  for (int level = 0; level <= static_cast<int>(isa_supported()); ++level) per_isa.push_back(list_of(static_cast<Isa>(level)));
  std::vector<Variant> out = per_isa.at(0);
  for (const auto& list : per_isa)
    if (list.size() != out.size()) runtime_failure("cpu::dispatched: the ISA builds list different variants");
  for (size_t v = 0; v < out.size(); ++v) {
    for (size_t c = 0; c < out[v].configs.size(); ++c) {
      std::vector<Launcher> runs;
      for (const auto& list : per_isa) {
        if (list[v].name != out[v].name || list[v].configs.size() != out[v].configs.size())
          runtime_failure("cpu::dispatched: the ISA builds of " + out[v].op + " differ in variant " + out[v].name);
        runs.push_back(list[v].configs[c].run);
      }
      out[v].configs[c].run = [runs](const Problem& p, const Args& a) { runs[static_cast<size_t>(isa())](p, a); };
    }
  }
  return out;
}

}  // namespace kl::cpu
