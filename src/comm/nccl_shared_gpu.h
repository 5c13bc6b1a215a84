// Several NCCL ranks on one GPU: NCCL before 2.30 refuses them at ncclCommInitRank ("Duplicate GPU
// detected"); 2.30 and later take them when NCCL_MULTI_RANK_GPU_ENABLE=1 (the variable and the
// message naming it are in the libnccl.so.2 of PyPI's 2.30.3 and 2.30.7, not in 2.28.9's). No NCCL
// header: tested without CUDA.
#pragma once
#include <fmt/format.h>

#include <string>

namespace kl::comm {

inline constexpr int kNcclMultiRankGpu = 23000;  // ncclGetVersion's code for 2.30.0

// "2.28.9" from ncclGetVersion's code (major * 10000 + minor * 100 + patch since 2.9).
inline std::string nccl_version_name(int code) {
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

// Why `ranks` ranks on `gpus` GPUs of one machine cannot run under this NCCL, or "" if they can.
inline std::string shared_gpu_refusal(int nccl_version, int ranks, int gpus) {
  if (ranks <= gpus || nccl_version >= kNcclMultiRankGpu) return "";
  return fmt::format("--transport nccl: {} ranks on {} GPU{} need NCCL 2.30 or later (with NCCL_MULTI_RANK_GPU_ENABLE=1); "
                     "the NCCL loaded is {}, which refuses two ranks on one GPU. Give each rank its own GPU, or put "
                     "NCCL 2.30 or later's libnccl.so.2 first on LD_LIBRARY_PATH",
                     ranks, gpus, gpus == 1 ? "" : "s", nccl_version_name(nccl_version));
}

}  // namespace kl::comm
