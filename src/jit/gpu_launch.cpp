// The generated schedules on a GPU through the driver API (gpu_launch.h).
#include "jit/gpu_launch.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string_view>

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
  std::vector<std::size_t> workspace_offset;  // by node: byte offset
  std::vector<int> output_of;                 // by node: output index, or -1
  std::size_t workspace_bytes = 0;
};

ChainBuffers chain_buffers(const Program& p, const std::vector<UnfusedStep>& steps, FuseDType t, int64_t rows, int64_t cols) {
  ChainBuffers c;
  c.workspace_offset.assign(p.nodes.size(), 0);
  c.output_of.assign(p.nodes.size(), -1);
  for (std::size_t i = p.outputs.size(); i-- > 0;) c.output_of[std::size_t(p.outputs[i].node)] = int(i);  // the first wins
  for (const UnfusedStep& s : steps) {
    if (c.output_of[std::size_t(s.node)] >= 0) continue;
    c.workspace_offset[std::size_t(s.node)] = c.workspace_bytes;
    c.workspace_bytes += round_up(std::size_t(elements(p.nodes[std::size_t(s.node)].kind, rows, cols)) * std::size_t(fuse_dtype_bytes(t)));
  }
  return c;
}

}  // namespace

std::size_t unfused_workspace_bytes(const Program& p, FuseDType t, int64_t rows, int64_t cols) {
  return chain_buffers(p, unfused_steps(p), t, rows, cols).workspace_bytes;
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

void check(CUresult r, std::string_view what, std::string_view name = {}) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  driver().get_error_string(r, &text);
  runtime_failure(fmt::format("fused: {}{}{}: {}", what, name.empty() ? "" : " ", name, text ? text : "unknown driver error"));
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

// One schedule of an expression for a dtype, compiled, loaded and looked up once per process, with
// all that the shape does not change: a launch then only fills in its arguments (a bench times
// launches, not code generation, loads or the driver's function lookups).
struct Kernel {
  CUfunction function = nullptr;
  std::string name;  // for the driver's error messages
};
struct Schedule {
  Kernel fused;                     // the fused kernel
  int64_t stage_floats = 0;         // fused: staged floats per column
  std::vector<UnfusedStep> steps;   // unfused: the chain in order,
  std::vector<Kernel> step_kernels; // and each step's kernel
};

Kernel kernel_of(CUmodule m, std::string name) {
  Kernel k{nullptr, std::move(name)};
  check(driver().module_get_function(&k.function, m, k.name.c_str()), "cuModuleGetFunction", k.name);
  return k;
}

const Schedule& schedule_of(const Program& p, FuseDType t, bool fused, const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, Schedule> loaded;  // a map's elements stay where they are
  std::string key = arch;
  key += fused ? " fused " : " unfused ";
  key += fuse_dtype_name(t);
  for (const Tensor& in : p.inputs) key += ' ', key += kind_name(in.kind);  // the text alone does not say which are row vectors
  key += ' ';
  key += p.text;
  const std::lock_guard lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  const JitResult j = jit_compile(fused ? fused_source(p, t) : unfused_source(p, t), arch);
  if (!j.ok) runtime_failure("fused: " + j.error);
  CUmodule m = nullptr;
  check(driver().module_load_data(&m, j.ptx.c_str()), "cuModuleLoadData of NVRTC's PTX for", arch);
  Schedule s;
  if (fused) {
    s.fused = kernel_of(m, kFusedKernel);
    s.stage_floats = fused_stage_floats(p);
  } else {
    s.steps = unfused_steps(p);
    for (const UnfusedStep& step : s.steps) s.step_kernels.push_back(kernel_of(m, fmt::format("kl_step{}", step.node)));
  }
  return loaded.emplace(std::move(key), std::move(s)).first->second;
}

void launch(const Kernel& k, unsigned grid, unsigned block, unsigned smem, void* stream, void** args) {
  check(driver().launch_kernel(k.function, grid, 1, 1, block, 1, 1, smem, static_cast<CUstream>(stream), args, nullptr),
        "cuLaunchKernel", k.name);
}

}  // namespace

void run_on_gpu(const Program& p, FuseDType t, bool fused, int64_t rows, int64_t cols, const GpuBuffers& b) {
  static const DeviceFacts dev = current_device();  // one device per process, as the cuda backend uses
  const Schedule& schedule = schedule_of(p, t, fused, dev.arch);
  int r = int(rows), c = int(cols);
  const unsigned threads = unsigned(block_threads(cols));
  std::vector<const void*> pointers;
  std::vector<void*> args;
  if (fused) {
    const std::size_t stage_bytes = std::size_t(schedule.stage_floats) * std::size_t(cols) * sizeof(float);
    int staged = stage_bytes <= 48 * 1024;  // else a later pass reads its input again
    pointers.assign(b.inputs.begin(), b.inputs.end());
    pointers.insert(pointers.end(), b.outputs.begin(), b.outputs.end());
    // The 16-byte path where every row of every tensor starts 16-byte aligned.
    int vec = cols * fuse_dtype_bytes(t) % 16 == 0;
    for (const void* q : pointers) vec = vec && reinterpret_cast<std::uintptr_t>(q) % 16 == 0;
    for (const void*& q : pointers) args.push_back(&q);
    args.insert(args.end(), {&r, &c, &staged, &vec});
    launch(schedule.fused, unsigned(rows), threads, staged ? unsigned(stage_bytes) : 0u, b.stream, args.data());
    return;
  }
  const ChainBuffers chain = chain_buffers(p, schedule.steps, t, rows, cols);
  auto buffer = [&](int node) -> const void* {
    const Node& n = p.nodes[std::size_t(node)];
    if (n.op == OpCode::input) return b.inputs[std::size_t(n.input)];
    if (const int out = chain.output_of[std::size_t(node)]; out >= 0) return b.outputs[std::size_t(out)];
    return static_cast<const char*>(b.workspace) + chain.workspace_offset[std::size_t(node)];
  };
  for (std::size_t i = 0; i < schedule.steps.size(); ++i) {
    const UnfusedStep& s = schedule.steps[i];
    pointers.clear();
    for (int o : s.operands) pointers.push_back(buffer(o));
    pointers.push_back(buffer(s.node));
    args.clear();
    for (const void*& q : pointers) args.push_back(&q);
    args.insert(args.end(), {&r, &c});
    const int64_t n = elements(p.nodes[std::size_t(s.node)].kind, rows, cols);
    const unsigned grid = s.reduction ? unsigned(rows) : unsigned(std::min<int64_t>((n + 255) / 256, int64_t(dev.sms) * 16));
    launch(schedule.step_kernels[i], grid, s.reduction ? threads : 256u, 0, b.stream, args.data());
  }
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {  // an output whose node another output holds: copied
    const int first = chain.output_of[std::size_t(p.outputs[i].node)];
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
