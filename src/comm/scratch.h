// Grow-only host scratch buffers (the host transports' Transport::scratch): allocated (and first touched) once, so a timed
// collective does not pay page faults for its temporaries on every call.
#pragma once
#include <cstddef>
#include <vector>

namespace kl::comm {

inline std::byte* host_scratch(int slot, std::size_t bytes) {
  thread_local std::vector<std::byte> buffers[3];  // per thread: the loopback tests run ranks as threads
  std::vector<std::byte>& b = buffers[slot];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

}  // namespace kl::comm
