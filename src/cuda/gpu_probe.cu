// `kernelab probe` on a GPU: the ceilings a rung is measured against. Copy bandwidth is what a
// memory-bound rung can hope for (cudaMemcpyAsync device to device on 1 GiB, read and write
// counted); the GEMM rates are cuBLASLt's on an 8192^3 problem per input type, fp32
// accumulation, the heuristic's first algorithm. Each figure is the median of timed runs; the
// result is stored (gpu_ceilings_path()) for the CUDA device's ceilings.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kernelab/error.h"
#include "kernelab/probe.h"

namespace kl {

namespace {
// cuBLASLt is opened when the probe runs, not linked: loading it registers its kernels, which
// would cost every kernelab command (trace analyze included) ~200 MiB of RSS and ~0.1 s.
struct CublasLt {
#define KL_LT_FUNCTIONS(X)                                                                                               \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate)                            \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                           \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                    \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
#define KL_LT_POINTER(fn) decltype(&::fn) fn = nullptr;
  KL_LT_FUNCTIONS(KL_LT_POINTER)
#undef KL_LT_POINTER
};

const CublasLt& lt_api() {
  static const CublasLt api = [] {
    const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) runtime_failure("probe: cannot open " + name + " (cuBLASLt, for the GEMM rates): " + dlerror());
    CublasLt a;
#define KL_LT_LOAD(fn)                                                                         \
  a.fn = reinterpret_cast<decltype(a.fn)>(dlsym(lib, #fn));                                     \
  if (!a.fn) runtime_failure("probe: " + name + " has no " #fn);
    KL_LT_FUNCTIONS(KL_LT_LOAD)
#undef KL_LT_LOAD
    return a;
  }();
  return api;
}
#undef KL_LT_FUNCTIONS

void check(cudaError_t e, const char* what) {
  if (e == cudaErrorMemoryAllocation) runtime_failure(std::string("probe: out of GPU memory in ") + what);
  if (e != cudaSuccess) runtime_failure(std::string("probe: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) runtime_failure(std::string("probe: ") + what + ": " + lt_api().cublasLtGetStatusString(s));
}

struct DeviceMemory {
  explicit DeviceMemory(size_t bytes) { check(cudaMalloc(&p, bytes), "cudaMalloc"); check(cudaMemset(p, 0x11, bytes), "cudaMemset"); }
  ~DeviceMemory() { cudaFree(p); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* p = nullptr;
};

// Median seconds of `reps` timed runs of fn on the stream, after two untimed ones.
double median_seconds(cudaStream_t stream, int reps, const std::function<void()>& fn) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    fn();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

double copy_rate(cudaStream_t stream, size_t bytes) {
  DeviceMemory a(bytes), b(bytes);
  const double s = median_seconds(stream, 10, [&] { check(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync"); });
  return 2.0 * static_cast<double>(bytes) / s;
}

// Uniform values in [-1, 1) from a hash of the index, in the operand type: cuBLASLt ran faster on
// the constant bytes an earlier probe used (880 TFLOP/s bf16 at 8192^3 on an H200, against 793 for
// its own 4096^3 point on random data in the same run), as on zeros.
template <class T> __global__ void fill_uniform(T* x, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = T(float(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}
void fill_operand(void* p, cudaDataType type, size_t n, cudaStream_t stream) {
  if (type == CUDA_R_32F) fill_uniform<<<1024, 256, 0, stream>>>(static_cast<float*>(p), n);
  else if (type == CUDA_R_16BF) fill_uniform<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(p), n);
  else fill_uniform<<<1024, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(p), n);
  check(cudaGetLastError(), "fill_uniform");
}

struct GemmKind {
  const char* name;
  cudaDataType ab, cd;
  size_t ab_bytes, cd_bytes;
  cublasComputeType_t compute;
};

// D = A^T B on n x n matrices ("TN", the layout cuBLASLt's fp8 GEMM requires), column-major.
double gemm_rate(cublasLtHandle_t handle, cudaStream_t stream, const GemmKind& k, int n) {
  const CublasLt& lt = lt_api();
  const size_t nn = static_cast<size_t>(n) * n, workspace_bytes = size_t{32} << 20;
  DeviceMemory a(nn * k.ab_bytes), b(nn * k.ab_bytes), d(nn * k.cd_bytes), ws(workspace_bytes);
  fill_operand(a.p, k.ab, nn, stream);
  fill_operand(b.p, k.ab, nn, stream);
  cublasLtMatmulDesc_t desc;
  check(lt.cublasLtMatmulDescCreate(&desc, k.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, none = CUBLAS_OP_N;
  check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "set TRANSA");
  check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "set TRANSB");
  cublasLtMatrixLayout_t la, lb, ld;
  check(lt.cublasLtMatrixLayoutCreate(&la, k.ab, n, n, n), "layout A");
  check(lt.cublasLtMatrixLayoutCreate(&lb, k.ab, n, n, n), "layout B");
  check(lt.cublasLtMatrixLayoutCreate(&ld, k.cd, n, n, n), "layout D");
  cublasLtMatmulPreference_t pref;
  check(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes),
        "set workspace");
  cublasLtMatmulHeuristicResult_t algo{};
  int found = 0;
  check(lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, pref, 1, &algo, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) runtime_failure(std::string("probe: cuBLASLt has no algorithm for a ") + k.name + " GEMM here");
  const float alpha = 1, beta = 0;
  const double s = median_seconds(stream, 10, [&] {
    check(lt.cublasLtMatmul(handle, desc, &alpha, a.p, la, b.p, lb, &beta, d.p, ld, d.p, ld, &algo.algo, ws.p, workspace_bytes, stream),
          "cublasLtMatmul");
  });
  lt.cublasLtMatmulPreferenceDestroy(pref);
  lt.cublasLtMatrixLayoutDestroy(la);
  lt.cublasLtMatrixLayoutDestroy(lb);
  lt.cublasLtMatrixLayoutDestroy(ld);
  lt.cublasLtMatmulDescDestroy(desc);
  return 2.0 * n * static_cast<double>(n) * n / s;
}

}  // namespace

GpuCeilings probe_gpu() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    runtime_failure(std::string("probe: no GPU found (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")");
  if (count == 0) runtime_failure("probe: no GPU found (cudaGetDeviceCount reports 0 devices)");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  GpuCeilings g;
  g.gpu = prop.name;
  g.measured_at = utc_now();
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  g.copy_buffer_bytes = double(size_t{1} << 30);
  g.copy_bytes_per_s = copy_rate(stream, size_t{1} << 30);
  const CublasLt& lt = lt_api();
  cublasLtHandle_t handle;
  check(lt.cublasLtCreate(&handle), "cublasLtCreate");
  constexpr int n = 8192;
  const GemmKind kinds[] = {{"fp32", CUDA_R_32F, CUDA_R_32F, 4, 4, CUBLAS_COMPUTE_32F},
                            {"tf32", CUDA_R_32F, CUDA_R_32F, 4, 4, CUBLAS_COMPUTE_32F_FAST_TF32},
                            {"bf16", CUDA_R_16BF, CUDA_R_16BF, 2, 2, CUBLAS_COMPUTE_32F},
                            {"fp8e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 2, CUBLAS_COMPUTE_32F}};
  for (const GemmKind& k : kinds) {
    if (k.ab == CUDA_R_8F_E4M3 && prop.major * 10 + prop.minor < 89) {
      g.skipped.push_back(std::string(k.name) + ": fp8 tensor cores need sm_89 or newer");
      continue;
    }
    g.gemm.push_back({k.name, n, gemm_rate(handle, stream, k, n)});
  }
  lt.cublasLtDestroy(handle);
  cudaStreamDestroy(stream);
  store_gpu_ceilings(g);
  return g;
}

}  // namespace kl
