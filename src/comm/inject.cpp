#include "comm/inject.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <thread>

#include "kernelab/error.h"

namespace kl::comm {

namespace {

int64_t parse_int(const std::string& spec, const std::string& key, const std::string& value) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < 0)
    bad_input(fmt::format("--inject {}: {}={} is not a non-negative integer", spec, key, value));
  return v;
}

}  // namespace

Injection parse_injection(const std::string& spec, int ranks) {
  Injection inj;
  bool have_rank = false, have_kind = false;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string part = spec.substr(pos, comma - pos);
    pos = comma + 1;
    const std::size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "rank" && eq != std::string::npos) {
      inj.rank = int(parse_int(spec, key, value));
      have_rank = true;
    } else if (key == "delay_ms" && eq != std::string::npos) {
      inj.kind = Injection::Kind::delay, inj.delay_ms = parse_int(spec, key, value), have_kind = true;
    } else if (key == "at" && (value == "init" || value == "start" || value == "end")) {
      inj.point = value == "init" ? Injection::Point::init : value == "start" ? Injection::Point::start : Injection::Point::end;
    } else if (key == "at" && eq != std::string::npos) {
      inj.at = uint64_t(parse_int(spec, key, value));
      if (*inj.at == 0) bad_input(fmt::format("--inject {}: at=0: sequence numbers start at 1", spec));
    } else if (part == "crash" || part == "hang") {
      inj.kind = part == "crash" ? Injection::Kind::crash : Injection::Kind::hang, have_kind = true;
    } else {
      bad_input(fmt::format("--inject {}: unknown part '{}' (rank=R, delay_ms=T, at=SEQ|init|start|end, crash, hang)", spec, part));
    }
  }
  if (!have_rank) bad_input(fmt::format("--inject {}: rank=R is missing", spec));
  if (!have_kind) bad_input(fmt::format("--inject {}: say delay_ms=T, crash or hang", spec));
  if (inj.rank >= ranks) bad_input(fmt::format("--inject {}: rank {} is not below --ranks {}", spec, inj.rank, ranks));
  if (inj.kind != Injection::Kind::delay && !inj.at && inj.point == Injection::Point::collective) inj.at = 1;
  return inj;
}

std::string injection_text(const Injection& inj) {
  const std::string at = inj.point == Injection::Point::init    ? " before MPI_Init"
                         : inj.point == Injection::Point::start ? " before the start barrier"
                         : inj.point == Injection::Point::end ? " before the end barrier"
                         : inj.at ? fmt::format(" before seq {}", *inj.at) : " before every collective";
  if (inj.kind == Injection::Kind::delay) return fmt::format("rank {} delayed {} ms{}", inj.rank, inj.delay_ms, at);
  return fmt::format("rank {} {}{}", inj.rank, inj.kind == Injection::Kind::crash ? "crashes" : "hangs", at);
}

void apply_injections(const std::vector<Injection>& injections, int rank, Injection::Point point, uint64_t seq) {
  for (const Injection& inj : injections) {
    if (inj.rank != rank || inj.point != point || (inj.at && *inj.at != seq)) continue;
    if (inj.kind == Injection::Kind::delay) std::this_thread::sleep_for(std::chrono::milliseconds(inj.delay_ms));
    if (inj.kind == Injection::Kind::crash) raise(SIGKILL);
    if (inj.kind == Injection::Kind::hang)
      for (;;) pause();
  }
}

}  // namespace kl::comm
