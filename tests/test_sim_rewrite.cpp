// The .cu → C++ rewrite of `kernelab sim run`: launches with templated kernels and nested
// brackets in the configuration, `<<<` inside literals and comments left alone, dynamic
// shared memory declarations, the poison after block-scope static shared ones, and line
// numbers that still match the user's file.
#include "test_sim_util.h"
#if KERNELAB_HAVE_SIM
#include <gmock/gmock.h>

#include <algorithm>

#include "kernelab/error.h"
#include "sim/run/rewrite.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string rw(const std::string& src) { return kl::sim::rewrite_cuda(src, "prog.cu"); }

TEST(SimRewrite, PlainLaunchesGetDefaultsForSharedMemoryAndStream) {
  EXPECT_EQ(rw("k<<<g, b>>>(x, y);"), "#line 1 \"prog.cu\"\n::kl::sim::launch_any(\"k\", KL_SIM_KERNEL(k), g, b, 0, 0, x, y);");
  EXPECT_THAT(rw("k<<<1, 2, smem>>>();"), HasSubstr("launch_any(\"k\", KL_SIM_KERNEL(k), 1, 2, smem, 0)"));
  EXPECT_THAT(rw("ns::k <<< 1, 2, 0, s >>> (a);"), HasSubstr("launch_any(\"ns::k\", KL_SIM_KERNEL(ns::k), 1, 2, 0, s, a)"));
}

TEST(SimRewrite, TemplatedKernelsAndNestedBrackets) {
  EXPECT_THAT(rw("block_sum<256, float><<<blocks, 256>>>(in, out, n);"),
              HasSubstr("launch_any(\"block_sum<256, float>\", KL_SIM_KERNEL(block_sum<256, float>), blocks, 256, 0, 0, in, out, n)"));
  EXPECT_THAT(rw("k<T, std::array<int, 2>><<<dim3((n + 255) / 256, f(a, b)), std::min<int>(n, 256), s(x, y)>>>(p, q);"),
              HasSubstr("launch_any(\"k<T, std::array<int, 2>>\", KL_SIM_KERNEL(k<T, std::array<int, 2>>), dim3((n + 255) / 256, f(a, b)), "
                        "std::min<int>(n, 256), s(x, y), 0, p, q)"));
  EXPECT_THAT(rw("k<<<a < b ? 1 : 2, 32>>>(v);"), HasSubstr("launch_any(\"k\", KL_SIM_KERNEL(k), a < b ? 1 : 2, 32, 0, 0, v)"));
  EXPECT_THAT(rw("k<<<1, 1>>>(f(a, g<<1), s[\"<<<\"]);"), HasSubstr("launch_any(\"k\", KL_SIM_KERNEL(k), 1, 1, 0, 0, f(a, g<<1), s[\"<<<\"])"));
}

TEST(SimRewrite, ALoneNullArgumentBecomesNullptr) {
  EXPECT_THAT(rw("k<<<1, 1>>>(NULL, n, f(NULL), NULL_X,\n NULL );"),
              HasSubstr("KL_SIM_KERNEL(k), 1, 1, 0, 0, nullptr, n, f(NULL), NULL_X,\n nullptr )"));
}

TEST(SimRewrite, LiteralsAndCommentsAreLeftAlone) {
  const std::string src = "printf(\"k<<<1,1>>>()\\n\"); // k<<<1,1>>>()\n/* k<<<1,1>>>() */ char c = '<'; auto r = R\"x(k<<<1,1>>>())x\";";
  EXPECT_EQ(rw(src), "#line 1 \"prog.cu\"\n" + src);
}

TEST(SimRewrite, EveryLineKeepsItsNumber) {
  const std::string src = "int a;\nk<<<grid,\n  block,\n  0>>>\n(x,\n y);\nint after_launch;\n";
  const std::string out = rw(src);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(src.begin(), src.end(), '\n') + 1);
  const auto line_of = [&](const std::string& s, const std::string& what) {
    return std::count(s.begin(), s.begin() + long(s.find(what)), '\n');
  };
  EXPECT_EQ(line_of(out, "after_launch"), line_of(src, "after_launch") + 1) << out;
  EXPECT_EQ(line_of(out, "y)"), line_of(src, "y)") + 1);
}

