#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernelab/error.h"
#include "kernelab/op.h"
#include "report/cuda_variants.h"
#include "report/report.h"

namespace fs = std::filesystem;

namespace {

const std::string kLabel = "rows=4096,cols=1024 <&>";

kl::Point make_point(const std::string& variant, const std::string& dtype, double median_s) {
  kl::Point p;
  p.op = "softmax";
  p.variant = variant;
  p.config = "default";
  p.backend = "cpu";
  p.shape = "cols=1024,rows=4096";
  p.dtype = dtype;
  p.label = kLabel;
  p.median_s = median_s;
  p.min_s = median_s * 0.9;
  p.max_s = median_s * 1.3;
  p.p10_s = median_s * 0.95;
  p.p90_s = median_s * 1.1;
  p.runs = 40;
  p.noise = 0.004;
  p.flops = 5.0 * 4096 * 1024;
  p.bytes = 2.0 * 4096 * 1024 * 4;
  p.tflops = p.flops / median_s / 1e12;
  p.gbps = p.bytes / median_s / 1e9;
  p.t_lower_bound_s = p.bytes / 100e9;
  p.pct_of_bound = 100.0 * p.t_lower_bound_s / median_s;
  p.bound = "memory";
  p.max_rel_err = 3.5e-7;
  p.device = "test-cpu";
  p.clocks = "unlocked";
  p.commit = "abc123";
  p.peak_flops = 2e12;
  p.bandwidth = 100e9;
  p.ceilings_source = "measured";
  return p;
}

kl::ReportData make_report() {
  kl::ReportData r;
  r.generated_at = "2024-01-01T00:00:00Z";
  r.commit = "abc123";
  r.host = "testhost";
  r.absent_backends = {"cuda: no CUDA device found"};
  r.check_summary = {"softmax: 12/12 cases passed"};
  for (const std::string dtype : {"f32", "bf16"})
    r.roofs.push_back({"test-cpu", "cpu", dtype, 2e12, 100e9, "measured (fma loop)", "measured (stream copy)"});
  r.points = {make_point("cpu_naive", "f32", 4e-3), make_point("cpu_fused", "f32", 1e-3),
              make_point("cpu_fused", "bf16", 0.5e-3)};
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kernelab-report-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(ReportTest, WritesAllThreeFiles) {
  kl::write_report(make_report(), (dir / "nested").string());
  for (const char* name : {"results.json", "report.md", "index.html"})
    EXPECT_TRUE(fs::is_regular_file(dir / "nested" / name)) << name;
}

TEST_F(ReportTest, ResultsJsonHasEveryDesignKeyWithItsValue) {
  const kl::ReportData r = make_report();
  kl::write_report(r, dir.string());
  const auto j = nlohmann::json::parse(slurp(dir / "results.json"));
  EXPECT_EQ(j.at("commit"), "abc123");
  EXPECT_EQ(j.at("host"), "testhost");
  EXPECT_EQ(j.at("generated_at"), "2024-01-01T00:00:00Z");
  EXPECT_EQ(j.at("absent_backends").at(0), "cuda: no CUDA device found");
  EXPECT_EQ(j.at("check_summary").at(0), "softmax: 12/12 cases passed");
  ASSERT_EQ(j.at("roofs").size(), 2u);
  EXPECT_EQ(j.at("roofs").at(0).at("flops_source"), "measured (fma loop)");
  EXPECT_EQ(j.at("roofs").at(0).at("bandwidth"), 100e9);
  ASSERT_EQ(j.at("points").size(), r.points.size());
  for (size_t i = 0; i < r.points.size(); ++i) {
    const kl::Point& p = r.points[i];
    const auto& q = j.at("points").at(i);
    EXPECT_EQ(q.at("op"), p.op);
    EXPECT_EQ(q.at("variant"), p.variant);
    EXPECT_EQ(q.at("backend"), p.backend);
    EXPECT_EQ(q.at("shape"), p.shape);
    EXPECT_EQ(q.at("dtype"), p.dtype);
    EXPECT_EQ(q.at("median_s"), p.median_s);
    EXPECT_EQ(q.at("flops"), p.flops);
    EXPECT_EQ(q.at("bytes"), p.bytes);
    EXPECT_EQ(q.at("tflops"), p.tflops);
    EXPECT_EQ(q.at("gbps"), p.gbps);
    EXPECT_EQ(q.at("pct_of_bound"), p.pct_of_bound);
    EXPECT_EQ(q.at("max_rel_err"), p.max_rel_err);
    EXPECT_EQ(q.at("device"), p.device);
    EXPECT_EQ(q.at("clocks"), p.clocks);
    EXPECT_EQ(q.at("commit"), p.commit);
    EXPECT_EQ(q.at("label"), p.label);
    EXPECT_EQ(q.at("peer"), p.peer);
    EXPECT_EQ(q.at("p10_s"), p.p10_s);
    EXPECT_EQ(q.at("p90_s"), p.p90_s);
    EXPECT_EQ(q.at("runs"), p.runs);
    EXPECT_EQ(q.at("bound"), p.bound);
    EXPECT_EQ(q.at("ceilings_source"), p.ceilings_source);
    for (const char* key : {"min_s", "max_s", "noise", "t_lower_bound_s", "cold", "peak_flops", "bandwidth"})
      EXPECT_TRUE(q.contains(key)) << key;
  }
}

TEST_F(ReportTest, MarkdownHasLadderAndSpeedups) {
  kl::write_report(make_report(), dir.string());
  const std::string md = slurp(dir / "report.md");
  EXPECT_NE(md.find("softmax — " + kLabel + " — f32 — cpu (test-cpu)"), std::string::npos) << md;
  EXPECT_NE(md.find("softmax — " + kLabel + " — bf16 — cpu (test-cpu)"), std::string::npos) << md;
  EXPECT_NE(md.find("4.00×"), std::string::npos) << md;  // cpu_fused 1 ms against cpu_naive 4 ms
  EXPECT_NE(md.find("| 4.00 ms |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.00 ms |"), std::string::npos) << md;
  EXPECT_NE(md.find("500 µs"), std::string::npos) << md;
  EXPECT_NE(md.find("cuda: no CUDA device found — no GPU figures in this report"), std::string::npos) << md;
  EXPECT_NE(md.find("softmax: 12/12 cases passed"), std::string::npos) << md;
  EXPECT_NE(md.find("measured (stream copy)"), std::string::npos) << md;
}

TEST_F(ReportTest, HtmlHasRooflineAndEscapedText) {
  const kl::ReportData r = make_report();
  kl::write_report(r, dir.string());
  const std::string html = slurp(dir / "index.html");
  EXPECT_EQ(count(html, "<svg"), 2u);  // one chart per roof with points
  EXPECT_EQ(count(html, "<circle"), r.points.size());
  EXPECT_NE(html.find("rows=4096,cols=1024 &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<&>"), std::string::npos);
  EXPECT_NE(html.find("no GPU figures in this report"), std::string::npos);
  EXPECT_NE(html.find("4.00×"), std::string::npos);
  EXPECT_NE(html.find("ridge"), std::string::npos);
  EXPECT_NE(html.find(">1 G<"), std::string::npos);  // a power-of-ten tick on the FLOP/s axis
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);  // no external resources
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

TEST_F(ReportTest, SkipsPointsWithoutFlopsOrTime) {
  kl::ReportData r = make_report();
  r.points[0].flops = 0;
  r.points[1].median_s = 0;
  kl::write_report(r, dir.string());
  EXPECT_EQ(count(slurp(dir / "index.html"), "<circle"), 1u);
}

TEST(Report, UnwritableDirectoryThrowsRuntimeFailure) {
  EXPECT_THROW(kl::write_report(make_report(), "/proc/kernelab-nope"), kl::RuntimeFailure);
}

}  // namespace

// --- the CUDA variants section: simulator, resources, GPU verification from results files ---

namespace {

const kl::CudaVariantRow* find_row(const std::vector<kl::CudaVariantRow>& rows, const std::string& op,
                                   const std::string& variant) {
  for (const auto& r : rows)
    if (r.op == op && r.variant == variant) return &r;
  return nullptr;
}

// The first registered CUDA variant (the report lists every one).
std::pair<std::string, std::string> some_cuda_variant() {
  for (const kl::Op& op : kl::registry())
    for (const kl::Variant& v : op.variants)
      if (v.backend == kl::Backend::cuda) return {op.name, v.name};
  return {};
}

TEST_F(ReportTest, CudaVariantNotYetRunOnAGpuWithoutResults) {
  const auto [op, variant] = some_cuda_variant();
  if (op.empty()) GTEST_SKIP() << "no CUDA variant registered";
  fs::create_directories(dir / "results" / "h200");  // a GPU folder with no file
  kl::CheckTally t;
  t.op = op, t.variant = variant, t.backend = "sim", t.dtype = "fp32", t.passed = 7;
  const auto rows = kl::cuda_variant_rows({t}, "", (dir / "results").string());
  const kl::CudaVariantRow* r = find_row(rows, op, variant);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->gpu, "not yet run on a GPU");
  EXPECT_FALSE(r->gpu_verified);
  EXPECT_EQ(r->simulator, "passes in the simulator (7 of 7 checks)");
  EXPECT_TRUE(r->sim_passed);
  EXPECT_FALSE(r->resources.empty());
  for (const auto& other : rows)
    if (other.variant != variant) { EXPECT_NE(other.simulator.find("not checked"), std::string::npos) << other.simulator; }
}

TEST_F(ReportTest, CudaVariantVerifiedByAResultsFilePoint) {
  const auto [op, variant] = some_cuda_variant();
  if (op.empty()) GTEST_SKIP() << "no CUDA variant registered";
  fs::create_directories(dir / "results" / "h200");
  fs::create_directories(dir / "results" / "cpu");
  nlohmann::json gpu_point = {{"op", op}, {"variant", variant}, {"backend", "cuda"}, {"device", "NVIDIA H200 (fake)"}};
  std::ofstream(dir / "results" / "h200" / "2026-01-02-abc.json") << nlohmann::json{{"points", {gpu_point}}}.dump();
  gpu_point["device"] = "test-cpu";
  gpu_point["backend"] = "sim";  // a simulator point verifies nothing
  std::ofstream(dir / "results" / "cpu" / "2026-03-04-def.json") << nlohmann::json{{"points", {gpu_point}}}.dump();
  std::ofstream(dir / "results" / "cpu" / "broken.json") << "{not json";
  kl::CheckTally t;
  t.op = op, t.variant = variant, t.backend = "sim", t.dtype = "fp32", t.passed = 3, t.failed = 1;
  t.first_failure = "rows=7: max rel err 1";
  std::vector<std::string> notes;
  const auto rows = kl::cuda_variant_rows({t}, "", (dir / "results").string(), &notes);
  const kl::CudaVariantRow* r = find_row(rows, op, variant);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->gpu_verified);
  EXPECT_EQ(r->gpu_device, "NVIDIA H200 (fake)");
  EXPECT_EQ(r->gpu_date, "2026-01-02");
  EXPECT_NE(r->gpu.find("verified on NVIDIA H200 (fake) at 2026-01-02 ("), std::string::npos) << r->gpu;
  EXPECT_NE(r->gpu.find("2026-01-02-abc.json)"), std::string::npos) << r->gpu;
  EXPECT_FALSE(r->sim_passed);
  EXPECT_NE(r->simulator.find("FAILED"), std::string::npos) << r->simulator;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("broken.json"), std::string::npos) << notes[0];

  // The report's three files carry the section.
  kl::ReportData data = make_report();
  data.cuda_variants = rows;
  data.cuda_notes = notes;
  kl::write_report(data, (dir / "out").string());
  const std::string md = slurp(dir / "out" / "report.md");
  EXPECT_NE(md.find("## CUDA variants"), std::string::npos) << md;
  EXPECT_NE(md.find("verified on NVIDIA H200 (fake)"), std::string::npos) << md;
  EXPECT_NE(slurp(dir / "out" / "index.html").find("<h2>CUDA variants</h2>"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(dir / "out" / "results.json"));
  ASSERT_EQ(j.at("cuda_variants").size(), rows.size());
  bool seen = false;
  for (const auto& c : j.at("cuda_variants")) {
    EXPECT_TRUE(c.contains("resources"));
    EXPECT_TRUE(c.contains("static"));
    if (c.at("op") == op && c.at("variant") == variant) {
      seen = true;
      EXPECT_EQ(c.at("gpu_verified"), true);
      EXPECT_EQ(c.at("gpu").at("device"), "NVIDIA H200 (fake)");
      EXPECT_EQ(c.at("gpu").at("date"), "2026-01-02");
    } else {
      EXPECT_EQ(c.at("gpu_status"), "not yet run on a GPU");
      EXPECT_TRUE(c.at("gpu").is_null());
    }
  }
  EXPECT_TRUE(seen);
}

