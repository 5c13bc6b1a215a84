// The source rewrite that makes a .cu file host C++ for the simulator: the launch syntax
// `kernel<<<grid, block[, smem[, stream]]>>>(args)` becomes a kl::sim::launch_named call,
// `extern __shared__ T s[];` a reference to the block's dynamic shared memory, a `static`
// before __shared__ goes (it is implied), and a block-scope `__shared__ T s[...];` is
// followed on its line by `::kl::sim::poison_shared_once(&s, sizeof s);`. Comments and
// string literals are left alone, every line keeps its number (a `#line` names the original
// file), so compiler errors point at the user's source.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kl::sim {

// Throws kl::BadInput naming path:line for a launch it cannot parse.
std::string rewrite_cuda(std::string_view source, const std::string& path);

// The `#include "name"` directives of a source (not <name>, not in comments): where the
// name's characters start, how many there are, and the name.
struct QuoteInclude {
  std::size_t offset, length;
  std::string name;
};
std::vector<QuoteInclude> quote_includes(std::string_view source);

}  // namespace kl::sim
