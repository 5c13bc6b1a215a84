// An integer field as HTA's parser reads it (Python int()), shared by the loader and the
// critical path's rows.
#pragma once
#include <simdjson.h>

#include <cstdint>

namespace kl::trace {

// Booleans are 0/1, numbers truncate, strings of digits parse; anything else is the fallback.
int64_t hta_int(simdjson::ondemand::value v, int64_t fallback);

}  // namespace kl::trace
