// assert() in a kernel: glibc's assert calls __assert_fail, which the simulator defines, so a
// failed assert in device code stops that kernel as CUDA's device-side assert does
// (cudaErrorAssert) instead of aborting the process. In host code it is glibc's behaviour.
#include <assert.h>
#include <errno.h>

#include <cstdio>
#include <cstdlib>

#include "sim/runtime/internal.h"

extern "C" void __assert_fail(const char* expr, const char* file, unsigned line, const char* function) noexcept {
  const kl::sim::detail::Worker* w = kl::sim::detail::current_worker();
  if (w && w->current) kl::sim::detail::device_assert(expr, file, line, function);
  std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file, line, function, expr);
  std::abort();
}
