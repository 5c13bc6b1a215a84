#include "comm/overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "kernelab/error.h"

namespace kl::comm {

namespace {

// The stand-in for a layer's backward: FMAs on a cache-resident array, `iters` passes.
float compute(std::vector<float>& x, long iters) {
  for (long i = 0; i < iters; ++i)
    for (float& v : x) v = v * 0.999f + 0.001f;
  return x[0];
}

struct Timings {
  double compute = 0, comm = 0, back_to_back = 0, overlapped = 0;
};

// Runs an own all-reduce of each bucket handed to it, in order, through Session::run (numbered,
// recorded and watched like any collective). While it lives it is the rank's only MPI caller: the
// main thread computes, and joins it before its next MPI call.
class CommThread {
 public:
  CommThread(Session& s, Algo a, std::vector<std::vector<float>>& grads) : s_(s), algo_(a), grads_(grads), thread_([this] { loop(); }) {}
  ~CommThread() { finish(); }
  void post(int bucket) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back(bucket);
    }
    ready_.notify_one();
  }
  void finish() {  // every posted bucket all-reduced
    if (!thread_.joinable()) return;
    post(-1);
    thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return !queue_.empty(); });
      const int b = queue_.front();
      queue_.pop_front();
      lock.unlock();
      if (b < 0) return;
      std::vector<float>& g = grads_[std::size_t(b)];
      auto* bytes = reinterpret_cast<std::byte*>(g.data());
      s_.run(Collective::allreduce, algo_, bytes, bytes, g.size(), DType::f32, RedOp::sum);
    }
  }

  Session& s_;
  Algo algo_;
  std::vector<std::vector<float>>& grads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int> queue_;
  std::thread thread_;
};

double slowest(Session& s, double t) {
  double all = 0;
  s.guarded("comm overlap's slowest-rank time (MPI_Allreduce)", [&] { MPI_Allreduce(&t, &all, 1, MPI_DOUBLE, MPI_MAX, s.comm()); });
  return all;
}

}  // namespace

