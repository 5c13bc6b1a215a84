// The simulated device as the runtime API describes it: H100-like limits (the ones the
// launch checks enforce), and CUDA's error names and strings.
#include <cstring>

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

constexpr int kSms = 132;

}  // namespace

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
  *p = cudaDeviceProp{};
  std::strncpy(p->name, "kernelab SIMT simulator", sizeof p->name - 1);
  p->totalGlobalMem = 80ull << 30;
  p->sharedMemPerBlock = kl::sim::detail::kDefaultSmem;
  p->sharedMemPerBlockOptin = kl::sim::detail::kMaxDynamicSmem;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->reservedSharedMemPerBlock = 1024;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->memPitch = 2147483647;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = 9, p->minor = 0;
  p->multiProcessorCount = kSms;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->l2CacheSize = 50 * 1024 * 1024;
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
    default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
