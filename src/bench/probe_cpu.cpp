// The probe's FMA loop, built once per x86 level (src/ops/cpu_isa.h): the peak of the level the
// CPU rungs run, not of the baseline the rest of kernelab is built for.
#include "bench/probe_cpu.h"

// A 64-byte vector type outside AVX-512 is passed in memory: these functions are not an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace kl {

typedef float v16 __attribute__((vector_size(64)));

// Ten independent FMA chains of 16 lanes: enough to cover FMA latency on current cores.
float KL_CPU_ISA::probe_fma_loop(long iters) {
  v16 acc[10];
  for (int k = 0; k < 10; ++k) acc[k] = v16{} + 0.001f * static_cast<float>(k);
  const v16 m = v16{} + 0.999999f, add = v16{} + 0.000001f;
  for (long i = 0; i < iters; ++i)
    for (int k = 0; k < 10; ++k) acc[k] = acc[k] * m + add;
  float sink = 0;
  for (int k = 0; k < 10; ++k) sink += acc[k][0];
  return sink;
}

}  // namespace kl
