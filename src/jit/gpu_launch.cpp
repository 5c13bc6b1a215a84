// The generated schedules on a GPU through the driver API (gpu_launch.h).
#include "jit/gpu_launch.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "jit/nvrtc.h"
#include "kernelab/error.h"

#if KERNELAB_HAVE_NVRTC
#include <cuda.h>
#include <dlfcn.h>
#endif

namespace kl::jit {

namespace {

std::size_t round_up(std::size_t n) { return (n + 255) / 256 * 256; }

// Where each step of the chain writes: the first output that is its node, else the workspace.
struct ChainBuffers {
  std::map<int, std::size_t> workspace_offset;  // node -> byte offset
  std::map<int, int> output_of;                 // node -> output index
  std::size_t workspace_bytes = 0;
};

ChainBuffers chain_buffers(const Program& p, FuseDType t, int64_t rows, int64_t cols) {
  ChainBuffers c;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) c.output_of.emplace(p.outputs[i].node, int(i));
  for (const UnfusedStep& s : unfused_steps(p)) {
    if (c.output_of.count(s.node)) continue;
    c.workspace_offset[s.node] = c.workspace_bytes;
    c.workspace_bytes += round_up(std::size_t(elements(p.nodes[std::size_t(s.node)].kind, rows, cols)) * std::size_t(fuse_dtype_bytes(t)));
  }
  return c;
}

}  // namespace

std::size_t unfused_workspace_bytes(const Program& p, FuseDType t, int64_t rows, int64_t cols) {
  return chain_buffers(p, t, rows, cols).workspace_bytes;
}

#if KERNELAB_HAVE_NVRTC
namespace {

// The driver API, opened at its first use (libcuda.so.1 comes with the driver, not the toolkit).
struct Driver {
  std::string missing;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                            void**) = nullptr;
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver x;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      x.missing = "cannot open libcuda.so.1 (no NVIDIA driver on this machine)";
      return x;
    }
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn && x.missing.empty()) x.missing = fmt::format("libcuda.so.1 lacks {}", symbol);
    };
    bind(x.get_error_string, "cuGetErrorString");
    bind(x.ctx_get_device, "cuCtxGetDevice");
    bind(x.device_get_attribute, "cuDeviceGetAttribute");
    bind(x.module_load_data, "cuModuleLoadData");
    bind(x.module_get_function, "cuModuleGetFunction");
    bind(x.launch_kernel, "cuLaunchKernel");
    bind(x.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
    return x;
  }();
  if (!d.missing.empty()) runtime_failure("fused: " + d.missing);
  return d;
}

void check(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  driver().get_error_string(r, &text);
  runtime_failure(fmt::format("fused: {}: {}", what, text ? text : "unknown driver error"));
}

struct DeviceFacts {
  std::string arch;
  int sms = 0;
};

