#include "quant/safetensors.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernelab/dtype.h"
#include "kernelab/error.h"

namespace kl::quant {

namespace {

struct RawFile {
  std::vector<SafetensorsEntry> entries;
  uint64_t data_start = 0, data_size = 0;
};

std::string join_shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

RawFile parse_header(const std::string& path, std::ifstream& in) {
  if (!in) bad_input("safetensors: cannot open '" + path + "'");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) bad_input("safetensors: '" + path + "' is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];  // little-endian
  if (len > size - 8)
    bad_input("safetensors: '" + path + "' header length " + std::to_string(len) + " runs past the end of the file (" +
              std::to_string(size) + " bytes)");
  std::string text(len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(len));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad_input("safetensors: '" + path + "' header is not valid JSON: " + e.what());
  }
  if (!j.is_object()) bad_input("safetensors: '" + path + "' header is not a JSON object");
  RawFile f;
  f.data_start = 8 + len;
  f.data_size = size - f.data_start;
  for (const auto& [name, e] : j.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "safetensors: '" + path + "' tensor '" + name + "'";
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") || !e["shape"].is_array() ||
        !e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      bad_input(where + ": wants \"dtype\" (string), \"shape\" (array) and \"data_offsets\" ([begin, end])");
    SafetensorsEntry s;
    s.name = name;
    s.dtype = e["dtype"].get<std::string>();
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned()) bad_input(where + ": shape " + e["shape"].dump() + " is not a list of sizes");
      s.shape.push_back(d.get<int64_t>());
    }
    for (const auto& o : e["data_offsets"])
      if (!o.is_number_unsigned()) bad_input(where + ": data_offsets " + e["data_offsets"].dump() + " are not byte offsets");
    s.begin = e["data_offsets"][0].get<uint64_t>();
    s.end = e["data_offsets"][1].get<uint64_t>();
    if (s.begin > s.end || s.end > f.data_size)
      bad_input(where + ": data_offsets [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
                "] fall outside the data section (" + std::to_string(f.data_size) + " bytes)");
    f.entries.push_back(std::move(s));
  }
  return f;
}

}  // namespace

std::vector<SafetensorsEntry> read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return parse_header(path, in).entries;
}

LoadedTensor read_safetensors_tensor(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  const RawFile f = parse_header(path, in);
  const SafetensorsEntry* e = nullptr;
  std::string names;
  for (const SafetensorsEntry& s : f.entries) {
    if (s.name == name) e = &s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  if (!e) bad_input("safetensors: '" + path + "' has no tensor '" + name + "' (it has: " + (names.empty() ? "none" : names) + ")");
  int width = 0;
  if (e->dtype == "F32") width = 4;
  else if (e->dtype == "F16" || e->dtype == "BF16") width = 2;
  else bad_input("safetensors: tensor '" + name + "' has dtype " + e->dtype + "; quant eval reads F32, F16 and BF16");
  uint64_t count = 1;
  for (int64_t d : e->shape) {
    if (d != 0 && count > (uint64_t(1) << 40) / static_cast<uint64_t>(d)) bad_input("safetensors: tensor '" + name + "' is too large");
    count *= static_cast<uint64_t>(d);
  }
  if (e->end - e->begin != count * static_cast<uint64_t>(width))
    bad_input("safetensors: tensor '" + name + "' of shape " + join_shape(e->shape) + " " + e->dtype + " needs " +
              std::to_string(count * static_cast<uint64_t>(width)) + " bytes but data_offsets span " + std::to_string(e->end - e->begin));
  std::vector<unsigned char> bytes(e->end - e->begin);
  in.seekg(static_cast<std::streamoff>(f.data_start + e->begin));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) runtime_failure("safetensors: reading '" + path + "' failed");
  LoadedTensor t{e->dtype, e->shape, std::vector<double>(count)};
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned char* p = bytes.data() + i * static_cast<uint64_t>(width);
    if (width == 4) {
      const uint32_t u = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      float v;
      std::memcpy(&v, &u, 4);
      t.data[i] = v;
    } else {
      const uint16_t u = static_cast<uint16_t>(p[0] | p[1] << 8);
      t.data[i] = e->dtype == "F16" ? f16_to_float(u) : bf16_to_float(u);
    }
  }
  return t;
}

Matrix read_safetensors_matrix(const std::string& path, const std::string& name) {
  LoadedTensor t = read_safetensors_tensor(path, name);
  if (t.shape.size() != 2 || t.shape[0] < 1 || t.shape[1] < 1)
    bad_input("safetensors: tensor '" + name + "' has shape " + join_shape(t.shape) + "; quant eval needs a 2-D weight (rows x cols)");
  Matrix m;
  m.rows = t.shape[0];
  m.cols = t.shape[1];
  m.v = std::move(t.data);
  return m;
}

}  // namespace kl::quant
