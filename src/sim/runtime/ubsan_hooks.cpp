// The handler GCC's -fsanitize=alignment instrumentation calls, supplied here instead of libubsan:
// kernels compiled for the simulator check every typed load and store for the alignment its type
// needs. On a GPU a misaligned access (a float4 at an 8-byte boundary, a 4-byte pair of halves at
// an odd element) faults with "misaligned address"; on x86 it would pass silently. Inside a kernel
// the simulator faults with the type, the address and the line; host code is left alone.
#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/runtime/internal.h"

namespace {
// The layouts of ubsan_handlers.h (GCC and Clang share the runtime's ABI).
struct SourceLocation {
  const char* file;
  std::uint32_t line, column;
};
struct TypeDescriptor {
  std::uint16_t kind, info;
  char name[1];
};
struct TypeMismatchData {
  SourceLocation location;
  const TypeDescriptor* type;
  unsigned char log_alignment;
  unsigned char check_kind;  // 0 load, 1 store, the rest reference bindings and member accesses
};

void report(const TypeMismatchData* d, std::uintptr_t address) {
  kl::sim::detail::Worker* w = kl::sim::detail::current_worker();
  if (!w || !w->current) return;  // host code: x86 takes it
  const std::uintptr_t alignment = std::uintptr_t(1) << d->log_alignment;
  if (address % alignment == 0) return;
  char where[32];
  std::snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(address));
  const std::string what = std::string("misaligned ") + (d->check_kind == 1 ? "store" : "load") + " of " + d->type->name +
                           " at " + where + ", which needs " + std::to_string(alignment) +
                           "-byte alignment (a GPU faults: misaligned address)";
  kl::sim::detail::fault(what.c_str(), kl::sim::Site{d->location.file, d->location.line, d->location.column});
}
}  // namespace

extern "C" {
void __ubsan_handle_type_mismatch_v1(TypeMismatchData* d, std::uintptr_t address) { report(d, address); }
void __ubsan_handle_type_mismatch_v1_abort(TypeMismatchData* d, std::uintptr_t address) { report(d, address); }
}
