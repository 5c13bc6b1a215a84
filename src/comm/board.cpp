#include "comm/board.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <string>

#include "kernelab/error.h"

namespace kl::comm {

namespace {

constexpr int kFields = 4;

int64_t load(const int64_t& v) { return std::atomic_ref<int64_t>(const_cast<int64_t&>(v)).load(std::memory_order_acquire); }
void store(int64_t& v, int64_t x) { std::atomic_ref<int64_t>(v).store(x, std::memory_order_release); }

}  // namespace

std::string board_path(const std::string& dir) { return dir + "/board"; }

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::setup: return "setting up";
    case Stage::start_barrier: return "in the start barrier";
    case Stage::running: return "running";
    case Stage::end_barrier: return "in the end barrier";
    case Stage::finished: return "finished";
  }
  return "?";
}

StatusBoard::StatusBoard(const std::string& dir, int rank, int size) : rank_(rank), size_(size) {
  const std::string path = board_path(dir);
  const std::size_t bytes = std::size_t(size) * kFields * sizeof(int64_t);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) runtime_failure("cannot create the status board " + path);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) runtime_failure("cannot map the status board " + path);
  slots_ = static_cast<int64_t*>(p);
  store(slots_[rank * kFields], getpid());
  store(slots_[rank * kFields + 1], 0);
  store(slots_[rank * kFields + 2], 0);
  store(slots_[rank * kFields + 3], int64_t(Stage::setup));
}

StatusBoard::~StatusBoard() { munmap(slots_, std::size_t(size_) * kFields * sizeof(int64_t)); }

void StatusBoard::enter(uint64_t seq) { store(slots_[rank_ * kFields + 1], int64_t(seq)); }
void StatusBoard::complete(uint64_t seq) { store(slots_[rank_ * kFields + 2], int64_t(seq)); }
void StatusBoard::set_stage(Stage s) { store(slots_[rank_ * kFields + 3], int64_t(s)); }

std::vector<BoardSlot> StatusBoard::snapshot() const {
  std::vector<BoardSlot> out(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r)
    out[std::size_t(r)] = {load(slots_[r * kFields]), load(slots_[r * kFields + 1]), load(slots_[r * kFields + 2]),
                           Stage(load(slots_[r * kFields + 3]))};
  return out;
}

std::vector<BoardSlot> read_board(const std::string& dir) {
  std::ifstream f(board_path(dir), std::ios::binary);
  std::vector<BoardSlot> out;
  int64_t v[kFields];
  while (f.read(reinterpret_cast<char*>(v), sizeof v)) out.push_back({v[0], v[1], v[2], Stage(v[3])});
  return out;
}

// A zombie (exited, not yet reaped by the launcher) counts as gone.
bool process_alive(int64_t pid) {
  if (pid <= 0 || (kill(pid_t(pid), 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

}  // namespace kl::comm
