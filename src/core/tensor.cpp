#include "kernelab/tensor.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kernelab/error.h"

namespace kl {

namespace {
constexpr size_t kGuardBytes = 64;
constexpr size_t kHugePage = size_t{2} << 20;

bool host_guards_intact(const Buffer& b) {
  for (size_t i = 0; i < b.guard; ++i)
    if (static_cast<uint8_t>(b.base[i]) != kGuardByte || static_cast<uint8_t>(b.data[b.bytes + i]) != kGuardByte)
      return false;
  return true;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// Elements the storage must hold for these strides: 1 + sum (shape_i - 1) * stride_i.
int64_t storage_span(const Shape& s, const std::vector<int64_t>& st) {
  int64_t span = 1;
  for (size_t i = 0; i < s.size(); ++i) span += (s[i] - 1) * st[i];
  return span;
}

std::shared_ptr<Buffer> host_buffer(size_t bytes) {
  auto b = std::make_shared<Buffer>();
  // Large buffers sit on 2 MiB pages where the kernel allows it: a strided walk (a transpose's
  // columns) then misses the TLB once per 2 MiB instead of once per 4 KiB.
  const size_t total = bytes + 2 * kGuardBytes;
  const size_t align = total >= kHugePage ? kHugePage : 64;
  b->base = static_cast<std::byte*>(std::aligned_alloc(align, (total + align - 1) / align * align));
  if (!b->base) runtime_failure("out of host memory allocating " + std::to_string(bytes) + " bytes");
  if (align == kHugePage) madvise(b->base, (total + align - 1) / align * align, MADV_HUGEPAGE);
  b->guard = kGuardBytes;
  b->data = b->base + kGuardBytes;
  b->bytes = bytes;
  b->where = Where::host;
  b->release = [](std::byte* p) { std::free(p); };
  b->guards_intact = host_guards_intact;
  std::memset(b->base, kGuardByte, kGuardBytes);
  std::memset(b->data + bytes, kGuardByte, kGuardBytes);
  return b;
}
}  // namespace

Buffer::~Buffer() {
  if (base && release) release(base);
}

std::string shape_str(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out.empty() ? "scalar" : out;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor Tensor::host(DType t, Shape shape) {
  auto strides = row_major_strides(shape);
  return host_strided(t, std::move(shape), std::move(strides));
}

Tensor Tensor::host_strided(DType t, Shape shape, std::vector<int64_t> strides) {
  if (strides.size() != shape.size()) bad_input("tensor strides do not match its shape " + shape_str(shape));
  for (int64_t d : shape)
    if (d <= 0) bad_input("tensor dimension must be positive in shape " + shape_str(shape));
  int64_t elems = storage_span(shape, strides);
  return wrap(t, std::move(shape), std::move(strides), host_buffer(dtype_storage_bytes(t, elems)));
}

Tensor Tensor::wrap(DType t, Shape shape, std::vector<int64_t> strides, std::shared_ptr<Buffer> buf) {
  Tensor x;
  x.dtype_ = t;
  x.shape_ = std::move(shape);
  x.strides_ = strides.empty() ? row_major_strides(x.shape_) : std::move(strides);
  x.buf_ = std::move(buf);
  return x;
}

bool Tensor::row_major() const { return strides_ == row_major_strides(shape_); }

int64_t Tensor::offset(std::initializer_list<int64_t> idx) const {
  int64_t off = 0;
  size_t i = 0;
  for (int64_t v : idx) off += v * strides_.at(i++);
  return off;
}

namespace {
// p[0, n) = v, on every core from 1 MiB: an output's first touch (its pages faulted in and zeroed
// by the kernel) is most of poisoning one, and the cores fault them in side by side; below, waking
// the threads would cost more than the fill (the simulator tests poison many small tensors).
template <class T> void fill_parallel(T* p, size_t n, T v) {
#pragma omp parallel for schedule(static) if (n * sizeof(T) >= (size_t(1) << 20))
  for (size_t i = 0; i < n; ++i) p[i] = v;
}
}  // namespace

void Tensor::fill_bytes(uint8_t byte) { fill_parallel(reinterpret_cast<uint8_t*>(buf_->data), buf_->bytes, byte); }

void Tensor::poison() {
  switch (dtype_) {
    case DType::f64: fill_parallel(as<double>(), nbytes() / 8, std::numeric_limits<double>::quiet_NaN()); return;
    case DType::f32: fill_parallel(as<float>(), nbytes() / 4, std::numeric_limits<float>::quiet_NaN()); return;
    case DType::f16: fill_bytes(0xFF); return;   // 0xFFFF: a NaN
    case DType::bf16: fill_bytes(0xFF); return;  // 0xFFFF: a NaN
    case DType::e4m3: fill_bytes(0x7F); return;  // NaN
    case DType::e5m2: fill_bytes(0x7F); return;  // NaN
    case DType::i8:
    case DType::i4:
    case DType::i32: fill_bytes(0x5A); return;    // an unlikely pattern
  }
}

bool Tensor::check_guards() const { return !buf_ || !buf_->guards_intact || buf_->guards_intact(*buf_); }

Tensor Tensor::clone() const {
  Tensor x = host_strided(dtype_, shape_, strides_);
  std::memcpy(x.data(), data(), nbytes());
  return x;
}

}  // namespace kl
