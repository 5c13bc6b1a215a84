// Tensors: shape, strides (in elements), dtype and storage on the host or a device.
// Storage carries guard bytes before and after the data, on the host and on a device: a kernel
// that writes out of bounds is caught by check_guards(). int4 tensors pack two elements per byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernelab/dtype.h"

namespace kl {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "1024x768"
int64_t shape_numel(const Shape& s);

enum class Where { host, device };

// The value of every guard byte, host and device.
inline constexpr uint8_t kGuardByte = 0xA5;

// A block of bytes. Device buffers are made by a backend that supplies the free function and
// the guard check (it reads the guard bytes back from the device).
struct Buffer {
  std::byte* base = nullptr;  // allocation start (guards included)
  std::byte* data = nullptr;  // first data byte
  size_t bytes = 0;           // data bytes
  size_t guard = 0;           // guard bytes on each side, kGuardByte each
  Where where = Where::host;
  std::function<void(std::byte*)> release;
  std::function<bool(const Buffer&)> guards_intact;  // null: no guards to check
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
};

class Tensor {
 public:
  Tensor() = default;
  // Contiguous row-major host tensor; data uninitialised.
  static Tensor host(DType t, Shape shape);
  // Host tensor with explicit strides (elements), e.g. a column-major matrix {M,K} with {1,M}.
  static Tensor host_strided(DType t, Shape shape, std::vector<int64_t> strides);
  // Wraps storage made elsewhere (device memory from a backend).
  static Tensor wrap(DType t, Shape shape, std::vector<int64_t> strides, std::shared_ptr<Buffer> buf);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return buf_ ? buf_->bytes : 0; }
  Where where() const { return buf_ ? buf_->where : Where::host; }
  bool empty() const { return !buf_; }
  bool row_major() const;  // contiguous, last dimension fastest

  void* data() { return buf_->data; }
  const void* data() const { return buf_->data; }
  template <class T> T* as() { return reinterpret_cast<T*>(buf_->data); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(buf_->data); }

  // Offset in elements of a multi-index (strides applied).
  int64_t offset(std::initializer_list<int64_t> idx) const;
  // Host element access through double (slow; for references and checks).
  double get(int64_t storage_index) const { return load_as_double(dtype_, data(), storage_index); }
  void set(int64_t storage_index, double v) { store_from_double(dtype_, data(), storage_index, v); }

  void fill_bytes(uint8_t byte);  // host only
  void poison();                  // host only: NaN for floats, a fixed pattern for integers
  // Guard bytes untouched (on a device, read back from it: RuntimeFailure if that fails).
  bool check_guards() const;
  Tensor clone() const;           // host only: same shape, strides, data

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<int64_t> strides_;
  std::shared_ptr<Buffer> buf_;
};

}  // namespace kl
