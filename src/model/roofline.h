// The number formats the analytic tools take, with their element size and the peak each one
// runs at; the roofline itself is kernelab/roofline.h.
#pragma once
#include <string>
#include <string_view>

#include "kernelab/dtype.h"
#include "kernelab/op.h"
#include "kernelab/roofline.h"

namespace kl::model {

struct Format {
  std::string name;      // "bf16"
  double bytes = 0;      // per element
  std::string peak_key;  // the key of GpuSpec::peak this format runs at
  DType storage;         // how the registry ops store it (tf32 is stored as fp32)
};

// fp64, fp32, tf32, fp16, bf16, fp8 (fp8e4m3, fp8e5m2), int8; BadInput naming the unknown one.
const Format& parse_format(std::string_view name);

using kl::Roofline;  // the one roofline computation, in kl_base (kernelab/roofline.h)
using kl::roofline;

}  // namespace kl::model
