#include "trace/byte_source.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "kernelab/error.h"

namespace kl::trace {

namespace {
constexpr size_t kInChunk = 1 << 18;   // compressed bytes read at a time
constexpr size_t kOutChunk = 1 << 20;  // decompressed bytes handed out at a time

bool gzip_magic(std::string_view s) { return s.size() >= 2 && uint8_t(s[0]) == 0x1f && uint8_t(s[1]) == 0x8b; }
}  // namespace

ByteSource ByteSource::open_file(const std::string& path) {
  ByteSource s;
  s.name_ = path;
  s.file_ = std::fopen(path.c_str(), "rb");
  if (!s.file_) bad_input("cannot read trace file '" + path + "': " + std::strerror(errno));
  s.in_.resize(kInChunk + 1);  // + 1: room to carry one byte of a split member header
  return s;
}

ByteSource ByteSource::from_memory(std::string_view bytes, std::string name) {
  ByteSource s;
  s.name_ = std::move(name);
  s.memory_ = bytes;
  return s;
}

ByteSource::ByteSource(ByteSource&& o) noexcept
    : name_(std::move(o.name_)), file_(o.file_), memory_(o.memory_), raw_done_(o.raw_done_), in_(std::move(o.in_)),
      out_(std::move(o.out_)), started_(o.started_), gzip_(o.gzip_), member_done_(o.member_done_),
      bytes_read_(o.bytes_read_), z_(std::move(o.z_)) {
  o.file_ = nullptr;
}

ByteSource::~ByteSource() {
  if (file_) std::fclose(file_);
  if (z_) inflateEnd(z_.get());
}

std::string_view ByteSource::raw_next() {
  if (raw_done_) return {};
  if (!file_) {
    raw_done_ = true;
    return memory_;
  }
  const size_t n = std::fread(in_.data(), 1, kInChunk, file_);
  if (n == 0) {
    if (std::ferror(file_)) bad_input("cannot read trace file '" + name_ + "': read error");
    raw_done_ = true;
  }
  return {in_.data(), n};
}

std::string_view ByteSource::next() {
  const std::string_view c = chunk();
  bytes_read_ += c.size();
  return c;
}

std::string_view ByteSource::chunk() {
  if (!started_) {
    started_ = true;
    std::string_view first = raw_next();
    // A file read in chunks shorter than the 2-byte magic is not a concern: the first read of a
    // regular file returns min(size, chunk) bytes.
    gzip_ = gzip_magic(first);
    if (!gzip_) return first;
    z_ = std::make_unique<z_stream>();
    std::memset(z_.get(), 0, sizeof(z_stream));
    if (inflateInit2(z_.get(), 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
    z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(first.data()));
    z_->avail_in = static_cast<uInt>(first.size());
    out_.resize(kOutChunk);
    return inflate_next();
  }
  return gzip_ ? inflate_next() : raw_next();
}

// Inflates up to one output chunk. Several gzip members in a row are one stream (as gzip -d
// reads them); anything else after a member, or input that ends inside one, is refused.
std::string_view ByteSource::inflate_next() {
  z_->next_out = reinterpret_cast<Bytef*>(out_.data());
  z_->avail_out = static_cast<uInt>(out_.size());
  while (z_->avail_out > 0) {
    if (z_->avail_in == 0) {
      std::string_view more = raw_next();
      if (more.empty()) {
        if (!member_done_) bad_input("truncated gzip file '" + name_ + "': the compressed stream ends early");
        break;
      }
      z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(more.data()));
      z_->avail_in = static_cast<uInt>(more.size());
    }
    if (member_done_) {  // more input after a complete member: only another member may follow
      if (z_->avail_in < 2 && !raw_done_ && file_) {
        // A member boundary split across reads: keep the byte and read on.
        const char kept = static_cast<char>(*z_->next_in);
        std::string_view more = raw_next();
        std::memmove(in_.data() + 1, more.data(), more.size());
        in_[0] = kept;
        z_->next_in = reinterpret_cast<Bytef*>(in_.data());
        z_->avail_in = static_cast<uInt>(more.size() + 1);
      }
      if (!gzip_magic({reinterpret_cast<char*>(z_->next_in), z_->avail_in}))
        bad_input("gzip file '" + name_ + "' has data after the end of its compressed stream");
      inflateReset(z_.get());
      member_done_ = false;
    }
    const int rc = inflate(z_.get(), Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      member_done_ = true;
    } else if (rc == Z_MEM_ERROR) {
      throw std::bad_alloc();
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      bad_input("corrupt gzip file '" + name_ + "': " + (z_->msg ? z_->msg : "inflate failed"));
    }
  }
  return {out_.data(), out_.size() - z_->avail_out};
}

}  // namespace kl::trace
