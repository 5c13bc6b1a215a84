#include "kernelab/roofline.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernelab/error.h"

namespace kl {

Roofline roofline(const Cost& c, double peak_flops, double bandwidth) {
  if (!(peak_flops > 0) || !(bandwidth > 0))
    bad_input(fmt::format("ceilings peak {} FLOP/s, bandwidth {} B/s: both must be positive", peak_flops, bandwidth));
  Roofline r;
  r.flops = c.flops;
  r.bytes = c.bytes;
  r.intensity = c.bytes > 0 ? c.flops / c.bytes : 0;
  r.ridge = peak_flops / bandwidth;
  r.t_compute_s = c.flops / peak_flops;
  r.t_memory_s = c.bytes / bandwidth;
  r.t_lower_bound_s = std::max(r.t_compute_s, r.t_memory_s);
  r.compute_bound = r.t_compute_s >= r.t_memory_s && c.flops > 0;
  return r;
}

}  // namespace kl
