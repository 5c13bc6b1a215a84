#include "comm/session.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "comm/launcher.h"
#include "comm/mpi_peer.h"
#include "kernelab/error.h"

namespace kl::comm {

namespace {

// The folder every rank names before MPI_Init, so that a hang at start-up leaves dumps too:
// --dump-dir, else one per launcher job under the temporary directory (whichever rank comes first
// creates it); empty when the launcher names no job, and rank 0 makes one after MPI_Init. Each rank
// removes its own dump of an earlier run here, before any rank of this one can write a dump.
std::string dump_dir_before_init(const std::string& wanted, int rank) {
  std::string dir = wanted;
  if (dir.empty()) {
    std::string job = launcher_job_id();
    if (job.empty()) return "";
    std::replace(job.begin(), job.end(), '/', '_');
    dir = (std::filesystem::temp_directory_path() / ("kernelab-comm-" + job)).string();
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    runtime_failure(fmt::format("cannot create the dump folder {}: {}", dir, ec ? ec.message() : "not a folder"));
  struct stat st {};
  if (wanted.empty() && (stat(dir.c_str(), &st) != 0 || st.st_uid != geteuid()))
    runtime_failure(fmt::format("the dump folder {} belongs to another user; give --dump-dir", dir));
  if (rank >= 0) std::filesystem::remove(dump_path(dir, rank), ec);
  return dir;
}

// Rank 0's folder for every rank, broadcast: this also orders its removal of an old board, and of
// the dumps of ranks this run does not have, before any rank maps the new board.
std::string shared_dump_dir(const std::string& early, int rank, int size) {
  std::string dir = early;
  if (rank == 0) {
    if (dir.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "kernelab-comm-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) runtime_failure("cannot create a dump folder under " + tmpl);
      dir = tmpl;
    }
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      int r = -1;
      if (name == "board" || (std::sscanf(name.c_str(), "rank-%d.json", &r) == 1 && r >= size)) std::filesystem::remove(e.path());
    }
  }
  int len = int(dir.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(std::size_t(len));
  MPI_Bcast(dir.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir;
}

}  // namespace

Session::Session(SessionOptions opt) : opt_(std::move(opt)) {
  block_termination_signals();
  {
    const int launcher_rank = launcher_world_rank();
    StartupWatch watch(DumpInfo{launcher_rank, launcher_world_size(), dump_dir_before_init(opt_.dump_dir, launcher_rank),
                                opt_.timeout_s, opt_.run});
    apply_injections(opt_.injections, launcher_rank, Injection::Point::init);
    watch.enter("in MPI_Init");
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    thread_level_ = provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watch.enter("in the broadcast of the dump folder's name");
    dump_dir_ = shared_dump_dir(watch.dump_dir(), rank_, size_);
  }
  transport_ = std::make_unique<MpiTransport>(MPI_COMM_WORLD);
  board_ = std::make_unique<StatusBoard>(dump_dir_, rank_, size_);
  watchdog_ = std::make_unique<Watchdog>(DumpInfo{rank_, size_, dump_dir_, opt_.timeout_s, opt_.run}, recorder_, *board_);
  barrier(Injection::Point::start, Stage::start_barrier, Stage::running, "the start barrier");
}

Session::~Session() {
  try {
    if (!opt_.trace_dir.empty()) trace_.write(opt_.trace_dir, rank_, size_);
  } catch (const std::exception& e) {  // a destructor must not throw; the folder was checked before mpirun started
    std::fprintf(stderr, "kernelab comm: rank %d: %s\n", rank_, e.what());
  }
  barrier(Injection::Point::end, Stage::end_barrier, Stage::finished, "the end barrier");
  watchdog_->dump("finished", "");
  if (opt_.dump_dir.empty()) {  // a temporary folder of a run that ended well: nothing to keep
    guarded("the clean-up barrier", [] { MPI_Barrier(MPI_COMM_WORLD); });
    std::error_code ec;
    if (rank_ == 0) std::filesystem::remove_all(dump_dir_, ec);
  }
  watchdog_.reset();
  board_.reset();
  MPI_Finalize();
}

void Session::barrier(Injection::Point point, Stage in, Stage after, const std::string& what) {
  apply_injections(opt_.injections, rank_, point);
  board_->set_stage(in);
  guarded(what, [] { MPI_Barrier(MPI_COMM_WORLD); });
  board_->set_stage(after);
}

void Session::guarded(const std::string& what, const std::function<void()>& wait) {
  Watchdog::Guard g(*watchdog_, what);
  wait();
}

std::vector<int> Session::peers(Algo a) const {
  std::vector<int> out;
  if (a == Algo::ring) {
    out = {(rank_ + size_ - 1) % size_, (rank_ + 1) % size_};
  } else if (a == Algo::tree) {
    const int p = int(std::bit_floor(unsigned(size_))), extra = size_ - p;
    if (rank_ < 2 * extra) out.push_back(rank_ % 2 == 0 ? rank_ + 1 : rank_ - 1);
    if (rank_ >= 2 * extra || rank_ % 2 == 1) {
      const int me = rank_ < 2 * extra ? rank_ / 2 : rank_ - extra;
      for (int mask = 1; mask < p; mask *= 2) {
        const int v = me ^ mask;
        out.push_back(v < extra ? 2 * v + 1 : v + extra);
      }
    }
  } else {
    for (int q = 0; q < size_; ++q)
      if (q != rank_) out.push_back(q);
  }
  if (out.size() == 2 && out[0] == out[1]) out.pop_back();
  return out;
}

void Session::run_library(Collective c, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op) {
  const Layout l = layout(c, block, size_, rank_);
  const std::size_t e = dtype_size(t);
  switch (c) {
    case Collective::allreduce: mpi_allreduce(comm(), in, out, block, t, op); break;
    case Collective::allgather: mpi_allgather(comm(), in == out + l.in_place_offset * e ? out : in, out, block, t); break;
    case Collective::reducescatter:
      if (out == in + l.in_place_offset * e) {  // MPI's in place leaves the result at the front
        std::byte* whole = out - l.in_place_offset * e;
        mpi_reduce_scatter(comm(), whole, whole, block, t, op);
        std::memmove(out, whole, block * e);
      } else {
        mpi_reduce_scatter(comm(), in, out, block, t, op);
      }
      break;
    case Collective::alltoall: mpi_alltoall(comm(), in, out, block, t); break;
  }
}

void Session::run(Collective c, Algo a, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op) {
  const std::size_t bytes = layout(c, block, size_, rank_).reported_count() * dtype_size(t);
  record(c, a, bytes, [&](uint64_t seq) {
    if (a == Algo::library) run_library(c, in, out, block, t, op);
    else run_algorithm(*transport_, CollectiveContext{seq}, c, a, in, out, block, t, op, opt_.ring);
  });
}

void Session::record(Collective c, Algo a, std::size_t bytes, const std::function<void(uint64_t seq)>& call) {
  const uint64_t seq = ++seq_;
  apply_injections(opt_.injections, rank_, Injection::Point::collective, seq);
  recorder_.begin({std::string(collective_name(c)), std::string(algo_name(a)), seq, bytes, peers(a), 0, 0});
  board_->enter(seq);
  call(seq);
  board_->complete(seq);
  const std::optional<Record> done = recorder_.end(seq);
  if (done && !opt_.trace_dir.empty()) trace_.collective(*done);
}

}  // namespace kl::comm
