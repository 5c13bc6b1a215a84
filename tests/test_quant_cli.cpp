// `kernelab quant eval` as a user runs it (the table, --json, one format, a .safetensors weight,
// bad input exit 2), and the generator behind it (quant/eval.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli_util.h"
#include "quant/eval.h"

namespace fs = std::filesystem;

namespace {

using ::testing::HasSubstr;

using Result = kl::test::CliResult;
const fs::path& temp_dir() { return kl::test::scratch_dir(); }
Result run(const std::string& args) { return kl::test::run_kernelab(args); }

// The whole --json object: {"weight", "activations", "rows"}.
nlohmann::json run_json(const std::string& args) {
  const Result r = run(args + " --json");
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON (" << e.what() << "):\n" << r.out;
    return nlohmann::json::object({{"rows", nlohmann::json::array()}});
  }
}
nlohmann::json run_rows(const std::string& args) { return run_json(args).at("rows"); }

const char* kSmall = "quant eval --rows 40 --cols 300 --act-rows 8 --seed 5";

using RowKey = std::tuple<std::string, std::string, std::string, std::string, std::string, bool>;
RowKey key_of(const nlohmann::json& r) {
  return {r.at("format"), r.at("granularity"), r.at("zero_point"), r.at("method"), r.at("activations"), r.at("smoothquant")};
}

TEST(QuantCli, TableHasEveryRowWithComputedNumbers) {
  const nlohmann::json all = run_json(kSmall), rows = all.at("rows");
  ASSERT_TRUE(rows.is_array());
  EXPECT_EQ(all["weight"]["rows"], 40);
  EXPECT_EQ(all["weight"]["cols"], 300);
  EXPECT_EQ(all["activations"]["rows"], 8);
  EXPECT_EQ(all["activations"]["seed"], 6);
  std::set<RowKey> want;
  for (const kl::quant::QuantSpec& s : kl::quant::default_specs())
    want.insert({std::string(kl::quant::format_name(s.format)), kl::quant::granularity_name(s.granularity),
                 std::string(kl::quant::zero_point_name(s.zero)), std::string(kl::quant::method_name(s.method)), "fp64", false});
  want.insert({"int8", "channel", "none", "rtn", "int8/token", false});
  want.insert({"int8", "channel", "none", "rtn", "int8/token", true});
  std::set<RowKey> got;
  for (const auto& r : rows) got.insert(key_of(r));
  EXPECT_EQ(got, want);
  EXPECT_EQ(rows.size(), want.size());
  for (const char* f : {"int8", "int4", "fp8e4m3", "fp8e5m2", "mxfp8", "mxfp4", "nvfp4"})
    EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r["format"] == f; })) << f;
  for (const auto& r : rows) {
    for (const char* k : {"format", "granularity", "symmetric", "method", "calc_diff", "rel_err", "cosine", "snr_db", "max_abs_err"})
      ASSERT_TRUE(r.contains(k)) << k << " in " << r.dump();
    EXPECT_EQ(r["symmetric"].get<bool>(), r["zero_point"] == "none");
    // Computed, not placeholders: a nonzero error below the signal, a cosine just under 1.
    EXPECT_GT(r["calc_diff"].get<double>(), 0.0) << r.dump();
    EXPECT_LT(r["calc_diff"].get<double>(), 0.1) << r.dump();
    EXPECT_GT(r["rel_err"].get<double>(), 0.0) << r.dump();
    EXPECT_GT(r["cosine"].get<double>(), 0.9) << r.dump();
    EXPECT_LT(r["cosine"].get<double>(), 1.0) << r.dump();
    EXPECT_GT(r["snr_db"].get<double>(), 5.0) << r.dump();
    EXPECT_GT(r["max_abs_err"].get<double>(), 0.0) << r.dump();
  }
  // More bits, less error: int8 per channel beats int4 per group of 128 (both symmetric RTN).
  auto find = [&](const RowKey& k) {
    for (const auto& r : rows)
      if (key_of(r) == k) return r;
    ADD_FAILURE() << "no row " << std::get<0>(k) << " " << std::get<1>(k);
    return nlohmann::json::object();
  };
  EXPECT_GT(find({"int8", "channel", "none", "rtn", "fp64", false})["snr_db"].get<double>(),
            find({"int4", "group:128", "none", "rtn", "fp64", false})["snr_db"].get<double>());
  // SmoothQuant on the outlier activations lowers the W8A8 GEMM error.
  EXPECT_LT(find({"int8", "channel", "none", "rtn", "int8/token", true})["rel_err"].get<double>(),
            find({"int8", "channel", "none", "rtn", "int8/token", false})["rel_err"].get<double>());
}

