// The CUDA runtime API subset a standalone program uses, on the simulated device.
//
// The toolkit's cuda_runtime_api.h declares the real functions (C linkage) and stays
// included; each function here is named kl_sim_<name> (C++ linkage) and a macro sends the
// program's calls to it. So a binary can hold the simulator and the real CUDA runtime side
// by side (kernelab_tests does), and a call the simulator lacks fails to link naming it.
//
// Work runs synchronously in issue order: streams are in-order queues already drained,
// events record host time. Errors follow CUDA: a refused call returns its error and sets
// the last error; a kernel that fails (deadlock, fault) makes the context's error sticky
// until cudaDeviceReset.
#pragma once
#include <cuda_profiler_api.h>  // before the macros below, so its declarations keep the real names
#include <cuda_runtime.h>

#include <cstddef>

cudaError_t kl_sim_cudaMalloc(void** ptr, size_t bytes);
cudaError_t kl_sim_cudaMallocHost(void** ptr, size_t bytes);
cudaError_t kl_sim_cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
cudaError_t kl_sim_cudaMallocManaged(void** ptr, size_t bytes, unsigned flags = cudaMemAttachGlobal);
cudaError_t kl_sim_cudaFree(void* ptr);
cudaError_t kl_sim_cudaFreeHost(void* ptr);
cudaError_t kl_sim_cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t kl_sim_cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t kl_sim_cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                cudaMemcpyKind kind);
cudaError_t kl_sim_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t kl_sim_cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height);
cudaError_t kl_sim_cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height);
cudaError_t kl_sim_cudaMemset(void* dst, int value, size_t bytes);
cudaError_t kl_sim_cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = 0);
cudaError_t kl_sim_cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t kl_sim_cudaDeviceSynchronize();
cudaError_t kl_sim_cudaDeviceReset();
cudaError_t kl_sim_cudaGetLastError();
cudaError_t kl_sim_cudaPeekAtLastError();
const char* kl_sim_cudaGetErrorString(cudaError_t error);
const char* kl_sim_cudaGetErrorName(cudaError_t error);
cudaError_t kl_sim_cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t kl_sim_cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t kl_sim_cudaGetDeviceCount(int* count);
cudaError_t kl_sim_cudaSetDevice(int device);
cudaError_t kl_sim_cudaGetDevice(int* device);
cudaError_t kl_sim_cudaDriverGetVersion(int* version);
cudaError_t kl_sim_cudaRuntimeGetVersion(int* version);
cudaError_t kl_sim_cudaEventCreate(cudaEvent_t* event);
cudaError_t kl_sim_cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t kl_sim_cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t kl_sim_cudaEventSynchronize(cudaEvent_t event);
cudaError_t kl_sim_cudaEventQuery(cudaEvent_t event);
cudaError_t kl_sim_cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t kl_sim_cudaEventDestroy(cudaEvent_t event);
cudaError_t kl_sim_cudaStreamCreate(cudaStream_t* stream);
cudaError_t kl_sim_cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t kl_sim_cudaStreamSynchronize(cudaStream_t stream);
cudaError_t kl_sim_cudaStreamQuery(cudaStream_t stream);
cudaError_t kl_sim_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t kl_sim_cudaStreamDestroy(cudaStream_t stream);
cudaError_t kl_sim_cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t kl_sim_cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t kl_sim_cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
// The C++ overloads of cuda_runtime.h: an event with flags, and the CUDA 11 instantiate.
inline cudaError_t kl_sim_cudaEventCreate(cudaEvent_t* event, unsigned flags) {
  return kl_sim_cudaEventCreateWithFlags(event, flags);
}
inline cudaError_t kl_sim_cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphNode_t*, char*, size_t) {
  return kl_sim_cudaGraphInstantiate(exec, graph, 0);
}
cudaError_t kl_sim_cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t kl_sim_cudaGraphDestroy(cudaGraph_t graph);
cudaError_t kl_sim_cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t kl_sim_cudaFuncSetAttribute_impl(const void* func, cudaFuncAttribute attr, int value);
// Calls that change nothing a simulation shows, accepted as CUDA accepts them: device flags and
// limits (kept and read back), host memory registration (host memory is device memory here),
// stream callbacks and host functions (run at once, as all work is), the profiler's range, stream
// attributes (L2 access policy windows) and managed-memory attachment.
cudaError_t kl_sim_cudaSetDeviceFlags(unsigned flags);
cudaError_t kl_sim_cudaDeviceCanAccessPeer(int* can, int device, int peer);  // one device: no peers
cudaError_t kl_sim_cudaGetDeviceFlags(unsigned* flags);
cudaError_t kl_sim_cudaDeviceSetLimit(cudaLimit limit, size_t value);
cudaError_t kl_sim_cudaDeviceGetLimit(size_t* value, cudaLimit limit);
cudaError_t kl_sim_cudaHostRegister(void* ptr, size_t bytes, unsigned flags);
cudaError_t kl_sim_cudaHostUnregister(void* ptr);
cudaError_t kl_sim_cudaHostGetDevicePointer(void** device, void* host, unsigned flags);
cudaError_t kl_sim_cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user, unsigned flags);
cudaError_t kl_sim_cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user);
cudaError_t kl_sim_cudaProfilerStart();
cudaError_t kl_sim_cudaProfilerStop();
cudaError_t kl_sim_cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID attr, const cudaStreamAttrValue* value);
cudaError_t kl_sim_cudaCtxResetPersistingL2Cache();
cudaError_t kl_sim_cudaMemPrefetchAsync(const void* ptr, size_t bytes, cudaMemLocation where, unsigned flags,
                                        cudaStream_t stream = 0);
