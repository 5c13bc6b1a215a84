// Asynchronous copies written against the toolkit's own C++ API (libcu++), as the CUDA
// Programming Guide's examples write them, each checked exactly on the host:
//   tma        the guide's TMA example over a grid of tiles: cuda::barrier in static shared memory,
//              cp_async_bulk_tensor_2d_global_to_shared + barrier_arrive_tx, the threads change the
//              tile, fence_proxy_async_shared_cta, a TMA store, commit_group, wait_group_read; the
//              tensor (100 x 72 ints) is not a multiple of the 8 x 32 box, so loads zero-fill and
//              stores drop the edges. Once plain, once with 128-byte swizzle (the threads index the
//              tile through the swizzle).
//   barrier    cuda::memcpy_async(block, ..., barrier) then arrive_and_wait (the guide's with_barrier)
//   staged     a 2-stage cuda::pipeline over the block (the guide's with_staging)
//   roles      a pipeline whose first warp produces (memcpy_async_tx-free, per-thread copies) and
//              whose other warps consume, made with pipeline_role
//   thread     each thread's own cuda::pipeline<thread_scope_thread> of 3 stages, aligned_size_t<16>
// Modes (argv[1]) plant the mistakes the simulator must catch:
//   early-read the barrier kernel reads shared memory before arrive_and_wait: wrong results
//   no-tx      the TMA kernel arrives without barrier_arrive_tx: the phase completes before the data
//   deadlock   the barrier expects one thread more than the block has: wait never returns
// Build for a GPU: nvcc -std=c++17 -arch=sm_90a tests/sim/libcudacxx_async.cu (built for an older
// GPU, libcu++ leaves out its TMA functions, and so does this program's TMA part).
#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;
namespace cde = cuda::device::experimental;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

enum Mode { kNormal, kEarlyRead, kNoTx, kDeadlock };
#if !defined(__CUDA_MINIMUM_ARCH__) || __CUDA_MINIMUM_ARCH__ >= 900
#define HAS_TMA 1  // libcu++'s cuda::device::experimental TMA functions exist for sm_90 and later
#endif

#ifdef HAS_TMA
constexpr int kRows = 100, kCols = 72, kBoxRows = 8, kBoxCols = 32;  // 32 ints: one 128-byte swizzle row

// Element (r, c) of the box in shared memory: with the 128-byte swizzle, 16-byte chunk c/4 of row
// r sits at chunk (c/4) ^ (r%8).
__device__ int& at(int (&box)[kBoxRows][kBoxCols], int r, int c, bool swizzled) {
  return swizzled ? box[r][((c / 4) ^ (r % 8)) * 4 + c % 4] : box[r][c];
}

// One block per box, one thread per column: each element gains 1000 * row + column.
__global__ void tma_kernel(const __grid_constant__ CUtensorMap map, bool swizzled, Mode mode, int* edge_errors) {
  __shared__ alignas(1024) int box[kBoxRows][kBoxCols];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ block_barrier bar;
  const int x = blockIdx.x * kBoxCols, y = blockIdx.y * kBoxRows;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x + (mode == kDeadlock ? 1 : 0));
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();

  block_barrier::arrival_token token;
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_global_to_shared(&box, &map, x, y, bar);
    token = mode == kNoTx ? bar.arrive() : cuda::device::barrier_arrive_tx(bar, 1, sizeof box);
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));

  const int c = threadIdx.x;
  for (int r = 0; r < kBoxRows; ++r) {
    int& v = at(box, r, c, swizzled);
    if ((x + c >= kCols || y + r >= kRows) && v != 0) atomicAdd(edge_errors, 1);  // TMA fills outside with zeros
    v += 1000 * r + c;
  }
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_shared_to_global(&map, x, y, &box);
    cde::cp_async_bulk_commit_group();
    cde::cp_async_bulk_wait_group_read<0>();
    (&bar)->~block_barrier();
  }
}

#endif

// out[i] = 2 * in[i + 1 within the block's batch], in batches of blockDim.x elements.
__global__ void barrier_kernel(int* out, const int* in, int batches, Mode mode) {
  auto grid = cg::this_grid();
  auto block = cg::this_thread_block();
  extern __shared__ int shared[];  // block.size() ints
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ block_barrier bar;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const unsigned n = block.size(), t = block.thread_rank();
  for (int batch = 0; batch < batches; ++batch) {
    const size_t base = block.group_index().x * n + grid.size() * batch;
    cuda::memcpy_async(block, shared, in + base, sizeof(int) * n, bar);
    if (mode == kEarlyRead) out[base + t] = 2 * shared[(t + 1) % n];
    bar.arrive_and_wait();
    if (mode != kEarlyRead) out[base + t] = 2 * shared[(t + 1) % n];
    block.sync();
  }
}

