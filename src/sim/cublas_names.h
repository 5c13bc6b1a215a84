// cuBLAS and cuBLASLt for the simulator (runtime/cublas.cpp: computed on the CPU). cuda_sim.h
// includes this before the program's own #include <cublas_v2.h> / <cublasLt.h>, so these names
// declare and call kl_sim_* functions with the toolkit's own signatures, and a binary can hold
// them beside the real libraries. Every other entry point that returns a status is renamed by the
// generated header below (src/sim/sim.cmake) to a stub answering CUBLAS_STATUS_NOT_SUPPORTED.
#pragma once
#define cublasCreate_v2 kl_sim_cublasCreate_v2
#define cublasDestroy_v2 kl_sim_cublasDestroy_v2
#define cublasSetStream_v2 kl_sim_cublasSetStream_v2
#define cublasGetStream_v2 kl_sim_cublasGetStream_v2
#define cublasSetWorkspace_v2 kl_sim_cublasSetWorkspace_v2
#define cublasSetMathMode kl_sim_cublasSetMathMode
#define cublasGetMathMode kl_sim_cublasGetMathMode
#define cublasSetPointerMode_v2 kl_sim_cublasSetPointerMode_v2
#define cublasGetPointerMode_v2 kl_sim_cublasGetPointerMode_v2
#define cublasGetVersion_v2 kl_sim_cublasGetVersion_v2
#define cublasGetStatusString kl_sim_cublasGetStatusString
#define cublasSgemm_v2 kl_sim_cublasSgemm_v2
#define cublasSgemmStridedBatched kl_sim_cublasSgemmStridedBatched
#define cublasGemmEx kl_sim_cublasGemmEx
#define cublasGemmStridedBatchedEx kl_sim_cublasGemmStridedBatchedEx
#define cublasLtCreate kl_sim_cublasLtCreate
#define cublasLtDestroy kl_sim_cublasLtDestroy
#define cublasLtMatmulDescCreate kl_sim_cublasLtMatmulDescCreate
#define cublasLtMatmulDescDestroy kl_sim_cublasLtMatmulDescDestroy
#define cublasLtMatmulDescSetAttribute kl_sim_cublasLtMatmulDescSetAttribute
#define cublasLtMatrixLayoutCreate kl_sim_cublasLtMatrixLayoutCreate
#define cublasLtMatrixLayoutDestroy kl_sim_cublasLtMatrixLayoutDestroy
#define cublasLtMatrixLayoutSetAttribute kl_sim_cublasLtMatrixLayoutSetAttribute
#define cublasLtMatmulPreferenceCreate kl_sim_cublasLtMatmulPreferenceCreate
#define cublasLtMatmulPreferenceDestroy kl_sim_cublasLtMatmulPreferenceDestroy
#define cublasLtMatmulPreferenceSetAttribute kl_sim_cublasLtMatmulPreferenceSetAttribute
#define cublasLtMatmulAlgoGetHeuristic kl_sim_cublasLtMatmulAlgoGetHeuristic
#define cublasLtMatmul kl_sim_cublasLtMatmul
#include "sim/cublas_unsupported_names.h"
