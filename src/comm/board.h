// The status board: one slot per rank in a file every rank of the host maps (the dump folder), each
// holding the rank's pid, the last sequence number it entered and completed, and its stage (before,
// in or past the run's start and end barriers). A waiting rank's
// watchdog reads it to name the ranks it has not heard from; `comm doctor` reads it after a crash,
// when the dead rank left no dump. One host only: ranks on other hosts would need a store
// (a TCP key-value server, as PyTorch's) that this does not have.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kl::comm {

// A rank's stage, in the order a run goes through them.
enum class Stage : int64_t { setup = 0, start_barrier = 1, running = 2, end_barrier = 3, finished = 4 };
const char* stage_name(Stage s);  // "setting up", "in the start barrier", ...

struct BoardSlot {
  int64_t pid = 0;
  int64_t entered = 0, completed = 0;  // sequence numbers
  Stage stage = Stage::setup;
};

class StatusBoard {
 public:
  StatusBoard(const std::string& dir, int rank, int size);  // RuntimeFailure when the file cannot be mapped
  ~StatusBoard();
  StatusBoard(const StatusBoard&) = delete;
  StatusBoard& operator=(const StatusBoard&) = delete;
  void enter(uint64_t seq);
  void complete(uint64_t seq);
  void set_stage(Stage s);
  std::vector<BoardSlot> snapshot() const;

 private:
  int64_t* slots_ = nullptr;  // size x 4 int64: pid, entered, completed, stage
  int rank_, size_;
};

// The board file of a dump folder, read without mapping (for `comm doctor`); empty when absent.
std::vector<BoardSlot> read_board(const std::string& dir);
std::string board_path(const std::string& dir);
bool process_alive(int64_t pid);

}  // namespace kl::comm