// The same through a 2-stage pipeline: batch b + 1's copy is in flight while batch b is used.
__global__ void staged_kernel(int* out, const int* in, int batches) {
  constexpr int kStages = 2;
  auto grid = cg::this_grid();
  auto block = cg::this_thread_block();
  extern __shared__ int shared[];  // kStages * block.size() ints
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
  auto pipe = cuda::make_pipeline(block, &state);
  const unsigned n = block.size(), t = block.thread_rank();
  auto first = [&](int batch) { return block.group_index().x * n + grid.size() * batch; };
  for (int fetch = 0, use = 0; use < batches; ++use) {
    for (; fetch < batches && fetch < use + kStages; ++fetch) {
      pipe.producer_acquire();
      cuda::memcpy_async(block, shared + (fetch % kStages) * n, in + first(fetch), sizeof(int) * n, pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    out[first(use) + t] = 2 * shared[(use % kStages) * n + (t + 1) % n];
    pipe.consumer_release();
  }
}

// Warp 0 copies tiles of 32 ints (each lane its own int), warps 1.. sum each tile: sums[tile].
__global__ void roles_kernel(int* sums, const int* in, int tiles) {
  constexpr int kStages = 3;
  auto block = cg::this_thread_block();
  __shared__ int tile[kStages][32];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
  const bool producer = block.thread_rank() < 32;
  auto pipe = cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
  const unsigned lane = block.thread_rank() % 32, consumer_warps = block.size() / 32 - 1;
  for (int i = 0; i < tiles; ++i) {
    if (producer) {
      pipe.producer_acquire();
      cuda::memcpy_async(&tile[i % kStages][lane], in + 32 * i + lane, sizeof(int), pipe);
      pipe.producer_commit();
    } else {
      pipe.consumer_wait();
      const unsigned warp = block.thread_rank() / 32 - 1;
      if (warp == unsigned(i) % consumer_warps && lane == 0) {
        int s = 0;
        for (int j = 0; j < 32; ++j) s += tile[i % kStages][j];
        sums[i] = s;
      }
      pipe.consumer_release();
    }
  }
}

// Each thread streams its own 4-int (16-byte) pieces through a 3-stage pipeline of its own.
__global__ void thread_kernel(int4* out, const int4* in, int pieces_per_thread) {
  constexpr int kStages = 3;
  extern __shared__ int4 staged[];  // kStages * blockDim.x
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const int t = threadIdx.x, stride = blockDim.x;
  const int4* src = in + (blockIdx.x * blockDim.x + t) * pieces_per_thread;
  int4* dst = out + (blockIdx.x * blockDim.x + t) * pieces_per_thread;
  for (int fetch = 0, use = 0; use < pieces_per_thread; ++use) {
    for (; fetch < pieces_per_thread && fetch < use + kStages; ++fetch) {
      pipe.producer_acquire();
      cuda::memcpy_async(&staged[(fetch % kStages) * stride + t], src + fetch, cuda::aligned_size_t<16>(sizeof(int4)), pipe);
      pipe.producer_commit();
    }
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    const int4 v = staged[(use % kStages) * stride + t];
    dst[use] = make_int4(v.w, v.z, v.y, v.x);
    pipe.consumer_release();
  }
}

static int failures = 0;
static void expect(bool ok, const char* what) {
  if (!ok) ++failures, fprintf(stderr, "FAIL: %s\n", what);
}

#ifdef HAS_TMA
static CUresult encode(CUtensorMap* map, int* base, bool swizzled) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) return CUDA_ERROR_NOT_FOUND;
  const cuuint64_t dims[2] = {kCols, kRows}, strides[1] = {kCols * sizeof(int)};
  const cuuint32_t box[2] = {kBoxCols, kBoxRows}, element_strides[2] = {1, 1};
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)(
      map, CU_TENSOR_MAP_DATA_TYPE_INT32, 2, base, dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzled ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static void run_tma(bool swizzled, Mode mode) {
  std::vector<int> h(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) h[i] = (i * 7919) % 1009 - 500;
  int *d, *edge_errors;
  CHECK(cudaMalloc(&d, h.size() * sizeof(int)));
  CHECK(cudaMalloc(&edge_errors, sizeof(int)));
  CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(edge_errors, 0, sizeof(int)));
  alignas(64) CUtensorMap map;
  if (encode(&map, d, swizzled) != CUDA_SUCCESS) fprintf(stderr, "cuTensorMapEncodeTiled failed\n"), exit(1);
  tma_kernel<<<dim3((kCols + kBoxCols - 1) / kBoxCols, (kRows + kBoxRows - 1) / kBoxRows), kBoxCols>>>(map, swizzled, mode, edge_errors);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> got(h.size());
  int edges = -1;
  CHECK(cudaMemcpy(got.data(), d, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&edges, edge_errors, sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int y = 0; y < kRows; ++y)
    for (int x = 0; x < kCols; ++x) wrong += got[y * kCols + x] != h[y * kCols + x] + 1000 * (y % kBoxRows) + x % kBoxCols;
  if (wrong) fprintf(stderr, "tma%s: %d of %d elements wrong\n", swizzled ? " (128-byte swizzle)" : "", wrong, kRows * kCols);
  expect(wrong == 0 && edges == 0, swizzled ? "tma with 128-byte swizzle" : "tma");
  CHECK(cudaFree(d));
  CHECK(cudaFree(edge_errors));
}
#else
static void run_tma(bool, Mode) { printf("tma: not built (libcu++'s TMA functions need sm_90 or later)\n"); }
#endif

int main(int argc, char** argv) {
  const Mode mode = argc < 2                                ? kNormal
                    : !strcmp(argv[1], "early-read")        ? kEarlyRead
                    : !strcmp(argv[1], "no-tx")             ? kNoTx
                    : !strcmp(argv[1], "deadlock")          ? kDeadlock
                                                            : kNormal;
  run_tma(false, mode == kEarlyRead ? kNormal : mode);
  if (mode == kNormal) run_tma(true, mode);

  constexpr int kBlocks = 3, kThreads = 96, kBatches = 5, n = kBlocks * kThreads * kBatches;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i * 31 % 997 - 400;
  int *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(int)));
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  CHECK(cudaMemcpy(in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  auto neighbours_doubled = [&](const char* what) {
    std::vector<int> got(n);
    CHECK(cudaMemcpy(got.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += got[i] != 2 * h[i / kThreads * kThreads + (i % kThreads + 1) % kThreads];
    if (wrong) fprintf(stderr, "%s: %d of %d wrong\n", what, wrong, n);
    expect(wrong == 0, what);
  };
  barrier_kernel<<<kBlocks, kThreads, kThreads * sizeof(int)>>>(out, in, kBatches, mode);
  CHECK(cudaDeviceSynchronize());
  neighbours_doubled("barrier");
  CHECK(cudaMemset(out, 0xff, n * sizeof(int)));
  staged_kernel<<<kBlocks, kThreads, 2 * kThreads * sizeof(int)>>>(out, in, kBatches);
  CHECK(cudaDeviceSynchronize());
  neighbours_doubled("staged");

  constexpr int kTiles = 13;  // n >= 32 * kTiles
  int* sums;
  CHECK(cudaMalloc(&sums, kTiles * sizeof(int)));
  roles_kernel<<<1, 128>>>(sums, in, kTiles);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> got_sums(kTiles);
  CHECK(cudaMemcpy(got_sums.data(), sums, kTiles * sizeof(int), cudaMemcpyDeviceToHost));
  bool sums_ok = true;
  for (int i = 0; i < kTiles; ++i) {
    int s = 0;
    for (int j = 0; j < 32; ++j) s += h[32 * i + j];
    sums_ok = sums_ok && got_sums[i] == s;
  }
  expect(sums_ok, "roles");

  constexpr int kPieces = 5, kThreadThreads = 32, pieces = 2 * kThreadThreads * kPieces;  // n ints >= 4 * pieces
  CHECK(cudaMemset(out, 0xff, n * sizeof(int)));
  thread_kernel<<<2, kThreadThreads, 3 * kThreadThreads * sizeof(int4)>>>(reinterpret_cast<int4*>(out),
                                                                         reinterpret_cast<const int4*>(in), kPieces);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> got(4 * pieces);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < 4 * pieces; ++i) wrong += got[i] != h[i / 4 * 4 + 3 - i % 4];
  expect(wrong == 0, "thread");

  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(sums));
  if (failures) return 1;
  printf("libcu++ async copies: all exact\n");
  return 0;
}