TEST(QuantCli, ClipNeverWorseThanRtn) {
  const nlohmann::json rows = run_rows(kSmall);
  std::map<RowKey, nlohmann::json> by;
  for (const auto& r : rows) by[key_of(r)] = r;
  int pairs = 0;
  for (const auto& [k, r] : by) {
    if (std::get<3>(k) != "clip") continue;
    RowKey rk = k;
    std::get<3>(rk) = "rtn";
    ASSERT_TRUE(by.count(rk)) << r.dump();
    EXPECT_LE(r["mse"].get<double>(), by[rk]["mse"].get<double>()) << r.dump();
    EXPECT_GE(r["snr_db"].get<double>(), by[rk]["snr_db"].get<double>()) << r.dump();
    ++pairs;
  }
  EXPECT_EQ(pairs, 12);  // int4: 3 groups x 3 zero points; MXFP8, MXFP4, NVFP4
}

TEST(QuantCli, TextTableHeaderAndRows) {
  const Result r = run(kSmall);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("W 40x300 (student-t:3, seed 5); X 8x300 normal, seed 6"));
  EXPECT_THAT(r.out, HasSubstr("SmoothQuant alpha 0.5"));
  for (const char* s : {"calc_diff", "snr_db", "group:128", "block:128x128", "mxfp4", "nvfp4", "gptq", "awq", "+smoothquant"})
    EXPECT_THAT(r.out, HasSubstr(s));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2 + 1 + static_cast<long>(kl::quant::default_specs().size()) + 2);
}

TEST(QuantCli, OneFormatAndDeterminism) {
  const nlohmann::json a = run_rows("quant eval --rows 17 --cols 333 --format int4 --granularity group:64 --asymmetric --zero-point awq --method clip");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["format"], "int4");
  EXPECT_EQ(a[0]["granularity"], "group:64");
  EXPECT_EQ(a[0]["symmetric"], false);
  EXPECT_EQ(a[0]["zero_point"], "awq");
  EXPECT_EQ(a[0]["method"], "clip");
  EXPECT_EQ(run_rows("quant eval --rows 17 --cols 333 --format int4 --granularity group:64 --asymmetric --zero-point awq --method clip"), a);
  const nlohmann::json b = run_rows("quant eval --rows 17 --cols 333 --seed 2 --format int4 --granularity group:64 --asymmetric --zero-point awq --method clip");
  EXPECT_NE(a[0]["mse"], b[0]["mse"]);
  const nlohmann::json w = run_rows("quant eval --rows 17 --cols 333 --format w8a8 --dist normal");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1]["smoothquant"], true);
  EXPECT_EQ(run_rows("quant eval --rows 9 --cols 40 --format nvfp4")[0]["granularity"], "group:16");
}

void write_safetensors(const fs::path& p, const std::string& header, const std::vector<float>& data) {
  std::ofstream f(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  f << header;
  for (float v : data) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    for (int i = 0; i < 4; ++i) f.put(static_cast<char>((u >> (8 * i)) & 0xFF));
  }
}

