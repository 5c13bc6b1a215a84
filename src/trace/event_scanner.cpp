#include "trace/event_scanner.h"

#include <fmt/format.h>

#include <cstdint>

#include "kernelab/error.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace kl::trace {

namespace {

bool is_digit(int c) { return c >= '0' && c <= '9'; }
bool is_ws(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string describe(int c) {
  if (c < 0) return "the end of the input";
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

class Scanner {
 public:
  Scanner(ByteSource& src, const ScanCallbacks& cb) : src_(src), cb_(cb) {}

  void document() {
    skip_ws();
    const int c = peek();
    if (c < 0) fail("the file is empty");
    if (c == '[') {
      events_array(1);
    } else if (c == '{') {
      top_object();
    } else {
      value(0);
      fail("the document is a single JSON scalar, not a trace (an object with \"traceEvents\" or an array of events)");
    }
    skip_ws();
    if (peek() >= 0) fail("data after the end of the JSON document");
    if (!saw_events_) bad_input(fmt::format("{} is JSON but not a Chrome trace: it has no \"traceEvents\" array", src_.name()));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    bad_input(fmt::format("invalid trace {}: at byte {}: {}", src_.name(), offset(), what));
  }
  uint64_t offset() const { return base_ + pos_; }

  int peek() {
    if (pos_ < buf_.size()) return static_cast<uint8_t>(buf_[pos_]);
    return refill() ? static_cast<uint8_t>(buf_[pos_]) : -1;
  }
  int get() {
    const int c = peek();
    if (c >= 0) ++pos_;
    return c;
  }
  bool refill() {
    if (capturing_) capture_.append(buf_.substr(capture_from_));
    base_ += buf_.size();
    buf_ = src_.next();
    pos_ = 0;
    capture_from_ = 0;
    return !buf_.empty();
  }
  void begin_capture() {
    capture_.clear();
    capturing_ = true;
    capture_from_ = pos_;
  }
  std::string_view end_capture() {
    capture_.append(buf_.substr(capture_from_, pos_ - capture_from_));
    capturing_ = false;
    const size_t n = capture_.size();
    capture_.append(kEventPadding, ' ');
    return {capture_.data(), n};
  }

  void skip_ws() {
    while (is_ws(peek())) ++pos_;
  }
  void expect(char want, const char* context) {
    const int c = get();
    if (c != want) fail(fmt::format("expected '{}' {}, found {}", want, context, describe(c)));
  }

  // From an opening '{' or '[' to its closing bracket. item(index) reads each member or element
  // (whitespace before it skipped); where(index) names the place in the error for a bad separator.
  template <class Item, class Where>
  void sequence(char close, Item item, Where where) {
    ++pos_;  // '{' or '['
    skip_ws();
    if (peek() == close) {
      ++pos_;
      return;
    }
    for (size_t index = 0;; ++index) {
      skip_ws();
      item(index);
      skip_ws();
      const int c = get();
      if (c == close) return;
      if (c != ',') fail(fmt::format("expected ',' or '{}' {}, found {}", close, where(index), describe(c)));
    }
  }

  // `"name" :` and the whitespace after it; the raw name goes to key when given.
  void member_name(std::string* key) {
    if (peek() != '"') fail(fmt::format("expected a member name, found {}", describe(peek())));
    string(key);
    skip_ws();
    expect(':', "after a member name");
    skip_ws();
  }

  void top_object() {
    sequence(
        '}',
        [&](size_t) {
          std::string key;
          member_name(&key);
          if (key == "traceEvents") {
            if (saw_events_) fail("a second \"traceEvents\" member");
            if (peek() != '[') fail(fmt::format("\"traceEvents\" is not an array (it starts with {})", describe(peek())));
            events_array(2);
          } else if (cb_.on_metadata && (key == "deviceProperties" || key == "distributedInfo")) {
            begin_capture();
            value(1);
            cb_.on_metadata(key, end_capture());
          } else {
            value(1);
          }
        },
        [](size_t) { return "after a member"; });
  }

  void events_array(int depth) {
    saw_events_ = true;
    sequence(
        ']',
        [&](size_t index) {
          if (peek() != '{') fail(fmt::format("traceEvents[{}] is not an event object (it starts with {})", index, describe(peek())));
          begin_capture();
          object(depth);
          cb_.on_event(end_capture(), index);
        },
        [](size_t index) { return fmt::format("after traceEvents[{}]", index); });
  }

  void value(int depth) {
    const int c = peek();
    switch (c) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string(nullptr);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default:
        if (c == '-' || is_digit(c)) return number();
        fail(fmt::format("expected a JSON value, found {}", describe(c)));
    }
  }

  void object(int depth) {
    if (depth >= kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    sequence(
        '}',
        [&](size_t) {
          member_name(nullptr);
          value(depth + 1);
        },
        [](size_t) { return "in an object"; });
  }

  void array(int depth) {
    if (depth >= kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    sequence(']', [&](size_t) { value(depth + 1); }, [](size_t) { return "in an array"; });
  }

  void literal(const char* word) {
    for (const char* w = word; *w; ++w)
      if (get() != *w) fail(fmt::format("invalid literal (expected '{}')", word));
  }

  void number() {
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      fail("invalid number: no digit after '-'");
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) fail("invalid number: no digit after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail("invalid number: no digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
  }

  // Index of the first byte at or after i that is '"', '\\', a control byte or non-ASCII.
  size_t plain_run_end(size_t i) const {
    const char* p = buf_.data();
    const size_t n = buf_.size();
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      // Signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them and the controls.
      const __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                           _mm_cmplt_epi8(v, space));
      if (const int mask = _mm_movemask_epi8(special)) return i + static_cast<size_t>(__builtin_ctz(mask));
    }
#endif
    for (; i < n; ++i) {
      const uint8_t c = static_cast<uint8_t>(p[i]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
    }
    return i;
  }

  // A string; its raw text (escapes kept) is appended to out when given.
  void string(std::string* out) {
    ++pos_;  // '"'
    for (;;) {
      const size_t end = plain_run_end(pos_);
      if (out) out->append(buf_.substr(pos_, end - pos_));
      pos_ = end;
      const int c = get();  // a special byte, or the first of the next chunk
      if (c < 0) fail("unterminated string");
      if (c == '"') return;
      if (out) out->push_back(static_cast<char>(c));
      if (c == '\\') escape(out);
      else if (c < 0x20) fail(fmt::format("unescaped control character {} in a string", describe(c)));
      else if (c >= 0x80) utf8_tail(c, out);
    }
  }

  void escape(std::string* out) {
    const int c = get();
    if (out && c >= 0) out->push_back(static_cast<char>(c));
    switch (c) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return;
      case 'u':
        for (int i = 0; i < 4; ++i) {
          const int h = get();
          if (!(is_digit(h) || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) fail("invalid \\u escape: expected 4 hex digits");
          if (out) out->push_back(static_cast<char>(h));
        }
        return;
      default: fail(fmt::format("invalid escape '\\' followed by {}", describe(c)));
    }
  }

  // The continuation bytes of a UTF-8 sequence whose lead byte was c (RFC 3629: no overlong
  // forms, no surrogates, nothing past U+10FFFF).
  void utf8_tail(int c, std::string* out) {
    int n = 0, lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 1;
    else if (c == 0xe0) n = 2, lo = 0xa0;
    else if (c == 0xed) n = 2, hi = 0x9f;
    else if (c >= 0xe1 && c <= 0xef) n = 2;
    else if (c == 0xf0) n = 3, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3) n = 3;
    else if (c == 0xf4) n = 3, hi = 0x8f;
    else fail(fmt::format("invalid UTF-8 lead {} in a string", describe(c)));
    for (int i = 0; i < n; ++i) {
      const int b = get();
      if (b < lo || b > hi) fail("invalid UTF-8 sequence in a string");
      if (out) out->push_back(static_cast<char>(b));
      lo = 0x80, hi = 0xbf;
    }
  }

  ByteSource& src_;
  const ScanCallbacks& cb_;
  std::string_view buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;
  bool capturing_ = false, saw_events_ = false;
  size_t capture_from_ = 0;
  std::string capture_;
};

}  // namespace

void scan_trace_events(ByteSource& src, const ScanCallbacks& cb) { Scanner(src, cb).document(); }

}  // namespace kl::trace
