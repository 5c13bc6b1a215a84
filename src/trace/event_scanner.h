// Walks the JSON of a Chrome trace as it streams in, validates all of it (RFC 8259: grammar,
// escapes, UTF-8, nesting at most kMaxDepth), and hands over each element of "traceEvents" (or of
// a top-level array) as its own JSON text, padded for simdjson. One event is held at a time, so
// memory does not grow with the file. Every error is BadInput with the byte offset.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "trace/byte_source.h"

namespace kl::trace {

inline constexpr size_t kEventPadding = 64;  // bytes readable after each event text (SIMDJSON_PADDING)
inline constexpr int kMaxDepth = 512;

struct ScanCallbacks {
  // One element of traceEvents: its JSON text (an object) and its position in the array.
  std::function<void(std::string_view json, size_t index)> on_event;
  // A top-level member other than traceEvents that the caller wants to read (deviceProperties,
  // distributedInfo): its JSON text, padded like events.
  std::function<void(std::string_view key, std::string_view json)> on_metadata;
};

void scan_trace_events(ByteSource& src, const ScanCallbacks& cb);

}  // namespace kl::trace
