// The bytes of a trace file, delivered in chunks: plain JSON as read, gzip inflated on the fly
// (recognised by its magic bytes, not by the file name). Memory: two fixed buffers, whatever the
// file size. Errors are BadInput naming the file and what is wrong with it.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kl::trace {

class ByteSource {
 public:
  static ByteSource open_file(const std::string& path);  // BadInput if it cannot be read
  static ByteSource from_memory(std::string_view bytes, std::string name = "<memory>");
  ByteSource(ByteSource&&) noexcept;
  ByteSource& operator=(ByteSource&&) = delete;
  ~ByteSource();

  // The next chunk of (decompressed) bytes, valid until the next call; empty at the end.
  std::string_view next();
  const std::string& name() const { return name_; }
  bool gzip() const { return gzip_; }
  uint64_t bytes_read() const { return bytes_read_; }  // (decompressed) bytes handed out so far

 private:
  ByteSource() = default;
  std::string_view raw_next();  // the next chunk of the file itself
  std::string_view inflate_next();
  std::string_view chunk();

  std::string name_;
  std::FILE* file_ = nullptr;
  std::string_view memory_;  // from_memory: all of the input
  bool raw_done_ = false;
  std::vector<char> in_, out_;
  bool started_ = false, gzip_ = false, member_done_ = false;
  uint64_t bytes_read_ = 0;
  std::unique_ptr<z_stream> z_;
};

}  // namespace kl::trace
