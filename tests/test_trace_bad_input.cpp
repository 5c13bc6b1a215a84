// Bad input to the trace reader: every malformed file is refused with kl::BadInput and a message
// naming the problem, or read as a correct "no GPU activity" report; never a crash or a hang.
// TraceFuzzLoop mutates real inputs deterministically (every truncation, seeded byte flips) so
// the property is checked by every build; the libFuzzer target (tests/fuzz) explores further.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "kernelab/error.h"
#include "trace/analysis.h"
#include "trace/load.h"
#include "trace/report_json.h"

namespace {
using namespace kl::trace;

std::string file_bytes(const std::string& name) {
  std::ifstream f(std::string(KERNELAB_SOURCE_DIR) + "/tests/data/traces/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Report analyze_bytes(const std::string& bytes) {
  ByteSource src = ByteSource::from_memory(bytes, "input");
  return analyze(load_trace(src));
}

// The BadInput message for bytes, or "" when they load.
std::string refusal(const std::string& bytes) {
  try {
    analyze_bytes(bytes);
  } catch (const kl::BadInput& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(bytes, text)                                  \
  do {                                                               \
    const std::string why = refusal(bytes);                          \
    EXPECT_NE(why.find(text), std::string::npos) << "message: " << why; \
  } while (0)

// Found by the libFuzzer target: a kernel name past the findings' 80 bytes with a two-byte
// character (\u00e9) across the cut made the JSON report throw on invalid UTF-8.
TEST(TraceBadInput, LongNamesAreCutBetweenUtf8Characters) {
  const std::string e_acute = "\xC3\xA9";
  EXPECT_EQ(shortened(std::string(76, 'd') + e_acute + "xyz", 80), std::string(76, 'd') + "...");
  EXPECT_EQ(shortened(std::string(75, 'd') + e_acute + "xyzw", 80), std::string(75, 'd') + e_acute + "...");
  EXPECT_EQ(shortened("short " + e_acute, 80), "short " + e_acute);
  const Report r = analyze_bytes(file_bytes("fuzz_utf8_name_cut.json"));
  EXPECT_NO_THROW((void)report_json(r, 0).dump());
}

TEST(TraceBadInput, TruncatedAndCorruptGzip) {
  const std::string gz = file_bytes("two_streams.json.gz");
  ASSERT_GT(gz.size(), 100u);
  EXPECT_REFUSED(gz.substr(0, gz.size() / 2), "truncated gzip");
  EXPECT_REFUSED(gz.substr(0, gz.size() - 4), "truncated gzip");  // the trailer's size field cut
  std::string corrupt = gz;
  for (size_t i = 20; i < 40; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  EXPECT_NE(refusal(corrupt), "");
  EXPECT_REFUSED(gz + "trailing", "data after the end of its compressed stream");
  // Two gzip members decompress as one stream, like gzip -d: here, the document twice.
  EXPECT_REFUSED(gz + gz, "data after the end of the JSON document");
}

TEST(TraceBadInput, InvalidJson) {
  EXPECT_REFUSED("", "the file is empty");
  EXPECT_REFUSED("   \n", "the file is empty");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X",}]})", "at byte 28: expected a member name");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X"})", "expected ',' or ']'");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "dur": 12x}]})", "expected ',' or '}'");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "grid": [01]}]})", "expected ',' or ']'");  // no leading zeros
  EXPECT_REFUSED(R"({"traceEvents": [{"name": "a\qb"}]})", "invalid escape");
  EXPECT_REFUSED("{\"traceEvents\": [{\"name\": \"a\x01\"}]}", "control character");
  EXPECT_REFUSED("{\"traceEvents\": [{\"name\": \"\xc3\x28\"}]}", "invalid UTF-8");
  EXPECT_REFUSED("{\"traceEvents\": [{\"name\": \"\xed\xa0\x80\"}]}", "invalid UTF-8");  // a surrogate
  EXPECT_REFUSED(R"({"traceEvents": []} {})", "data after the end of the JSON document");
  EXPECT_REFUSED(R"({"traceEvents": [], "x": tru})", "invalid literal");
  EXPECT_REFUSED(std::string(100000, '['), "traceEvents[0] is not an event object");  // a bare event array
  EXPECT_REFUSED("{\"traceEvents\": [{\"args\": " + std::string(100000, '['), "nested deeper than 512 levels");
  EXPECT_REFUSED("{\"traceEvents\": [" + std::string(100000, '[') , "not an event object");
}

