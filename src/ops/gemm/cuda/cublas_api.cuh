// cuBLAS and cuBLASLt for the gemm peers. Under nvcc they are opened when a peer first runs, not
// linked (loading them would cost every kernelab command its start-up); in the simulator build
// the names are the simulator's own cuBLAS (sim/cublas_names.h), computed on the CPU.
#pragma once
#include <cublasLt.h>
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
  decltype(&::cublasLtCreate) lt_create = nullptr;
  decltype(&::cublasLtMatmulDescCreate) lt_desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) lt_desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) lt_desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) lt_layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) lt_layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) lt_layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) lt_pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) lt_pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) lt_pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) lt_heuristic = nullptr;
  decltype(&::cublasLtMatmul) lt_matmul = nullptr;
};

#if !defined(KERNELAB_SIM)
namespace detail {
// dlopen's handle of a library of the toolkit's major version, or a runtime failure naming it.
inline void* open_library(const std::string& name) {
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) runtime_failure("cannot open " + name + " (for the gemm peers): " + dlerror());
  return lib;
}
template <class F> void load(F& fn, void* lib, const std::string& name, const char* symbol) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn) runtime_failure(name + " has no " + symbol);
}
}  // namespace detail
#endif

inline const Api& api() {
  static const Api a = [] {
    Api x;
#if defined(KERNELAB_SIM)
    x.create = &::cublasCreate_v2, x.set_stream = &::cublasSetStream_v2, x.set_math_mode = &::cublasSetMathMode;
    x.sgemm = &::cublasSgemm_v2, x.status_string = &::cublasGetStatusString;
    x.lt_create = &::cublasLtCreate, x.lt_desc_create = &::cublasLtMatmulDescCreate;
    x.lt_desc_destroy = &::cublasLtMatmulDescDestroy, x.lt_desc_set = &::cublasLtMatmulDescSetAttribute;
    x.lt_layout_create = &::cublasLtMatrixLayoutCreate, x.lt_layout_destroy = &::cublasLtMatrixLayoutDestroy;
    x.lt_layout_set = &::cublasLtMatrixLayoutSetAttribute;
    x.lt_pref_create = &::cublasLtMatmulPreferenceCreate, x.lt_pref_destroy = &::cublasLtMatmulPreferenceDestroy;
    x.lt_pref_set = &::cublasLtMatmulPreferenceSetAttribute, x.lt_heuristic = &::cublasLtMatmulAlgoGetHeuristic;
    x.lt_matmul = &::cublasLtMatmul;
#else
    using detail::load;
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = detail::open_library(name);
    load(x.create, lib, name, "cublasCreate_v2"), load(x.set_stream, lib, name, "cublasSetStream_v2");
    load(x.set_math_mode, lib, name, "cublasSetMathMode"), load(x.sgemm, lib, name, "cublasSgemm_v2");
    load(x.status_string, lib, name, "cublasGetStatusString");
    const std::string lt_name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lt = detail::open_library(lt_name);
    load(x.lt_create, lt, lt_name, "cublasLtCreate"), load(x.lt_desc_create, lt, lt_name, "cublasLtMatmulDescCreate");
    load(x.lt_desc_destroy, lt, lt_name, "cublasLtMatmulDescDestroy");
    load(x.lt_desc_set, lt, lt_name, "cublasLtMatmulDescSetAttribute");
    load(x.lt_layout_create, lt, lt_name, "cublasLtMatrixLayoutCreate");
    load(x.lt_layout_destroy, lt, lt_name, "cublasLtMatrixLayoutDestroy");
    load(x.lt_layout_set, lt, lt_name, "cublasLtMatrixLayoutSetAttribute");
    load(x.lt_pref_create, lt, lt_name, "cublasLtMatmulPreferenceCreate");
    load(x.lt_pref_destroy, lt, lt_name, "cublasLtMatmulPreferenceDestroy");
    load(x.lt_pref_set, lt, lt_name, "cublasLtMatmulPreferenceSetAttribute");
    load(x.lt_heuristic, lt, lt_name, "cublasLtMatmulAlgoGetHeuristic"), load(x.lt_matmul, lt, lt_name, "cublasLtMatmul");
#endif
    return x;
  }();
  return a;
}

inline void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) runtime_failure(std::string(call) + " failed: " + api().status_string(s));
}

// One cuBLASLt handle for the process (cuBLASLt takes the stream per call).
inline cublasLtHandle_t lt_handle() {
  static const cublasLtHandle_t h = [] {
    cublasLtHandle_t x = nullptr;
    check(api().lt_create(&x), "cublasLtCreate");
    return x;
  }();
  return h;
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
