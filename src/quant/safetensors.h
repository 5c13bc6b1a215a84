// A reader for the .safetensors format (huggingface/safetensors): 8 bytes little-endian header
// length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]},
// "__metadata__": {...}}, then the data; offsets are relative to the end of the header. Reads F32,
// F16 and BF16 tensors into doubles. Anything malformed is refused with kl::BadInput naming it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/matrix.h"

namespace kl::quant {

struct SafetensorsEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

// The header of `path`, entries sorted by name (the metadata entry left out); BadInput when the
// file is shorter than 8 bytes, the header runs past the end, the JSON is bad or an entry lacks
// a dtype, shape or data_offsets of the right kinds, or offsets fall outside the data.
std::vector<SafetensorsEntry> read_safetensors_header(const std::string& path);

struct LoadedTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<double> data;
};
// BadInput, besides the header's: no tensor `name` (the message lists the names present), a dtype
// other than F32/F16/BF16, or a byte range that does not match shape x dtype size.
LoadedTensor read_safetensors_tensor(const std::string& path, const std::string& name);
// The same, and BadInput unless the tensor is 2-D with both sides at least 1.
Matrix read_safetensors_matrix(const std::string& path, const std::string& name);

}  // namespace kl::quant
