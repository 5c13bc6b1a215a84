// Reads a PyTorch profiler (Kineto) Chrome trace, .json or .json.gz, into columns: the scanner
// streams and validates the JSON, simdjson On-Demand reads the fields of each event.
#pragma once
#include <string>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/trace_data.h"

namespace kl::trace {

TraceData load_trace(ByteSource& src);
TraceData load_trace_file(const std::string& path);

// "12.345" (microseconds, as written in the trace) -> 12345 ns, exactly; digits past the
// nanosecond round half away from zero. BadInput if it is not a JSON number or is out of
// range (|t| > 2^61 ns).
Ns parse_us_as_ns(std::string_view number);

}  // namespace kl::trace