DeviceFacts current_device() {
  const Driver& d = driver();
  CUdevice dev = 0;
  check(d.ctx_get_device(&dev), "cuCtxGetDevice (no CUDA context is current)");
  int major = 0, minor = 0, sms = 0;
  check(d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check(d.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  check(d.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
  return {fmt::format("sm_{}{}", major, minor), sms};
}

// The module of one schedule of an expression for a dtype, compiled and loaded once per process:
// a bench times launches, not code generation or loads.
CUmodule module_of(const Program& p, FuseDType t, bool fused, const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, CUmodule> loaded;
  std::string key = fmt::format("{} {} {} ", arch, fuse_dtype_name(t), fused ? "fused" : "unfused");
  for (const Tensor& in : p.inputs) key += kind_name(in.kind), key += ' ';  // the text alone does not say which are row vectors
  key += p.text;
  const std::lock_guard lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  const JitResult j = jit_compile(fused ? fused_source(p, t) : unfused_source(p, t), arch);
  if (!j.ok) runtime_failure("fused: " + j.error);
  CUmodule m = nullptr;
  check(driver().module_load_data(&m, j.ptx.c_str()), "cuModuleLoadData of NVRTC's PTX for " + arch);
  loaded.emplace(key, m);
  return m;
}

void launch(CUmodule m, const std::string& kernel, unsigned grid, unsigned block, unsigned smem, void* stream,
            std::vector<void*> args) {
  CUfunction f = nullptr;
  check(driver().module_get_function(&f, m, kernel.c_str()), "cuModuleGetFunction " + kernel);
  check(driver().launch_kernel(f, grid, 1, 1, block, 1, 1, smem, static_cast<CUstream>(stream), args.data(), nullptr),
        "cuLaunchKernel " + kernel);
}

}  // namespace

void run_on_gpu(const Program& p, FuseDType t, bool fused, int64_t rows, int64_t cols, const GpuBuffers& b) {
  static const DeviceFacts dev = current_device();  // one device per process, as the cuda backend uses
  int r = int(rows), c = int(cols);
  const unsigned threads = unsigned(block_threads(cols));
  if (fused) {
    const CUmodule m = module_of(p, t, true, dev.arch);
    const std::size_t stage_bytes = std::size_t(fused_stage_floats(p)) * std::size_t(cols) * sizeof(float);
    int staged = stage_bytes <= 48 * 1024;  // else a later pass reads its input again
    std::vector<const void*> pointers(b.inputs);
    pointers.insert(pointers.end(), b.outputs.begin(), b.outputs.end());
    // The 16-byte path where every row of every tensor starts 16-byte aligned.
    int vec = cols * fuse_dtype_bytes(t) % 16 == 0;
    for (const void* q : pointers) vec = vec && reinterpret_cast<std::uintptr_t>(q) % 16 == 0;
    std::vector<void*> args;
    for (const void*& q : pointers) args.push_back(&q);
    args.insert(args.end(), {&r, &c, &staged, &vec});
    launch(m, kFusedKernel, unsigned(rows), threads, staged ? unsigned(stage_bytes) : 0u, b.stream, args);
    return;
  }
  const CUmodule m = module_of(p, t, false, dev.arch);
  const ChainBuffers chain = chain_buffers(p, t, rows, cols);
  auto buffer = [&](int node) -> const void* {
    const Node& n = p.nodes[std::size_t(node)];
    if (n.op == OpCode::input) return b.inputs[std::size_t(n.input)];
    if (auto it = chain.output_of.find(node); it != chain.output_of.end()) return b.outputs[std::size_t(it->second)];
    return static_cast<const char*>(b.workspace) + chain.workspace_offset.at(node);
  };
  for (const UnfusedStep& s : unfused_steps(p)) {
    std::vector<const void*> pointers;
    for (int o : s.operands) pointers.push_back(buffer(o));
    pointers.push_back(buffer(s.node));
    std::vector<void*> args;
    for (const void*& q : pointers) args.push_back(&q);
    args.insert(args.end(), {&r, &c});
    const int64_t n = elements(p.nodes[std::size_t(s.node)].kind, rows, cols);
    const unsigned grid = s.reduction ? unsigned(rows) : unsigned(std::min<int64_t>((n + 255) / 256, int64_t(dev.sms) * 16));
    launch(m, fmt::format("kl_step{}", s.node), grid, s.reduction ? threads : 256u, 0, b.stream, args);
  }
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {  // an output whose node another output holds: copied
    const int first = chain.output_of.at(p.outputs[i].node);
    if (first == int(i)) continue;
    const std::size_t bytes = std::size_t(elements(p.outputs[i].kind, rows, cols)) * std::size_t(fuse_dtype_bytes(t));
    check(driver().memcpy_dtod_async(CUdeviceptr(b.outputs[i]), CUdeviceptr(b.outputs[std::size_t(first)]), bytes,
                                     static_cast<CUstream>(b.stream)),
          "cuMemcpyDtoDAsync");
  }
}
#else
void run_on_gpu(const Program&, FuseDType, bool, int64_t, int64_t, const GpuBuffers&) {
  runtime_failure("fused: this kernelab was built without the CUDA toolkit's NVRTC and driver headers");
}
#endif

}  // namespace kl::jit