cudaError_t kl_sim_cudaMemAdvise(const void* ptr, size_t bytes, cudaMemoryAdvise advice, cudaMemLocation where);
cudaError_t kl_sim_cudaStreamAttachMemAsync(cudaStream_t stream, void* ptr, size_t bytes = 0,
                                            unsigned flags = cudaMemAttachSingle);

template <class T>
cudaError_t kl_sim_cudaMalloc(T** ptr, size_t bytes) {
  return kl_sim_cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
template <class T>
cudaError_t kl_sim_cudaMallocHost(T** ptr, size_t bytes) {
  return kl_sim_cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
template <class T>
cudaError_t kl_sim_cudaHostAlloc(T** ptr, size_t bytes, unsigned flags) {
  return kl_sim_cudaHostAlloc(reinterpret_cast<void**>(ptr), bytes, flags);
}
template <class T>
cudaError_t kl_sim_cudaMallocManaged(T** ptr, size_t bytes, unsigned flags = cudaMemAttachGlobal) {
  return kl_sim_cudaMallocManaged(reinterpret_cast<void**>(ptr), bytes, flags);
}
template <class T>
cudaError_t kl_sim_cudaHostGetDevicePointer(T** device, void* host, unsigned flags) {
  return kl_sim_cudaHostGetDevicePointer(reinterpret_cast<void**>(device), host, flags);
}
template <class F>
cudaError_t kl_sim_cudaFuncSetAttribute(F* func, cudaFuncAttribute attr, int value) {
  return kl_sim_cudaFuncSetAttribute_impl(reinterpret_cast<const void*>(func), attr, value);
}

// __device__ and __constant__ variables are ordinary globals here: a symbol is its address.
namespace kl::sim::detail {
cudaError_t symbol_copy(void* dst, const void* src, size_t bytes, const char* what);
void note_symbol(const void* address, size_t bytes);  // pointers into it may be kernel arguments
}  // namespace kl::sim::detail
template <class T>
cudaError_t kl_sim_cudaMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0,
                                      cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset + bytes > sizeof(T)) return kl::sim::detail::symbol_copy(nullptr, nullptr, 0, "cudaMemcpyToSymbol");
  return kl::sim::detail::symbol_copy(const_cast<char*>(reinterpret_cast<const char*>(&symbol)) + offset, src, bytes,
                                      "cudaMemcpyToSymbol");
}
template <class T>
cudaError_t kl_sim_cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes, size_t offset = 0,
                                        cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (offset + bytes > sizeof(T)) return kl::sim::detail::symbol_copy(nullptr, nullptr, 0, "cudaMemcpyFromSymbol");
  return kl::sim::detail::symbol_copy(dst, reinterpret_cast<const char*>(&symbol) + offset, bytes, "cudaMemcpyFromSymbol");
}
template <class T>
cudaError_t kl_sim_cudaGetSymbolAddress(void** ptr, const T& symbol) {
  kl::sim::detail::note_symbol(&symbol, sizeof(T));
  *ptr = const_cast<void*>(static_cast<const void*>(&symbol));
  return cudaSuccess;
}