TEST(SimRewrite, DynamicSharedMemoryDeclarations) {
  EXPECT_THAT(rw("extern __shared__ float s[];"),
              HasSubstr("static thread_local float*& s = ::kl::sim::dynamic_shared<float>();"));
  EXPECT_THAT(rw("extern __shared__ __align__(16) unsigned char buf [];"),
              HasSubstr("static thread_local unsigned char*& buf = ::kl::sim::dynamic_shared<unsigned char>();"));
  EXPECT_THAT(rw("extern __shared__ alignas(sizeof(float4)) T smem[];"),
              HasSubstr("static thread_local T*& smem = ::kl::sim::dynamic_shared<T>();"));
  EXPECT_THAT(rw("extern float __shared__ smem[];"),  // the CUDA samples' order
              HasSubstr("static thread_local float*& smem = ::kl::sim::dynamic_shared<float>();"));
  EXPECT_THAT(rw("extern __shared__ half shmem[][CHUNK_K * K + SKEW];"),  // cudaTensorCoreGemm's rows of a fixed length
              HasSubstr("static thread_local half (*&shmem)[CHUNK_K * K + SKEW] = reinterpret_cast<half (*&)[CHUNK_K * K + "
                        "SKEW]>(::kl::sim::dynamic_shared<half>());"));
  EXPECT_EQ(rw("extern int count;"), "#line 1 \"prog.cu\"\nextern int count;");
  EXPECT_EQ(rw("extern \"C\" int f();"), "#line 1 \"prog.cu\"\nextern \"C\" int f();");
  EXPECT_EQ(rw("static __shared__ int x[4];"), "#line 1 \"prog.cu\"\n       __shared__ int x[4];") << "static is implied";
}

TEST(SimRewrite, BlockScopeStaticSharedIsPoisonedOnItsOwnLine) {
  EXPECT_EQ(rw("__global__ void k() {\n  __shared__ float s[4];\n  s[0] = 1;\n}\n"),
            "#line 1 \"prog.cu\"\n__global__ void k() {\n  __shared__ float s[4]; ::kl::sim::poison_shared_once(&s, sizeof s);\n"
            "  s[0] = 1;\n}\n");
  EXPECT_THAT(rw("void f() { static __shared__ __align__(16) T tile[N][M + 1]; }"),
              HasSubstr("{        __shared__ __align__(16) T tile[N][M + 1]; ::kl::sim::poison_shared_once(&tile, sizeof tile); }"));
  EXPECT_THAT(rw("void f() { if (x) { __shared__ Pair<int, float> p[2], q; } }"),
              HasSubstr("p[2], q; ::kl::sim::poison_shared_once(&p, sizeof p); ::kl::sim::poison_shared_once(&q, sizeof q); }"));
  EXPECT_THAT(rw("namespace a { template <int N> __device__ void f() { __shared__ volatile int flag; } }"),
              HasSubstr("flag; ::kl::sim::poison_shared_once(&flag, sizeof flag); }"));
  EXPECT_THAT(rw("void f() { __shared__ float s[N] __attribute__((aligned(16))); }"),
              HasSubstr("::kl::sim::poison_shared_once(&s, sizeof s); }"));
  EXPECT_THAT(rw("void f() { extern __shared__ float d[]; }"), Not(HasSubstr("poison_shared_once")));
  // nvcc takes `__shared__ alignas(N)` (the Programming Guide's TMA example); GCC wants the attribute first.
  EXPECT_THAT(rw("void f() { __shared__ alignas(128) int box[8][32]; }"),
              HasSubstr("{ alignas(128) __shared__ int box[8][32]; ::kl::sim::poison_shared_once(&box, sizeof box); }"));
  EXPECT_THAT(rw("__shared__  alignas(16) float g[4];"), HasSubstr("alignas(16) __shared__ float g[4];"));
  const std::string split = "void f() {\n  __shared__ float\n    a[8];\n  int after;\n}\n";
  const std::string out = rw(split);
  EXPECT_THAT(out, HasSubstr("\n    a[8]; ::kl::sim::poison_shared_once(&a, sizeof a);\n  int after;")) << "on the line of the ';'";
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(split.begin(), split.end(), '\n') + 1);
}

TEST(SimRewrite, FileScopeSharedIsLeftUnpoisoned) {
  for (const std::string src : {"__shared__ int x[4];", "namespace a::b { __shared__ int x[4]; }",
                                "extern \"C\" { __shared__ int x; }", "inline namespace { struct S { int y; }; __shared__ int x; }",
                                "static __shared__ int x[4];"})
    EXPECT_THAT(rw(src), Not(HasSubstr("poison_shared_once"))) << src;
}

TEST(SimRewrite, MalformedLaunchesNameTheLine) {
  try {
    rw("int a;\n\nk<<<1, 2;\n");
    FAIL() << "no error";
  } catch (const kl::BadInput& e) {
    EXPECT_THAT(e.what(), HasSubstr("prog.cu:3: no '>>>' closes this '<<<'"));
  }
  EXPECT_THROW(rw("k<<<1>>>(x);"), kl::BadInput);
  EXPECT_THROW(rw("k<<<1, 2, 3, 4, 5>>>(x);"), kl::BadInput);
  EXPECT_THROW(rw("k<<<1, 2>>>;"), kl::BadInput);
}

}  // namespace
#endif
