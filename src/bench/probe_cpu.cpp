// The probe's FMA loop, built once per x86 level (src/ops/cpu_isa.h): the peak of the level the
// CPU rungs run, not of the baseline the rest of kernelab is built for.
#include "bench/probe_cpu.h"

namespace kl {

#if defined(__AVX512F__)
#define KL_PROBE_VECTOR_BYTES 64
#elif defined(__AVX__)
#define KL_PROBE_VECTOR_BYTES 32
#else
#define KL_PROBE_VECTOR_BYTES 16
#endif
typedef float vec __attribute__((vector_size(KL_PROBE_VECTOR_BYTES)));
constexpr int kLanes = KL_PROBE_VECTOR_BYTES / 4;

// Ten independent FMA chains of the level's own vectors, enough to cover FMA latency on current
// cores, each stepped 16 / kLanes times an iteration: 160 lanes of FMA an iteration at every level,
// as measure_fma counts. A 64-byte vector at the avx2 level took 20 of its 16 registers and
// spilled (13 GFLOP/s a thread on a Zen 4, against the generic level's 29).
float KL_CPU_ISA::probe_fma_loop(long iters) {
  vec acc[10];
  for (int k = 0; k < 10; ++k) acc[k] = vec{} + 0.001f * static_cast<float>(k);
  const vec m = vec{} + 0.999999f, add = vec{} + 0.000001f;
  for (long i = 0; i < iters; ++i)
    for (int step = 0; step < 16 / kLanes; ++step)
      for (int k = 0; k < 10; ++k) acc[k] = acc[k] * m + add;
  float sink = 0;
  for (int k = 0; k < 10; ++k) sink += acc[k][0];
  return sink;
}

}  // namespace kl
