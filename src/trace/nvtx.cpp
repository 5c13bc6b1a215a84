#include "trace/nvtx.h"

#ifdef KERNELAB_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace kl {

#ifdef KERNELAB_HAVE_NVTX
NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}
#endif

}  // namespace kl
