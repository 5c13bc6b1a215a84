// libFuzzer target for the trace reader and analyzer: any bytes (JSON or gzip) must load and
// analyze, or be refused with kl::BadInput. Anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug. Built with clang++ -fsanitize=fuzzer,address,undefined by
// src/trace/trace.cmake and run for a few seconds by ctest (test trace_fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelab/error.h"
#include "trace/load.h"
#include "trace/report_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kl::trace;
  try {
    ByteSource src = ByteSource::from_memory({reinterpret_cast<const char*>(data), size}, "fuzz");
    AnalyzeOptions opt;
    opt.gap_us = 0;  // list every gap: exercises the CPU attribution on tiny inputs
    const Report r = analyze(load_trace(src), opt);
    (void)report_json(r, 0).dump();
    (void)diff_json(diff_reports(r, r), 0).dump();
  } catch (const kl::BadInput&) {
  }
  return 0;
}
