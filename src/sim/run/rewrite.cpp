// A small scanner, not a C++ parser: it blanks comments and literals, then finds `<<<` and
// `__shared__` in what is left and takes the kernel name, launch configuration, arguments and
// declared names by bracket matching; counting braces tells block scope from file scope.
#include "sim/run/rewrite.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <regex>
#include <vector>

#include "kernelab/error.h"

namespace kl::sim {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source with comments, string and character literals replaced by spaces (newlines
// kept), so that bracket matching sees code only.
std::string blank(std::string_view s) {
  std::string out(s);
  std::size_t i = 0;
  auto wipe = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      const std::size_t e = s.find('\n', i);
      wipe(i, e == std::string_view::npos ? s.size() : e);
      i = e == std::string_view::npos ? s.size() : e;
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t e = s.find("*/", i + 2);
      const std::size_t end = e == std::string_view::npos ? s.size() : e + 2;
      wipe(i, end);
      i = end;
    } else if (s[i] == 'R' && i + 1 < s.size() && s[i + 1] == '"' && (i == 0 || !ident_char(s[i - 1]) || s[i - 1] == '8' ||
                                                                       s[i - 1] == 'u' || s[i - 1] == 'U' || s[i - 1] == 'L')) {
      const std::size_t open = s.find('(', i);
      std::string close(1, ')');  // )delimiter"
      close.append(s.substr(i + 2, open - i - 2)).push_back('"');
      const std::size_t e = s.find(close, open);
      const std::size_t end = e == std::string_view::npos ? s.size() : e + close.size();
      wipe(i + 1, end);
      i = end;
    } else if (s[i] == '"' || (s[i] == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1])) &&
                                                 i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1]))))) {
      // The second test keeps digit separators (1'000) out of character literals.
      const char q = s[i];
      std::size_t k = i + 1;
      while (k < s.size() && s[k] != q && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
      wipe(i + 1, k);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct Scan {
  std::string_view src;
  std::string code;  // blanked
  std::string path;

  int line_of(std::size_t pos) const {
    int n = 1;
    for (std::size_t k = 0; k < pos && k < src.size(); ++k) n += src[k] == '\n';
    return n;
  }
  [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
    bad_input(path + ":" + std::to_string(line_of(pos)) + ": " + what);
  }
  std::size_t skip_space_back(std::size_t p) const {  // p: one past; returns one past the last non-space
    while (p > 0 && std::isspace(static_cast<unsigned char>(code[p - 1]))) --p;
    return p;
  }
  std::size_t skip_space(std::size_t p) const {
    while (p < code.size() && std::isspace(static_cast<unsigned char>(code[p]))) ++p;
    return p;
  }
  // From the closing bracket at `close`, back to its opening one.
  std::size_t match_back(std::size_t close, char open_c, char close_c) const {
    int depth = 0;
    for (std::size_t k = close + 1; k-- > 0;) {
      if (code[k] == close_c) ++depth;
      else if (code[k] == open_c && --depth == 0) return k;
    }
    fail(close, std::string("unbalanced '") + close_c + "'");
  }
  // From the opening bracket at `open`, to its closing one, over (), [] and {}.
  std::size_t match(std::size_t open) const {
    std::vector<char> stack;
    for (std::size_t k = open; k < code.size(); ++k) {
      const char c = code[k];
      if (c == '(' || c == '[' || c == '{') stack.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      else if (c == ')' || c == ']' || c == '}') {
        if (stack.empty() || stack.back() != c) fail(k, std::string("unbalanced '") + c + "'");
        stack.pop_back();
        if (stack.empty()) return k;
      }
    }
    fail(open, "unbalanced brackets");
  }

  // The kernel expression ending just before `end`: a qualified name with optional
  // template arguments (k, ns::k, k<float, 4>), or a parenthesised expression.
  std::size_t kernel_start(std::size_t end) const {
    std::size_t p = skip_space_back(end);
    if (p > 0 && code[p - 1] == '>') p = skip_space_back(match_back(p - 1, '<', '>'));
    else if (p > 0 && code[p - 1] == ')') return match_back(p - 1, '(', ')');
    for (;;) {
      const std::size_t id_end = p;
      while (p > 0 && ident_char(code[p - 1])) --p;
      if (p == id_end) fail(end, "no kernel name before <<<");
      if (p >= 2 && code[p - 1] == ':' && code[p - 2] == ':') p -= 2;
      else return p;
      if (p > 0 && !ident_char(code[p - 1])) return p;  // ::kernel
    }
  }

  // Splits [from, to) at top-level commas. `<...>` counts as brackets when it closes
  // before the next comma-free stretch ends and is followed by ( { :: or > (a template-id).
  std::vector<std::string> split(std::size_t from, std::size_t to) const {
    std::vector<std::string> parts;
    std::size_t start = from;
    for (std::size_t k = from; k < to; ++k) {
      const char c = code[k];
      if (c == '(' || c == '[' || c == '{') k = match(k);
      else if (c == '<' && k > from && ident_char(code[skip_space_back(k) - 1])) k = template_end(k, to);
      else if (c == ',') parts.emplace_back(src.substr(start, k - start)), start = k + 1;
    }
    parts.emplace_back(src.substr(start, to - start));
    return parts;
  }
  std::size_t template_end(std::size_t open, std::size_t to) const {
    int depth = 0;
    for (std::size_t k = open; k < to; ++k) {
      const char c = code[k];
      if (c == '(' || c == '[' || c == '{') k = match(k);
      else if (c == '<') ++depth;
      else if (c == '>' && --depth == 0) {
        const std::size_t n = skip_space(k + 1);
        const bool template_id = n >= to || code[n] == '(' || code[n] == '{' || code[n] == '>' || code[n] == ',' ||
                                 code.compare(n, 2, "::") == 0;
        return template_id ? k : open;
      } else if (c == ';') break;
    }
    return open;  // a less-than
  }
};

std::string collapse(std::string_view s) {  // a kernel name on one line, for messages
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
    else if (!out.empty() && out.back() != ' ') out += ' ';
  while (!out.empty() && out.back() == ' ') out.pop_back();
  std::string escaped;
  for (char c : out) escaped += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return escaped;
}

// Spaces and tabs off both ends; line breaks stay, they keep the line count.
std::string trim_blanks(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

std::size_t count_newlines(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool word_at(const std::string& code, std::size_t p, std::string_view w) {
  return code.compare(p, w.size(), w) == 0 && (p == 0 || !ident_char(code[p - 1])) &&
         (p + w.size() >= code.size() || !ident_char(code[p + w.size()]));
}

// `extern __shared__ [attributes] T name[...];` (or `extern T __shared__ name[]`) from `at`
// (the `extern`): the replacement, or empty when the declaration is not of that form.
std::string dynamic_shared(const Scan& s, std::size_t at, std::size_t* end) {
  const std::size_t semi = s.code.find(';', at);
  if (semi == std::string::npos) return {};
  std::string type;
  bool shared = false;
  std::size_t k = at + 6;
  while (k < semi) {  // the type, without attributes
    k = s.skip_space(k);
    if (word_at(s.code, k, "__shared__")) {
      shared = true, k += 10;
    } else if (word_at(s.code, k, "__align__") || word_at(s.code, k, "alignas") || word_at(s.code, k, "__attribute__")) {
      k = s.match(s.code.find('(', k)) + 1;
    } else if (s.code.compare(k, 2, "[[") == 0) {
      k = s.match(k) + 1;
    } else if (s.code[k] == '[') {
      break;
    } else {
      std::size_t e = k;
      while (e < semi && !std::isspace(static_cast<unsigned char>(s.code[e])) && s.code[e] != '[') ++e;
      if (s.code.substr(k, e - k).find_first_of("(\"") != std::string::npos) return {};  // a function, extern "C"
      if (!type.empty()) type += ' ';
      type.append(s.src.substr(k, e - k));
      k = e;
    }
  }
  const std::size_t name_at = type.rfind(' ');
  if (!shared || name_at == std::string::npos || s.code[k] != '[') return {};
  const std::string name = type.substr(name_at + 1), t = type.substr(0, name_at);
  *end = semi + 1;
  // `T s[][N]...`: a pointer to rows of N, aliasing the same per-block pointer.
  const std::size_t rows = s.match(k) + 1;
  const std::string dims(rows < semi ? s.src.substr(rows, semi - rows) : std::string_view());
  if (dims.find('[') != std::string::npos)
    return "static thread_local " + t + " (*&" + name + ")" + dims + " = reinterpret_cast<" + t + " (*&)" + dims +
           ">(::kl::sim::dynamic_shared<" + t + ">());";
  return "static thread_local " + t + "*& " + name + " = ::kl::sim::dynamic_shared<" + t + ">();";
}

// Whether the `{` at `open` opens a namespace or an `extern "C"` block, whose declarations
// are at file scope like those outside all braces.
bool opens_namespace(const Scan& s, std::size_t open) {
  const auto in_head = [](char c) { return ident_char(c) || c == ':' || std::isspace(static_cast<unsigned char>(c)); };
  std::size_t p = open;  // back over `namespace a::b` (words, '::', space) to what precedes it
  while (p > 0 && in_head(s.code[p - 1])) --p;
  for (std::size_t k = p; k < open; ++k)
    if (word_at(s.code, k, "namespace")) return true;
  if (p < 2 || s.code[p - 1] != '"') return false;
  const std::size_t quote = s.code.rfind('"', p - 2);  // extern "C": the literal is blanked, its quotes stay
  const std::size_t e = quote == std::string::npos ? 0 : s.skip_space_back(quote);
  return e >= 6 && word_at(s.code, e - 6, "extern");
}

// After a block-scope `__shared__ [attributes] T a[...], b;` at `at`: the calls that poison
// each name, and where they go (one past the ';'); empty for anything else.
std::string poison_static_shared(const Scan& s, std::size_t at, std::size_t* end) {
  const std::size_t semi = s.code.find(';', at), before = s.skip_space_back(at);
  if (semi == std::string::npos || s.code.find_first_of("{}#", at) < semi) return {};
  if (before >= 6 && word_at(s.code, before - 6, "extern")) return {};  // dynamic: filled at block start
  std::vector<std::string> names;
  std::string last;  // the declarator's name: its last identifier outside brackets and template arguments
  int angle = 0;
  for (std::size_t k = at + 10; k <= semi; ++k) {
    const char c = s.code[k];
    if (c == '(' || c == '[') {
      k = s.match(k);  // __align__(16), [[attributes]], dimensions
    } else if (c == '<' || c == '>') {
      angle += c == '<' ? 1 : -1;
    } else if (angle == 0 && (c == ',' || c == ';')) {
      if (last.empty()) return {};
      names.push_back(std::move(last));
      last.clear();
    } else if (ident_char(c)) {
      const std::size_t from = k;
      while (k + 1 < semi && ident_char(s.code[k + 1])) ++k;
      const std::string word = s.code.substr(from, k + 1 - from);
      constexpr std::string_view kAttributes[] = {"__attribute__", "__align__", "alignas"};
      const bool attribute = std::ranges::find(kAttributes, word) != std::end(kAttributes);
      if (angle == 0 && !attribute && !std::isdigit(static_cast<unsigned char>(c))) last = word;
    }
  }
  std::string calls;
  for (const std::string& n : names) calls += " ::kl::sim::poison_shared_once(&" + n + ", sizeof " + n + ");";
  *end = semi + 1;
  return calls;
}

// An argument that is just NULL becomes nullptr: forwarded through a launch, GCC's NULL (an
// integer) no longer converts to the kernel's pointer parameter, as it does in nvcc's launch.
std::string null_as_nullptr(std::string args) {
  static const std::regex lone_null(R"((^|,)(\s*)NULL(\s*)(?=,|$))");
  return std::regex_replace(args, lone_null, "$1$2nullptr$3");
}

}  // namespace

std::vector<QuoteInclude> quote_includes(std::string_view source) {
  const std::string code = blank(source);
  std::vector<QuoteInclude> found;
  for (std::size_t line = 0; line < code.size();) {
    const std::size_t end = std::min(code.find('\n', line), code.size());
    std::size_t p = code.find_first_not_of(" \t", line);
    if (p < end && code[p] == '#') {
      p = code.find_first_not_of(" \t", p + 1);
      if (p < end && code.compare(p, 7, "include") == 0) {
        const std::size_t q = code.find_first_not_of(" \t", p + 7);
        const std::size_t close = q < end && code[q] == '"' ? code.find('"', q + 1) : std::string::npos;
        if (close < end) found.push_back({q + 1, close - q - 1, std::string(source.substr(q + 1, close - q - 1))});
      }
    }
    line = end + 1;
  }
  return found;
}

std::string rewrite_cuda(std::string_view source, const std::string& path) {
  Scan s{source, blank(source), path};
  std::string out = "#line 1 \"";
  for (char c : path) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  out += "\"\n";
  std::size_t copied = 0;
  std::vector<bool> braces;  // open '{'s: true for a namespace or extern "C" block
  auto emit = [&](std::size_t from, std::size_t to, const std::string& text) {
    out.append(source.substr(copied, from - copied));
    out += text;
    // The replaced stretch's lines stay lines, so that every later line keeps its number.
    for (std::size_t n = count_newlines(source.substr(from, to - from)), m = count_newlines(text); m < n; ++m) out += '\n';
    copied = to;
  };
  for (std::size_t p = 0; p < s.code.size(); ++p) {
    if (word_at(s.code, p, "extern")) {
      std::size_t end = 0;
      const std::string decl = dynamic_shared(s, p, &end);
      if (!decl.empty()) emit(p, end, decl), p = end - 1;
    } else if (word_at(s.code, p, "static") && word_at(s.code, s.skip_space(p + 6), "__shared__")) {
      emit(p, p + 6, "      ");
    } else if (word_at(s.code, p, "__shared__")) {
      // `__shared__ alignas(N) T x;`: nvcc takes it, GCC wants the attribute before thread_local.
      if (const std::size_t a = s.skip_space(p + 10); word_at(s.code, a, "alignas")) {
        const std::size_t close = s.match(s.code.find('(', a)) + 1;
        emit(p, close, std::string(s.src.substr(a, close - a)) + " __shared__");
      }
      std::size_t end = 0;
      const std::string poison = std::ranges::find(braces, false) != braces.end() ? poison_static_shared(s, p, &end) : "";
      if (!poison.empty()) emit(end, end, poison), p = end - 1;
    } else if (s.code[p] == '{') {
      braces.push_back(opens_namespace(s, p));
    } else if (s.code[p] == '}') {
      if (!braces.empty()) braces.pop_back();
    } else if (s.code.compare(p, 3, "<<<") == 0) {
      const std::size_t kstart = s.kernel_start(p);
      if (kstart < copied) s.fail(p, "a launch inside another launch's arguments");
      std::size_t close = std::string::npos;
      for (std::size_t k = p + 3; k + 2 < s.code.size(); ++k) {
        const char c = s.code[k];
        if (c == '(' || c == '[' || c == '{') k = s.match(k);
        else if (s.code.compare(k, 3, ">>>") == 0) {
          close = k;
          break;
        } else if (c == ';') break;
      }
      if (close == std::string::npos) s.fail(p, "no '>>>' closes this '<<<'");
      const std::size_t open = s.skip_space(close + 3);
      if (open >= s.code.size() || s.code[open] != '(') s.fail(close, "a kernel launch needs its arguments in '(...)' after '>>>'");
      const std::size_t args_end = s.match(open);
      std::vector<std::string> cfg = s.split(p + 3, close);
      if (cfg.size() < 2 || cfg.size() > 4)
        s.fail(p, "a launch takes 2 to 4 values inside <<< >>> (grid, block, shared memory bytes, stream), found " +
                      std::to_string(cfg.size()));
      while (cfg.size() < 4) cfg.push_back("0");  // no dynamic shared memory, the default stream
      const std::string kernel = trim_blanks(source.substr(kstart, p - kstart));
      const std::string args(source.substr(open + 1, args_end - open - 1));
      std::string call = "::kl::sim::launch_any(\"" + collapse(kernel) + "\", KL_SIM_KERNEL(" + kernel + ")";
      for (const std::string& c : cfg) call += ", " + trim_blanks(c);
      const std::string_view gap = source.substr(close + 3, open - close - 3);
      if (gap.find('\n') != std::string_view::npos) call += gap;  // a line break between >>> and (
      if (args.find_first_not_of(" \t\r\n") != std::string::npos) call += ", " + null_as_nullptr(args);
      call += ")";
      emit(kstart, args_end + 1, call);
      p = args_end;
    }
  }
  out.append(source.substr(copied));
  return out;
}

}  // namespace kl::sim