#define cudaMalloc kl_sim_cudaMalloc
#define cudaMallocHost kl_sim_cudaMallocHost
#define cudaHostAlloc kl_sim_cudaHostAlloc
#define cudaMallocManaged kl_sim_cudaMallocManaged
#define cudaFree kl_sim_cudaFree
#define cudaFreeHost kl_sim_cudaFreeHost
#define cudaMemcpy kl_sim_cudaMemcpy
#define cudaMemcpyAsync kl_sim_cudaMemcpyAsync
#define cudaMemcpy2D kl_sim_cudaMemcpy2D
#define cudaMemcpy2DAsync kl_sim_cudaMemcpy2DAsync
#define cudaMemset2D kl_sim_cudaMemset2D
#define cudaMallocPitch kl_sim_cudaMallocPitch
#define cudaMemset kl_sim_cudaMemset
#define cudaMemsetAsync kl_sim_cudaMemsetAsync
#define cudaMemGetInfo kl_sim_cudaMemGetInfo
#define cudaMemcpyToSymbol kl_sim_cudaMemcpyToSymbol
#define cudaMemcpyFromSymbol kl_sim_cudaMemcpyFromSymbol
#define cudaGetSymbolAddress kl_sim_cudaGetSymbolAddress
#define cudaDeviceSynchronize kl_sim_cudaDeviceSynchronize
#define cudaDeviceReset kl_sim_cudaDeviceReset
#define cudaGetLastError kl_sim_cudaGetLastError
#define cudaPeekAtLastError kl_sim_cudaPeekAtLastError
#define cudaGetErrorString kl_sim_cudaGetErrorString
#define cudaGetErrorName kl_sim_cudaGetErrorName
#undef cudaGetDeviceProperties
#define cudaGetDeviceProperties kl_sim_cudaGetDeviceProperties
#define cudaDeviceGetAttribute kl_sim_cudaDeviceGetAttribute
#define cudaGetDeviceCount kl_sim_cudaGetDeviceCount
#define cudaSetDevice kl_sim_cudaSetDevice
#define cudaGetDevice kl_sim_cudaGetDevice
#define cudaDriverGetVersion kl_sim_cudaDriverGetVersion
#define cudaRuntimeGetVersion kl_sim_cudaRuntimeGetVersion
#define cudaEventCreate kl_sim_cudaEventCreate
#define cudaEventCreateWithFlags kl_sim_cudaEventCreateWithFlags
#define cudaEventRecord kl_sim_cudaEventRecord
#define cudaEventSynchronize kl_sim_cudaEventSynchronize
#define cudaEventQuery kl_sim_cudaEventQuery
#define cudaEventElapsedTime kl_sim_cudaEventElapsedTime
#define cudaEventDestroy kl_sim_cudaEventDestroy
#define cudaStreamCreate kl_sim_cudaStreamCreate
#define cudaStreamCreateWithFlags kl_sim_cudaStreamCreateWithFlags
#define cudaStreamSynchronize kl_sim_cudaStreamSynchronize
#define cudaStreamQuery kl_sim_cudaStreamQuery
#define cudaStreamWaitEvent kl_sim_cudaStreamWaitEvent
#define cudaStreamDestroy kl_sim_cudaStreamDestroy
#define cudaStreamBeginCapture kl_sim_cudaStreamBeginCapture
#define cudaStreamEndCapture kl_sim_cudaStreamEndCapture
#define cudaGraphInstantiate kl_sim_cudaGraphInstantiate
#define cudaGraphLaunch kl_sim_cudaGraphLaunch
#define cudaGraphDestroy kl_sim_cudaGraphDestroy
#define cudaGraphExecDestroy kl_sim_cudaGraphExecDestroy
#define cudaFuncSetAttribute kl_sim_cudaFuncSetAttribute
#define cudaSetDeviceFlags kl_sim_cudaSetDeviceFlags
#define cudaDeviceCanAccessPeer kl_sim_cudaDeviceCanAccessPeer
#define cudaGetDeviceFlags kl_sim_cudaGetDeviceFlags
#define cudaDeviceSetLimit kl_sim_cudaDeviceSetLimit
#define cudaDeviceGetLimit kl_sim_cudaDeviceGetLimit
#define cudaHostRegister kl_sim_cudaHostRegister
#define cudaHostUnregister kl_sim_cudaHostUnregister
#define cudaHostGetDevicePointer kl_sim_cudaHostGetDevicePointer
#define cudaStreamAddCallback kl_sim_cudaStreamAddCallback
#define cudaLaunchHostFunc kl_sim_cudaLaunchHostFunc
#define cudaProfilerStart kl_sim_cudaProfilerStart
#define cudaProfilerStop kl_sim_cudaProfilerStop
#define cudaStreamSetAttribute kl_sim_cudaStreamSetAttribute
#define cudaCtxResetPersistingL2Cache kl_sim_cudaCtxResetPersistingL2Cache
#define cudaStreamAttachMemAsync kl_sim_cudaStreamAttachMemAsync
#undef cudaMemPrefetchAsync
#define cudaMemPrefetchAsync kl_sim_cudaMemPrefetchAsync
#define cudaMemAdvise kl_sim_cudaMemAdvise