TEST(TraceBadInput, JsonThatIsNotATrace) {
  EXPECT_REFUSED(R"({"a": 1})", "not a Chrome trace: it has no \"traceEvents\" array");
  EXPECT_REFUSED("42", "single JSON scalar");
  EXPECT_REFUSED(R"("traceEvents")", "single JSON scalar");
  EXPECT_REFUSED(R"({"traceEvents": {}})", "\"traceEvents\" is not an array");
  EXPECT_REFUSED(R"([1, 2])", "traceEvents[0] is not an event object");
  EXPECT_REFUSED(R"({"traceEvents": [], "traceEvents": []})", "a second \"traceEvents\"");
  // Events the analysis needs must be well formed; the message names the event.
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1}]})", "traceEvents[0]: an \"X\" event without \"dur\"");
  EXPECT_REFUSED(R"({"traceEvents": [{}, {"ph": "X", "cat": "kernel", "dur": 1}]})", "traceEvents[1]: an \"X\" event without \"ts\"");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "1", "dur": 1}]})", "\"ts\": time value '\"1\"' is not a number");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": -1}]})", "negative \"dur\"");
  EXPECT_REFUSED(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1e300, "dur": 1}]})", "out of range");
  EXPECT_REFUSED("\x0a\x0b\x08\x01\x12\x07perfetto", "expected a JSON value");  // a Perfetto protobuf trace
}

TEST(TraceBadInput, CpuOnlyAndOtherVendorTracesReportNoGpuActivity) {
  for (const char* name : {"cpu_only.json", "other_vendor.json"}) {
    const Report r = analyze_bytes(file_bytes(name));
    EXPECT_FALSE(r.gpu_activity()) << name;
    EXPECT_EQ(r.kernel_count(), 0u);
    ASSERT_EQ(r.findings.size(), 1u);
    EXPECT_EQ(r.findings[0].kind, "no_gpu_activity");
    const auto j = report_json(r, 10);
    EXPECT_EQ(j["kernel_count"], 0);
    EXPECT_TRUE(j["median_launch_delay_us"].is_null());
    EXPECT_TRUE(j["devices"].empty());
  }
  const Report r = analyze_bytes(file_bytes("cpu_only.json"));
  EXPECT_NE(r.findings[0].text.find("cpu_op 1"), std::string::npos) << r.findings[0].text;
  EXPECT_EQ(analyze_bytes("[]").events, 0u);
  EXPECT_EQ(analyze_bytes(R"({"traceEvents": []})").findings[0].kind, "no_gpu_activity");
}

// Any outcome but a load or a BadInput fails the test (an exception of another type escapes).
void must_load_or_refuse(const std::string& bytes) {
  try {
    const Report r = analyze_bytes(bytes);
    (void)report_json(r, 0).dump();
  } catch (const kl::BadInput&) {
  }
}

TEST(TraceFuzzLoop, EveryTruncation) {
  for (const char* name : {"two_streams.json", "two_streams.json.gz", "two_devices_array.json"}) {
    const std::string bytes = file_bytes(name);
    for (size_t n = 0; n < bytes.size(); ++n) must_load_or_refuse(bytes.substr(0, n));
  }
}

TEST(TraceFuzzLoop, SeededByteMutations) {
  const std::string base = file_bytes("two_streams.json");
  const std::string alphabet = "{}[],:\"\\0123456789.-eEtrufalsn XUu\x80\xff";
  std::mt19937_64 rng(20240601);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.erase(at, 1 + rng() % 8); break;
        default: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (s.empty()) s.push_back('{');
    }
    must_load_or_refuse(s);
  }
}

}  // namespace