// A GPU check table's failed row outweighs the file's points: the rung is not verified, and says why.
TEST(Report, GpuCheckFailureAndChecksWithoutPoints) {
  const fs::path d = fs::temp_directory_path() / ("kernelab-gpu-checks-" + std::to_string(getpid()));
  fs::create_directories(d / "h200");
  const nlohmann::json points = {{{"op", "o"}, {"variant", "bad"}, {"backend", "cuda"}, {"device", "NVIDIA H200"}}};
  const nlohmann::json checks = {
      {{"op", "o"}, {"variant", "bad"}, {"dtype", "bf16"}, {"status", "ok"}},
      {{"op", "o"}, {"variant", "bad"}, {"dtype", "fp16"}, {"status", "FAIL k=10944,m=7: max_rel_err 0.00412 over tolerance 0.00254"}},
      {{"op", "o"}, {"variant", "good"}, {"dtype", "fp16"}, {"status", "ok"}},
      {{"op", "o"}, {"variant", "good"}, {"dtype", "bf16"}, {"status", "ok"}},
      {{"op", "o"}, {"variant", "good"}, {"dtype", "fp32"}, {"status", "skipped: fp16 or bf16"}}};
  std::ofstream(d / "h200" / "2026-12-04-abc.json") << nlohmann::json{{"points", points}, {"checks", checks}}.dump();
  const auto found = kl::gpu_verifications(d.string());
  ASSERT_EQ(found.count("o/bad"), 1u);
  EXPECT_TRUE(found.at("o/bad").timed);
  EXPECT_EQ(found.at("o/bad").failure, "fp16 FAIL k=10944,m=7: max_rel_err 0.00412 over tolerance 0.00254");
  ASSERT_EQ(found.count("o/good"), 1u);
  EXPECT_FALSE(found.at("o/good").timed);
  EXPECT_EQ(found.at("o/good").checks_passed, 2);
  EXPECT_TRUE(found.at("o/good").failure.empty());
  EXPECT_EQ(found.at("o/good").device, "NVIDIA H200");  // the file's points name the GPU
  fs::remove_all(d);
}

TEST(Report, GpuVerificationPrefersGeneratedAtAndTheNewestFile) {
  const fs::path d = fs::temp_directory_path() / ("kernelab-gpu-verif-" + std::to_string(getpid()));
  fs::create_directories(d / "h200");
  const nlohmann::json p = {{"op", "o"}, {"variant", "v"}, {"backend", "cuda"}};
  std::ofstream(d / "h200" / "a.json") << nlohmann::json{{"generated_at", "2026-05-01T00:00:00Z"}, {"points", {p}}}.dump();
  std::ofstream(d / "h200" / "b.json") << nlohmann::json{{"generated_at", "2026-04-01T00:00:00Z"}, {"points", {p}}}.dump();
  const auto found = kl::gpu_verifications(d.string());
  ASSERT_EQ(found.count("o/v"), 1u);
  EXPECT_EQ(found.at("o/v").date, "2026-05-01T00:00:00Z");
  EXPECT_EQ(found.at("o/v").device, "h200");  // no device in the point: the folder names the GPU
  EXPECT_NE(found.at("o/v").file.find("a.json"), std::string::npos);
  EXPECT_TRUE(kl::gpu_verifications((d / "nope").string()).empty());
  fs::remove_all(d);
}

}  // namespace
