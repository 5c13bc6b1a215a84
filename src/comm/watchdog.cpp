#include "comm/watchdog.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace kl::comm {

namespace {

sigset_t termination_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  return s;
}

std::string list_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

std::string signal_reason(int sig) {
  return sig == SIGTERM ? "terminated by SIGTERM (the launcher ends the job)" : "terminated by SIGINT";
}

// In a wait outside the collectives, a rank is behind this one when it is at an earlier stage, or
// at the same stage and an earlier collective.
bool behind_in_stage(const BoardSlot& s, const BoardSlot& me) {
  return s.stage < me.stage || (s.stage == me.stage && s.entered < me.entered);
}

}  // namespace

void block_termination_signals() {
  const sigset_t s = termination_signals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

std::string dump_path(const std::string& dir, int rank) { return fmt::format("{}/rank-{}.json", dir, rank); }

Watchdog::Watchdog(DumpInfo info, const FlightRecorder& recorder, const StatusBoard& board)
    : info_(std::move(info)), recorder_(recorder), board_(board), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  stop_ = true;
  thread_.join();
}

void Watchdog::loop() {
  // Ahead of the ranks' spinning MPI threads on a crowded host, where permitted (root): the dump
  // must be written before mpirun's SIGKILL. Unprivileged, the call fails and nothing changes.
  setpriority(PRIO_PROCESS, id_t(gettid()), -10);
  const sigset_t signals = termination_signals();
  const timespec tick{0, 50'000'000};
  while (!stop_) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig > 0) fail(signal_reason(sig));
    const std::optional<Record> r = recorder_.in_flight();
    const std::optional<Wait> w = waiting();
    if (!r && !w) continue;
    if (const std::optional<int> q = dead_rank_behind(r)) fail(fmt::format("rank {}'s process ended while this rank waited", *q));
    const int64_t since = r ? r->start_us : w->start_us;
    if (info_.timeout_s > 0 && double(wall_us() - since) > info_.timeout_s * 1e6)
      fail(fmt::format("timeout: waited more than {:g} s", info_.timeout_s));
  }
}

// A rank whose process is gone before it got to where this one waits (collective r, else this
// rank's stage): it died, and this rank would wait for it until the timeout. Giving up at once also
// leaves the whole of mpirun's window (its SIGTERM, then its SIGKILL: launcher.h) for the dump.
std::optional<int> Watchdog::dead_rank_behind(const std::optional<Record>& r) const {
  const std::vector<BoardSlot> board = board_.snapshot();
  const BoardSlot& me = board[std::size_t(info_.rank)];
  for (int q = 0; q < int(board.size()); ++q) {
    const BoardSlot& s = board[std::size_t(q)];
    if (q == info_.rank || s.pid == 0) continue;
    const bool behind = r ? uint64_t(s.entered) < r->seq : behind_in_stage(s, me);
    if (behind && !process_alive(s.pid)) return q;
  }
  return std::nullopt;
}

StartupWatch::StartupWatch(DumpInfo info) : info_(std::move(info)), start_us_(wall_us()), thread_([this] { loop(); }) {}

StartupWatch::~StartupWatch() {
  stop_ = true;
  thread_.join();
}

void StartupWatch::loop() {
  const sigset_t signals = termination_signals();
  const timespec tick{0, 20'000'000};  // its stop waits for a tick: every run pays up to one
  while (!stop_) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    const double waited_s = double(wall_us() - start_us_) / 1e6;
    if (sig <= 0 && waited_s <= info_.timeout_s) continue;
    const std::string rank = info_.rank < 0 ? "rank ?" : fmt::format("rank {}", info_.rank);
    const std::string reason = sig > 0 ? signal_reason(sig) : fmt::format("timeout: waited more than {:g} s", info_.timeout_s);
    const std::string message = fmt::format(
        "{}: {} {}, at start-up, after {:.1f} s; MPI_Init waits for every rank, so one that never started, died or "
        "hangs before it holds the others there (its own message says 'before MPI_Init')",
        rank, reason, phase_.load(), waited_s);
    const bool dumps = !info_.dir.empty() && info_.rank >= 0;
    if (dumps)
      write_dump(info_, {{"reason", reason}, {"message", message}, {"startup_phase", phase_.load()}, {"in_flight", nullptr},
                         {"waiting", {{"what", phase_.load()}, {"start_us", start_us_}}}, {"records", nlohmann::json::array()},
                         {"board", nlohmann::json::array()}});
    std::fprintf(stderr, "kernelab comm: %s; %s\n", message.c_str(),
                 dumps ? ("dump in " + dump_path(info_.dir, info_.rank)).c_str()
                       : "no dump: no --dump-dir was given and the launcher names no job");
    std::fflush(stderr);
    _exit(1);
  }
}

Watchdog::Guard::Guard(Watchdog& w, std::string what) : w_(w) {
  std::lock_guard lock(w_.wait_mutex_);
  w_.wait_ = Wait{std::move(what), wall_us()};
}

Watchdog::Guard::~Guard() {
  std::lock_guard lock(w_.wait_mutex_);
  w_.wait_.reset();
}

