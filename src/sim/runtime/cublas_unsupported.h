// What the simulator's cuBLAS says for a call it does not compute: CUBLAS_STATUS_NOT_SUPPORTED,
// and the call's name on stderr once. Shared by runtime/cublas.cpp and the generated stubs.
#pragma once
#include <cublas_api.h>

#include <string>

namespace kl::sim::detail {
cublasStatus_t cublas_unsupported(const std::string& what);
}
