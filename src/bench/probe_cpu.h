// The probe's FMA loop, one per x86 level (src/ops/cpu_isa.h): n iterations of ten chains of
// 16-lane multiply-adds; returns a value that depends on all of them.
#pragma once
#include "ops/cpu_isa.h"

namespace kl {
KL_CPU_ISA_DECLARE(float probe_fma_loop(long iters))
}