TEST(QuantCli, SafetensorsWeight) {
  std::vector<float> data(24 * 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.37f * static_cast<float>(i) + 1.0f) * (1.0f + (i % 13 == 0 ? 9.0f : 0.0f));
  const std::string bytes = std::to_string(data.size() * 4);
  const fs::path p = temp_dir() / "w.safetensors";
  write_safetensors(p, "{\"layer.weight\":{\"dtype\":\"F32\",\"shape\":[24,64],\"data_offsets\":[0," + bytes + "]}," +
                           "\"cube\":{\"dtype\":\"F32\",\"shape\":[4,4,96],\"data_offsets\":[0," + bytes + "]}," +
                           "\"x\":{\"dtype\":\"F32\",\"shape\":[8,64],\"data_offsets\":[0,2048]}," +
                           "\"x32\":{\"dtype\":\"F32\",\"shape\":[16,32],\"data_offsets\":[0,2048]}}", data);
  const nlohmann::json one = run_json("quant eval --safetensors '" + p.string() + "' --tensor layer.weight --format int8 --act-rows 4");
  ASSERT_EQ(one["rows"].size(), 1u);
  EXPECT_EQ(one["weight"]["rows"], 24);
  EXPECT_EQ(one["weight"]["cols"], 64);
  EXPECT_THAT(one["weight"]["source"].get<std::string>(), HasSubstr("layer.weight"));
  const nlohmann::json with_x = run_json("quant eval --safetensors '" + p.string() + "' --tensor layer.weight --activations x --format w8a8");
  ASSERT_EQ(with_x["rows"].size(), 2u);
  EXPECT_EQ(with_x["activations"]["rows"], 8);
  EXPECT_EQ(with_x["activations"]["source"], "x");
  Result r = run("quant eval --safetensors '" + p.string() + "' --tensor layer.weight --activations x32");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("activations have 32 columns, the weight 64"));
  r = run("quant eval --safetensors '" + p.string() + "' --tensor nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no tensor 'nope' (it has: cube, layer.weight, x, x32)"));
  r = run("quant eval --safetensors '" + p.string() + "' --tensor cube");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs a 2-D weight"));
  data[70] = std::numeric_limits<float>::infinity();
  write_safetensors(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[24,64],\"data_offsets\":[0," + bytes + "]}}", data);
  r = run("quant eval --safetensors '" + p.string() + "' --tensor w");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("weight element (1, 6) is inf"));
}

TEST(QuantCli, BadInputExitsTwoNamingTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--format int3", "int3"},
      {"--format int4 --granularity group:0", "group size"},
      {"--format int4 --granularity rows", "rows"},
      {"--format fp8e4m3 --asymmetric", "symmetric"},
      {"--format mxfp4 --granularity group:64", "fixed blocks"},
      {"--format int4 --method best", "best"},
      {"--format int4 --zero-point awq", "--zero-point needs --asymmetric"},
      {"--format int4 --asymmetric --zero-point xyz", "xyz"},
      {"--granularity channel", "need --format"},
      {"--format w8a8 --method clip", "w8a8"},
      {"--dist student-t:0", "degrees of freedom"},
      {"--dist cauchy", "cauchy"},
      {"--rows 0", "--rows"},
      {"--rows 100000 --cols 100000", "2^26"},
      {"--symmetric --asymmetric --format int4", "excludes"},
      {"--alpha 2", "alpha"},
      {"--tensor w", "--tensor needs --safetensors"},
      {"--activations x", "--activations needs --safetensors"},
      {"--safetensors /nonexistent/w.safetensors", "--safetensors needs --tensor"},
      {"--safetensors /nonexistent/w.safetensors --tensor w", "cannot open"},
      {"--safetensors x.safetensors --tensor w --rows 5", "excludes"},
  };
  for (const auto& [args, what] : cases) {
    // A small generated weight unless the case brings its own shape or file.
    const bool own = args.find("--rows") != std::string::npos || args.find("--safetensors") != std::string::npos;
    const Result r = run(std::string("quant eval ") + (own ? "" : "--rows 8 --cols 16 ") + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(what)) << args;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

// The generator: seeded and repeatable, never zero; normal has unit variance and Student-t(3)
// the heavier tails (a larger share beyond 4).
TEST(QuantEval, GeneratorDistributions) {
  using kl::quant::Distribution;
  const auto n = kl::quant::generate(200, 500, {Distribution::Kind::normal, 0}, 9);
  const auto t = kl::quant::generate(200, 500, {Distribution::Kind::student_t, 3}, 9);
  EXPECT_EQ(n.v, kl::quant::generate(200, 500, {Distribution::Kind::normal, 0}, 9).v);
  EXPECT_NE(n.v, kl::quant::generate(200, 500, {Distribution::Kind::normal, 0}, 10).v);
  double mean = 0, var = 0;
  for (double x : n.v) mean += x;
  mean /= static_cast<double>(n.v.size());
  for (double x : n.v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(n.v.size());
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  auto tail = [](const std::vector<double>& v) { return std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) > 4; }); };
  EXPECT_LT(tail(n.v), 30);    // normal: P(|x| > 4) = 6.3e-5, about 6 of 1e5
  EXPECT_GT(tail(t.v), 1000);  // Student-t(3): P(|x| > 4) = 0.028, about 2800
  for (double x : t.v) ASSERT_NE(x, 0.0);
  EXPECT_EQ(kl::quant::distribution_name(kl::quant::parse_distribution("student-t:3")), "student-t:3");
  EXPECT_EQ(kl::quant::distribution_name(kl::quant::parse_distribution("normal")), "normal");
}

}  // namespace
