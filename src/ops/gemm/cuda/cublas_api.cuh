// cuBLAS for the gemm peers. Under nvcc it is opened when a peer first runs, not linked (loading
// it would cost every kernelab command its start-up); in the simulator build the names are the
// simulator's own cuBLAS (sim/cublas_names.h), computed on the CPU.
#pragma once
#include <cublas_v2.h>

#include <string>

#include "ops/gpu_rung.h"
#if !defined(KERNELAB_SIM)
#include <dlfcn.h>
#endif

namespace kl::KL_TARGET::cublas {

struct Api {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

inline const Api& api() {
  static const Api a = [] {
    Api x;
#if defined(KERNELAB_SIM)
    x.create = &::cublasCreate_v2, x.set_stream = &::cublasSetStream_v2, x.set_math_mode = &::cublasSetMathMode;
    x.sgemm = &::cublasSgemm_v2, x.status_string = &::cublasGetStatusString;
#else
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) runtime_failure("cannot open " + name + " (cuBLAS, for the gemm peers): " + dlerror());
    auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn) runtime_failure(name + " has no " + symbol);
    };
    load(x.create, "cublasCreate_v2"), load(x.set_stream, "cublasSetStream_v2"), load(x.set_math_mode, "cublasSetMathMode");
    load(x.sgemm, "cublasSgemm_v2"), load(x.status_string, "cublasGetStatusString");
#endif
    return x;
  }();
  return a;
}

inline void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) runtime_failure(std::string(call) + " failed: " + api().status_string(s));
}

// One handle for the process, bound to the stream of each call.
inline cublasHandle_t handle(void* stream) {
  static const cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    check(api().create(&x), "cublasCreate");
    return x;
  }();
  check(api().set_stream(h, static_cast<cudaStream_t>(stream)), "cublasSetStream");
  return h;
}

}  // namespace kl::KL_TARGET::cublas