std::optional<Watchdog::Wait> Watchdog::waiting() const {
  std::lock_guard lock(wait_mutex_);
  return wait_;
}

// In a wait outside the collectives: the ranks the board shows behind this one (an earlier stage,
// or the same stage and an earlier collective), else those whose process is gone.
std::string Watchdog::behind_me() const {
  const std::vector<BoardSlot> board = board_.snapshot();
  const BoardSlot& me = board[std::size_t(info_.rank)];
  std::string behind, gone;
  for (int r = 0; r < int(board.size()); ++r) {
    if (r == info_.rank) continue;
    const BoardSlot& s = board[std::size_t(r)];
    const bool alive = process_alive(s.pid);
    const std::string text = fmt::format("rank {} ({}, entered up to seq {}, {})", r, stage_name(s.stage), s.entered,
                                         s.pid == 0 ? "not on the board yet" : alive ? "process alive" : "process gone");
    if (behind_in_stage(s, me)) behind += (behind.empty() ? "" : ", ") + text;
    else if (!alive) gone += (gone.empty() ? "" : ", ") + text;
  }
  return behind.empty() ? gone : behind;
}

// The ranks that have not entered collective seq, by the board; when every rank entered it, those
// whose process is gone (a rank that gave up on its own timeout is gone too, so it comes second).
std::string Watchdog::not_heard_from(uint64_t seq) const {
  const std::vector<BoardSlot> board = board_.snapshot();
  std::string behind, gone;
  for (int r = 0; r < int(board.size()); ++r) {
    if (r == info_.rank) continue;
    const BoardSlot& s = board[std::size_t(r)];
    const bool alive = process_alive(s.pid);
    const std::string text = fmt::format("rank {} (entered up to seq {}, {})", r, s.entered, alive ? "process alive" : "process gone");
    if (uint64_t(s.entered) < seq) behind += (behind.empty() ? "" : ", ") + text;
    else if (!alive) gone += (gone.empty() ? "" : ", ") + text;
  }
  return behind.empty() ? gone : behind;
}

void Watchdog::fail(const std::string& reason) {
  const std::optional<Record> r = recorder_.in_flight();
  std::string message;
  if (r) {
    const std::string missing = not_heard_from(r->seq);
    message = fmt::format("rank {}: {} in {} seq {} ({}, {} bytes, peers {}) after {:.1f} s; not heard from: {}", info_.rank,
                          reason, r->op, r->seq, r->algo, r->bytes, list_ranks(r->peers),
                          double(wall_us() - r->start_us) / 1e6,
                          missing.empty() ? "every rank entered; waiting on peers " + list_ranks(r->peers) : missing);
  } else if (const std::optional<Wait> w = waiting()) {
    const std::string missing = behind_me();
    message = fmt::format("rank {}: {} in {} after {:.1f} s; not heard from: {}", info_.rank, reason, w->what,
                          double(wall_us() - w->start_us) / 1e6, missing.empty() ? "every rank got there" : missing);
  } else {
    const std::vector<Record> all = recorder_.records();
    const uint64_t last = all.empty() ? 0 : all.back().seq;
    std::string others;
    const std::vector<BoardSlot> board = board_.snapshot();
    for (int q = 0; q < int(board.size()); ++q)
      if (q != info_.rank) others += fmt::format("{}rank {} entered seq {}", others.empty() ? "" : ", ", q, board[std::size_t(q)].entered);
    message = fmt::format("rank {}: {} outside any collective, after completing seq {}; {}", info_.rank, reason, last, others);
  }
  dump(reason, message);
  std::fprintf(stderr, "kernelab comm: %s; flight recorder in %s\n", message.c_str(), dump_path(info_.dir, info_.rank).c_str());
  std::fflush(stderr);
  _exit(1);  // not exit(): MPI's atexit handlers would block on the ranks we gave up on
}

void Watchdog::dump(const std::string& reason, const std::string& message) const {
  nlohmann::json board = nlohmann::json::array();
  for (const BoardSlot& s : board_.snapshot())
    board.push_back({{"pid", s.pid}, {"entered", s.entered}, {"completed", s.completed}, {"stage", stage_name(s.stage)}});
  const std::optional<Record> r = recorder_.in_flight();
  const std::optional<Wait> w = waiting();
  write_dump(info_, {{"reason", reason}, {"message", message}, {"in_flight", r ? record_json(*r) : nlohmann::json()},
                     {"waiting", w ? nlohmann::json{{"what", w->what}, {"start_us", w->start_us}} : nlohmann::json()},
                     {"records", recorder_.to_json()}, {"board", board}});
}

void write_dump(const DumpInfo& info, nlohmann::json fields) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  fields.update({{"rank", info.rank}, {"size", info.size}, {"pid", getpid()}, {"host", host}, {"timeout_s", info.timeout_s},
                 {"dumped_us", wall_us()}, {"run", info.extra}});
  const std::string path = dump_path(info.dir, info.rank), tmp = path + ".tmp";
  std::ofstream(tmp) << fields.dump(1) << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace kl::comm
