// The simulated device as the runtime API describes it: H100-like limits, or those of the GPU
// `sim run --gpu` names (the launch checks enforce them), and CUDA's error names and strings.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/runtime/internal.h"

namespace {

#define KL_SIM_ERRORS(X)                                                   \
  X(cudaSuccess, "no error")                                               \
  X(cudaErrorInvalidValue, "invalid argument")                             \
  X(cudaErrorMemoryAllocation, "out of memory")                            \
  X(cudaErrorInitializationError, "initialization error")                  \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")       \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                      \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")  \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")             \
  X(cudaErrorInvalidDeviceFunction, "invalid device function")             \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")   \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                  \
  X(cudaErrorLaunchOutOfResources, "too many resources requested for launch") \
  X(cudaErrorNotReady, "device not ready")                                 \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")               \
  X(cudaErrorAssert, "device-side assert triggered")                       \
  X(cudaErrorNotSupported, "operation not supported")

// "name=NVIDIA L4;sms=58;..." -> SimDevice; an unknown key or a bad number stops the program.
kl::sim::detail::SimDevice parse_device(const char* text) {
  kl::sim::detail::SimDevice d;
  std::string s = text;
  for (std::size_t at = 0; at < s.size();) {
    std::size_t end = s.find(';', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at), key = item.substr(0, item.find('='));
    const std::string value = item.find('=') == std::string::npos ? "" : item.substr(item.find('=') + 1);
    at = end + 1;
    if (key == "name") {
      d.name = value;
      continue;
    }
    char* rest = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &rest, 10);
    if (value.empty() || *rest) {
      std::fprintf(stderr, "kernelab sim: KERNELAB_SIM_DEVICE: '%s' is not key=number\n", item.c_str());
      std::exit(2);
    }
    if (key == "sms") d.sms = int(v);
    else if (key == "cc") d.cc_major = int(v / 10), d.cc_minor = int(v % 10);
    else if (key == "threads_per_sm") d.threads_per_sm = int(v);
    else if (key == "blocks_per_sm") d.blocks_per_sm = int(v);
    else if (key == "regs_per_sm") d.regs_per_sm = int(v);
    else if (key == "regs_per_block") d.regs_per_block = int(v);
    else if (key == "clock_khz") d.clock_khz = int(v);
    else if (key == "smem_per_sm") d.smem_per_sm = v;
    else if (key == "smem_optin") d.smem_optin = v < kl::sim::detail::kMaxDynamicSmem ? v : kl::sim::detail::kMaxDynamicSmem;
    else if (key == "reserved_smem") d.reserved_smem = v;
    else if (key == "l2_bytes") d.l2_bytes = v;
    else if (key == "memory_bytes") d.memory_bytes = v;
    else {
      std::fprintf(stderr, "kernelab sim: KERNELAB_SIM_DEVICE: unknown key '%s'\n", key.c_str());
      std::exit(2);
    }
  }
  return d;
}

}  // namespace

const kl::sim::detail::SimDevice& kl::sim::detail::sim_device() {
  static const SimDevice d = std::getenv("KERNELAB_SIM_DEVICE") ? parse_device(std::getenv("KERNELAB_SIM_DEVICE"))
                                                                 : SimDevice{};
  return d;
}

const char* kl_sim_cudaGetErrorString(cudaError_t e) {
#define X(code, text) \
  if (e == code) return text;
  KL_SIM_ERRORS(X)
#undef X
  return "unrecognized error code";
}

const char* kl_sim_cudaGetErrorName(cudaError_t e) {
#define X(code, text) \
  if (e == code) return #code;
  KL_SIM_ERRORS(X)
#undef X
  return "cudaErrorUnknown";
}

cudaError_t kl_sim_cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0 || !p) return cudaErrorInvalidDevice;
  const kl::sim::detail::SimDevice& d = kl::sim::detail::sim_device();
  *p = cudaDeviceProp{};
  std::strncpy(p->name, d.name.c_str(), sizeof p->name - 1);
  p->totalGlobalMem = d.memory_bytes;
  p->sharedMemPerBlock = kl::sim::detail::kDefaultSmem;
  p->sharedMemPerBlockOptin = d.smem_optin;
  p->sharedMemPerMultiprocessor = d.smem_per_sm;
  p->reservedSharedMemPerBlock = d.reserved_smem;
  p->regsPerBlock = d.regs_per_block;
  p->regsPerMultiprocessor = d.regs_per_sm;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = d.cc_major, p->minor = d.cc_minor;
  p->multiProcessorCount = d.sms;
  p->maxThreadsPerMultiProcessor = d.threads_per_sm;
  p->maxBlocksPerMultiProcessor = d.blocks_per_sm;
  p->l2CacheSize = int(d.l2_bytes);
  p->memoryBusWidth = 5120;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->managedMemory = 1;
  p->canMapHostMemory = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->textureAlignment = 512;
  return cudaSuccess;
}

cudaError_t kl_sim_cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  cudaDeviceProp p;
  kl_sim_cudaGetDeviceProperties(&p, 0);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = int(p.sharedMemPerBlock); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = int(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = int(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrWarpSize: *v = p.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = p.regsPerBlock; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *v = p.regsPerMultiprocessor; break;
    case cudaDevAttrTotalConstantMemory: *v = int(p.totalConstMem); break;
    case cudaDevAttrClockRate: *v = kl::sim::detail::sim_device().clock_khz; break;
    case cudaDevAttrComputeMode: *v = cudaComputeModeDefault; break;
    case cudaDevAttrIntegrated: *v = 0; break;
    case cudaDevAttrEccEnabled: *v = 0; break;
    case cudaDevAttrKernelExecTimeout: *v = 0; break;  // no watchdog: a hang is the deadlock report's job
    case cudaDevAttrConcurrentKernels: *v = p.concurrentKernels; break;
    case cudaDevAttrAsyncEngineCount: *v = p.asyncEngineCount; break;
    case cudaDevAttrGpuOverlap: *v = p.asyncEngineCount > 0; break;
    case cudaDevAttrUnifiedAddressing: *v = p.unifiedAddressing; break;
    case cudaDevAttrCanMapHostMemory: *v = p.canMapHostMemory; break;
    case cudaDevAttrManagedMemory: *v = p.managedMemory; break;
    case cudaDevAttrConcurrentManagedAccess: *v = 1; break;  // host and device memory are one here
    case cudaDevAttrPageableMemoryAccess: *v = 1; break;
    case cudaDevAttrGlobalL1CacheSupported: *v = p.globalL1CacheSupported; break;
    case cudaDevAttrCooperativeLaunch: *v = 0; break;  // no grid-wide sync: blocks do not all run at once here
    case cudaDevAttrMemoryPoolsSupported: *v = 0; break;
    default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