int run_overlap(Session& s, const OverlapOptions& o) {
  const bool library = o.algo == Algo::library;
  if (!library && s.thread_level() < MPI_THREAD_SERIALIZED)
    runtime_failure(fmt::format("comm overlap --algo {}: this MPI gives thread level {}, and the communication thread needs "
                                "MPI_THREAD_SERIALIZED", algo_name(o.algo), s.thread_level()));
  std::vector<float> work(16384, 1.0f);  // 64 KiB: in L2
  const auto calibrate_start = MPI_Wtime();
  compute(work, 200);
  const double per_pass = (MPI_Wtime() - calibrate_start) / 200;
  constexpr int kSlices = 50;  // progress calls per bucket of compute
  const long passes_per_slice = std::max(1L, long(o.compute_ms / 1e3 / per_pass / kSlices));
  const std::size_t bucket = o.bytes / std::size_t(o.buckets) / sizeof(float);
  std::vector<std::vector<float>> grads(std::size_t(o.buckets), std::vector<float>(bucket, 1.0f));
  float sink = 0;
  TraceLog* trace = s.trace();
  std::string phase;  // of the timed body running, for the trace
  int rep = 0;
  uint64_t seq = 0;  // the trace's numbering of these all-reduces (they bypass Session::run)
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    Record record;
    bool done = false;
  };
  std::vector<int> peers;
  for (int q = 0; q < s.size(); ++q)
    if (q != s.rank()) peers.push_back(q);
  // A finished all-reduce: its span, from its start to the progress call that saw it complete.
  auto finish = [&](Pending& p, int tid) {
    p.done = true;
    p.record.end_us = wall_us();
    if (trace) trace->collective(p.record, tid);
  };
  auto progress = [&](std::vector<Pending>& pending) {
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if (pending[i].done) continue;
      int flag = 0;
      MPI_Test(&pending[i].request, &flag, MPI_STATUS_IGNORE);
      if (flag) finish(pending[i], 1 + int(i));
    }
  };
  auto run_compute = [&](int b, std::vector<Pending>* pending) {
    const int64_t t0 = wall_us();
    for (int k = 0; k < kSlices; ++k) {
      sink += compute(work, passes_per_slice);
      if (pending) progress(*pending);
    }
    if (trace) trace->compute(t0, wall_us(), {{"phase", phase}, {"repeat", rep}, {"bucket", b}});
  };
  auto start_allreduce = [&](int b) {
    Pending p;
    p.record = {"allreduce", "library (MPI_Iallreduce)", ++seq, bucket * sizeof(float), peers, wall_us(), 0};
    MPI_Iallreduce(MPI_IN_PLACE, grads[std::size_t(b)].data(), int(bucket), MPI_FLOAT, MPI_SUM, s.comm(), &p.request);
    return p;
  };
  auto wait_all = [&](std::vector<Pending>& pending) {
    s.guarded("comm overlap's all-reduces (MPI_Wait)", [&] {
      for (std::size_t i = 0; i < pending.size(); ++i)
        if (!pending[i].done) {
          MPI_Wait(&pending[i].request, MPI_STATUS_IGNORE);
          finish(pending[i], 1 + int(i));
        }
    });
  };
  auto timed = [&](const char* name, auto&& body) {
    phase = name;
    s.guarded("comm overlap's barrier", [&] { MPI_Barrier(s.comm()); });
    const double t0 = MPI_Wtime();
    body();
    return slowest(s, MPI_Wtime() - t0);
  };

  std::vector<Timings> runs;
  long long wrong = 0;  // elements of the overlapped all-reduces' results that are not the sum over ranks
  for (rep = 0; rep < o.repeats + 1; ++rep) {  // the first is warm-up
    Timings t;
    t.compute = timed("compute alone", [&] {
      for (int b = 0; b < o.buckets; ++b) run_compute(b, nullptr);
    });
    auto all_reduces = [&] {
      for (int b = 0; b < o.buckets; ++b) {
        if (!library) {
          auto* bytes = reinterpret_cast<std::byte*>(grads[std::size_t(b)].data());
          s.run(Collective::allreduce, o.algo, bytes, bytes, bucket, DType::f32, RedOp::sum);
          continue;
        }
        std::vector<Pending> one{start_allreduce(b)};
        wait_all(one);
      }
    };
    t.comm = timed("all-reduces alone", all_reduces);
    t.back_to_back = timed("back to back", [&] {
      for (int b = 0; b < o.buckets; ++b) run_compute(b, nullptr);
      all_reduces();
    });
    for (std::vector<float>& g : grads) std::fill(g.begin(), g.end(), float(s.rank() + 1));
    t.overlapped = timed("overlapped", [&] {
      if (!library) {
        CommThread comm(s, o.algo, grads);
        for (int b = 0; b < o.buckets; ++b) {
          run_compute(b, nullptr);
          comm.post(b);
        }
        comm.finish();
        return;
      }
      std::vector<Pending> pending;
      pending.reserve(std::size_t(o.buckets));
      for (int b = 0; b < o.buckets; ++b) {
        run_compute(b, &pending);  // bucket b's gradients are ready after its compute
        pending.push_back(start_allreduce(b));
      }
      wait_all(pending);
    });
    // Each element now holds 1 + 2 + ... + size, exactly in fp32 for any sum order at these sizes.
    const float want = float(s.size() * (s.size() + 1) / 2);
    for (const std::vector<float>& g : grads) wrong += std::count_if(g.begin(), g.end(), [&](float v) { return v != want; });
    if (rep > 0) runs.push_back(t);
  }
  auto median = [&](double Timings::*field) {
    std::vector<double> v;
    for (const Timings& t : runs) v.push_back(t.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  long long wrong_all = 0;
  s.guarded("comm overlap's count of wrong results (MPI_Allreduce)", [&] { MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG_LONG, MPI_SUM, s.comm()); });
  const Timings m{median(&Timings::compute), median(&Timings::comm), median(&Timings::back_to_back), median(&Timings::overlapped)};
  const double exposed = std::max(0.0, m.overlapped - m.compute), ratio = m.comm > 0 ? 1 - exposed / m.comm : 0;
  if (s.rank() == 0 && o.json) {
    std::printf("%s\n", nlohmann::json{{"ranks", s.size()}, {"algo", algo_name(o.algo)}, {"bytes", o.bytes}, {"buckets", o.buckets},
                                       {"compute_ms_per_bucket", o.compute_ms}, {"compute_s", m.compute},
                                       {"allreduce_s", m.comm}, {"back_to_back_s", m.back_to_back},
                                       {"overlapped_s", m.overlapped}, {"exposed_comm_s", exposed}, {"overlap_ratio", ratio},
                                       {"wrong", wrong_all}, {"sink", sink}}.dump(1).c_str());
  } else if (s.rank() == 0) {
    const std::string how = library ? "MPI_Iallreduce" : fmt::format("own {} on a communication thread", algo_name(o.algo));
    std::printf("comm overlap: %d ranks, %d buckets of %.1f MiB fp32 (%s), compute target %d x %.1f ms; medians of %d\n",
                s.size(), o.buckets, double(bucket * sizeof(float)) / (1 << 20), how.c_str(), o.buckets, o.compute_ms, o.repeats);
    std::printf("  compute alone          %9.2f ms\n", m.compute * 1e3);
    std::printf("  all-reduces alone      %9.2f ms\n", m.comm * 1e3);
    std::printf("  back to back           %9.2f ms\n", m.back_to_back * 1e3);
    std::printf("  overlapped             %9.2f ms\n", m.overlapped * 1e3);
    std::printf("  exposed communication  %9.2f ms (overlapped - compute alone)\n", exposed * 1e3);
    std::printf("  overlap ratio          %9.2f (1 - exposed / all-reduces alone)\n", ratio);
    std::printf("  #wrong                 %9lld (elements of the overlapped all-reduces' results, all ranks)\n", wrong_all);
  }
  std::fflush(stdout);
  return wrong_all == 0 ? 0 : 1;
}

}  // namespace kl::comm
