// The hardware database: every GPU the analytic tools know, each figure with its source. The
// data lives in gpus.json beside this file (data, not code), embedded at build time. Units here
// are SI base units: bytes, bytes/s, FLOP/s (int8: OP/s); the file keeps the datasheets' units.
// A figure of value 0 is one the part does not have (fp8 on A100, NVLink on L4); its source
// says so.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kl {

struct Figure {
  double value = 0;
  std::string source;  // where the figure comes from (datasheet, whitepaper, measurement)
};

// Per-SM resource limits of one architecture (what the occupancy calculator needs).
struct ArchLimits {
  std::string arch;  // "sm_90"
  int cc_major = 0, cc_minor = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 0;
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;
  int max_regs_per_block = 65536;
  int max_regs_per_thread = 255;
  int reg_alloc_unit = 256;        // registers are allocated per warp in units of this many
  int smem_per_sm = 0;             // bytes usable by blocks on one SM (the carveout maximum)
  int max_smem_per_block = 0;      // bytes, with the opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize)
  int reserved_smem_per_block = 0; // bytes the system takes per resident block
  int smem_alloc_unit = 128;       // bytes
  int warp_alloc_granularity = 4;  // warps are allocated in groups of this for registers
  std::string family;              // "Hopper"
  std::string source;
};

struct GpuSpec {
  std::string id;    // "h100-sxm"
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  std::string arch;  // "sm_90": the key into the arch limits
  std::vector<std::string> device_names;  // as cudaGetDeviceProperties reports them: "NVIDIA H200"
  Figure sm_count, boost_clock_mhz, memory_bytes, memory_bandwidth, l2_bytes;
  Figure nvlink_bandwidth;  // bytes/s per direction, all links together (0 when the part has none)
  Figure pcie_bandwidth;    // bytes/s per direction
  // Dense peak FLOP/s (or OP/s for int8) by dtype: fp64, fp32, tf32, fp16, bf16, fp8, int8, fp4.
  std::map<std::string, Figure> peak;
  // Measured ceilings where known, e.g. "copy_bandwidth", "bf16_gemm": value and source.
  std::map<std::string, Figure> measured;
};

// The dtype keys of GpuSpec::peak, in display order.
const std::vector<std::string>& peak_dtypes();

const std::vector<GpuSpec>& gpu_specs();
const GpuSpec& find_gpu(std::string_view id);  // BadInput naming the id and the known ones
const std::vector<ArchLimits>& arch_limits();
const ArchLimits& find_arch(std::string_view arch);  // "sm_90" or "90"; BadInput if unknown
// The entry whose device_names hold a CUDA device's name ("NVIDIA H100 80GB HBM3" -> h100-sxm),
// ignoring case and a leading "NVIDIA " or "Tesla "; nullptr for a GPU the database lacks.
const GpuSpec* find_gpu_by_device_name(std::string_view device_name);

// Peak FLOP/s of a GPU for a dtype name ("bf16", "fp8", and the dtype names of dtype.h such as
// "fp8e4m3" or "float32"): the datasheet figure, or with measured=true the measured
// "<dtype>_gemm" ceiling where one exists, else the datasheet figure (the returned source says
// which). BadInput if the dtype is unknown or the GPU does not have it (fp8 on A100).
Figure gpu_peak(const GpuSpec& g, std::string_view dtype, bool measured);
// DRAM bandwidth in bytes/s: the datasheet figure, or with measured=true the measured
// "copy_bandwidth" where one exists, else the datasheet figure.
Figure gpu_bandwidth(const GpuSpec& g, bool measured);

// The embedded gpus.json, byte for byte (the tests compare it with the source file).
std::string_view gpus_json_text();

}  // namespace kl
