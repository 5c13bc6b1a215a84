// A Transport between threads of one process, for testing the algorithms without MPI: sends are
// eager (copied at once); the k-th receive posted from a peer takes the k-th message that peer
// sent, as MPI's non-overtaking rule matches them.
#pragma once
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "comm/scratch.h"
#include "comm/transport.h"

namespace kl::test {

struct LoopbackFabric {
  std::mutex mutex;
  std::condition_variable arrived;
  std::map<std::pair<int, int>, std::vector<std::vector<std::byte>>> channels;  // (from, to) -> messages in order
};

class LoopbackTransport final : public comm::Transport {
 public:
  // posts_ahead false: the step-by-step schedule the NCCL transport gets.
  LoopbackTransport(LoopbackFabric& f, int rank, int size, bool posts_ahead = true)
      : fabric_(f), rank_(rank), size_(size), posts_ahead_(posts_ahead) {}
  bool posts_ahead() const override { return posts_ahead_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle send(const comm::CollectiveContext&, int peer, std::span<const std::byte> data) override {
    {
      std::lock_guard lock(fabric_.mutex);
      fabric_.channels[{rank_, peer}].emplace_back(data.begin(), data.end());
    }
    fabric_.arrived.notify_all();
    pending_.push_back({});
    return Handle(pending_.size() - 1);
  }
  Handle recv(const comm::CollectiveContext&, int peer, std::span<std::byte> data) override {
    pending_.push_back({peer, received_[peer]++, data, true});
    return Handle(pending_.size() - 1);
  }
  void wait(Handle h) override {
    Pending& p = pending_[std::size_t(h)];
    if (!p.is_recv || p.done) return;
    std::unique_lock lock(fabric_.mutex);
    auto& channel = fabric_.channels[{p.peer, rank_}];
    fabric_.arrived.wait(lock, [&] { return channel.size() > p.index; });
    const std::vector<std::byte>& m = channel[p.index];
    if (m.size() != p.data.size()) throw std::runtime_error("message size differs from the posted receive");
    std::memcpy(p.data.data(), m.data(), m.size());
    p.done = true;
  }
  void wait_all() override {
    for (std::size_t h = 0; h < pending_.size(); ++h) wait(Handle(h));
    pending_.clear();
  }
  std::byte* scratch(int slot, std::size_t bytes) override { return comm::host_scratch(slot, bytes); }
  void copy(std::byte* dst, const std::byte* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void reduce(std::byte* dst, const std::byte* src, std::size_t count, DType t, comm::RedOp op) override {
    comm::reduce_into(dst, src, count, t, op);
  }

 private:
  struct Pending {
    int peer = 0;
    std::size_t index = 0;
    std::span<std::byte> data;
    bool is_recv = false, done = false;
  };
  LoopbackFabric& fabric_;
  int rank_, size_;
  bool posts_ahead_;
  std::map<int, std::size_t> received_;
  std::vector<Pending> pending_;
};

}  // namespace kl::test
