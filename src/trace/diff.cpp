#include "trace/diff.h"

#include <algorithm>
#include <map>

namespace kl::trace {

TraceDiff diff_reports(const Report& a, const Report& b) {
  TraceDiff d{&a, &b, {}};
  std::map<std::string, KernelDelta> by_name;
  for (const KernelStats& k : a.kernels) {
    KernelDelta& x = by_name[k.name];
    x.name = k.name, x.count_a = k.count, x.total_a = k.total;
  }
  for (const KernelStats& k : b.kernels) {
    KernelDelta& x = by_name[k.name];
    x.name = k.name, x.count_b = k.count, x.total_b = k.total;
  }
  for (auto& [name, x] : by_name) d.kernels.push_back(std::move(x));
  std::stable_sort(d.kernels.begin(), d.kernels.end(), [](const KernelDelta& x, const KernelDelta& y) {
    const Ns ax = x.delta() < 0 ? -x.delta() : x.delta(), ay = y.delta() < 0 ? -y.delta() : y.delta();
    return ax > ay;
  });
  return d;
}

}  // namespace kl::trace
