// The .safetensors reader (quant/safetensors.h): one good file written by a tiny writer here and
// read back bit for bit in each dtype, and a refusal (kl::BadInput, naming the problem) for each
// way a file can be malformed.
#include "quant/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "kernelab/dtype.h"
#include "kernelab/error.h"

namespace fs = std::filesystem;

namespace {

using ::testing::HasSubstr;

const fs::path& temp_dir() { return kl::test::scratch_dir(); }

void write_raw(const fs::path& p, const std::string& header, const std::string& data, uint64_t claimed_len) {
  std::ofstream f(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((claimed_len >> (8 * i)) & 0xFF));
  f << header << data;
}
void write_raw(const fs::path& p, const std::string& header, const std::string& data) { write_raw(p, header, data, header.size()); }

std::string le_bytes(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// Expects read_safetensors_matrix to refuse `p` with a message containing `what`.
void expect_refused(const fs::path& p, const std::string& name, const std::string& what) {
  try {
    kl::quant::read_safetensors_matrix(p.string(), name);
    ADD_FAILURE() << p << ": accepted, expected a refusal about '" << what << "'";
  } catch (const kl::BadInput& e) {
    EXPECT_THAT(e.what(), HasSubstr(what)) << p;
  }
}

TEST(QuantSafetensors, GoodFileRoundTripInEveryDtype) {
  const std::vector<float> vals = {1.5f, -2.25f, 0.0078125f, 1000.0f, -0.5f, 3.0f};  // exact in F16 and BF16
  std::string data, header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t off = 0;
  for (const char* dt : {"F32", "F16", "BF16"}) {
    std::string bytes;
    for (float v : vals) {
      if (std::string(dt) == "F32") {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        bytes += le_bytes(u, 4);
      } else {
        bytes += le_bytes(std::string(dt) == "F16" ? kl::float_to_f16(v) : kl::float_to_bf16(v), 2);
      }
    }
    header += ",\"w_" + std::string(dt) + "\":{\"dtype\":\"" + dt + "\",\"shape\":[2,3],\"data_offsets\":[" +
              std::to_string(off) + "," + std::to_string(off + bytes.size()) + "]}";
    off += bytes.size();
    data += bytes;
  }
  header += ",\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  const fs::path p = temp_dir() / "good.safetensors";
  write_raw(p, header, data);
  const auto entries = kl::quant::read_safetensors_header(p.string());
  ASSERT_EQ(entries.size(), 4u);
  for (const char* dt : {"F32", "F16", "BF16"}) {
    const kl::quant::Matrix m = kl::quant::read_safetensors_matrix(p.string(), std::string("w_") + dt);
    EXPECT_EQ(m.rows, 2);
    EXPECT_EQ(m.cols, 3);
    for (size_t i = 0; i < vals.size(); ++i) EXPECT_EQ(m.v[i], vals[i]) << dt << " element " << i;
  }
  const kl::quant::LoadedTensor v = kl::quant::read_safetensors_tensor(p.string(), "v");
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(v.data, (std::vector<double>{1.5, -2.25}));
  expect_refused(p, "v", "needs a 2-D weight");  // a 1-D tensor is refused for eval
}

TEST(QuantSafetensors, RefusesEveryMalformedFile) {
  const fs::path d = temp_dir();
  { std::ofstream(d / "short.safetensors", std::ios::binary) << "abc"; }
  expect_refused(d / "short.safetensors", "w", "shorter than the 8-byte header length");

  write_raw(d / "past.safetensors", "{}", "", 4096);
  expect_refused(d / "past.safetensors", "w", "runs past the end");

  write_raw(d / "json.safetensors", "{\"w\": {\"dtype\": ", "");
  expect_refused(d / "json.safetensors", "w", "not valid JSON");

  write_raw(d / "array.safetensors", "[1,2]", "");
  expect_refused(d / "array.safetensors", "w", "not a JSON object");

  write_raw(d / "fields.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1]}}", "abcd");
  expect_refused(d / "fields.safetensors", "w", "data_offsets");

  const std::string good_entry = "\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}";
  write_raw(d / "names.safetensors", "{" + good_entry + ",\"bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", std::string(8, '\0'));
  expect_refused(d / "names.safetensors", "missing", "has no tensor 'missing' (it has: bias, w)");

  write_raw(d / "outside.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,16]}}", std::string(8, '\0'));
  expect_refused(d / "outside.safetensors", "w", "outside the data section");

  write_raw(d / "reversed.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[8,0]}}", std::string(8, '\0'));
  expect_refused(d / "reversed.safetensors", "w", "outside the data section");

  write_raw(d / "size.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", std::string(8, '\0'));
  expect_refused(d / "size.safetensors", "w", "needs 16 bytes but data_offsets span 8");

  write_raw(d / "dtype.safetensors", "{\"w\":{\"dtype\":\"I32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", std::string(8, '\0'));
  expect_refused(d / "dtype.safetensors", "w", "dtype I32");

  write_raw(d / "shape3.safetensors", "{\"w\":{\"dtype\":\"F16\",\"shape\":[1,2,2],\"data_offsets\":[0,8]}}", std::string(8, '\0'));
  expect_refused(d / "shape3.safetensors", "w", "needs a 2-D weight");

  write_raw(d / "negshape.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1,2],\"data_offsets\":[0,8]}}", std::string(8, '\0'));
  expect_refused(d / "negshape.safetensors", "w", "not a list of sizes");

  expect_refused(d / "does-not-exist.safetensors", "w", "cannot open");
}

}  // namespace
