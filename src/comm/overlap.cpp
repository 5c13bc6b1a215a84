#include "comm/overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <vector>

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

double slowest(Session& s, double t) {
  double all = 0;
  MPI_Allreduce(&t, &all, 1, MPI_DOUBLE, MPI_MAX, s.comm());
  return all;
}

}  // namespace

int run_overlap(Session& s, const OverlapOptions& o) {
  std::vector<float> work(16384, 1.0f);  // 64 KiB: in L2
  const auto calibrate_start = MPI_Wtime();
  compute(work, 200);
  const double per_pass = (MPI_Wtime() - calibrate_start) / 200;
  constexpr int kSlices = 50;  // progress calls per bucket of compute
  const long passes_per_slice = std::max(1L, long(o.compute_ms / 1e3 / per_pass / kSlices));
  const std::size_t bucket = o.bytes / std::size_t(o.buckets) / sizeof(float);
  std::vector<std::vector<float>> grads(std::size_t(o.buckets), std::vector<float>(bucket, 1.0f));
  float sink = 0;

  auto run_compute = [&](std::vector<MPI_Request>* pending) {
    for (int k = 0; k < kSlices; ++k) {
      sink += compute(work, passes_per_slice);
      if (pending && !pending->empty()) {
        int done = 0;
        MPI_Testall(int(pending->size()), pending->data(), &done, MPI_STATUSES_IGNORE);
      }
    }
  };
  auto start_allreduce = [&](int b, MPI_Request* r) {
    MPI_Iallreduce(MPI_IN_PLACE, grads[std::size_t(b)].data(), int(bucket), MPI_FLOAT, MPI_SUM, s.comm(), r);
  };
  auto timed = [&](auto&& body) {
    MPI_Barrier(s.comm());
    const double t0 = MPI_Wtime();
    body();
    return slowest(s, MPI_Wtime() - t0);
  };

  std::vector<Timings> runs;
  for (int rep = 0; rep < o.repeats + 1; ++rep) {  // the first is warm-up
    Timings t;
    t.compute = timed([&] {
      for (int b = 0; b < o.buckets; ++b) run_compute(nullptr);
    });
    t.comm = timed([&] {
      for (int b = 0; b < o.buckets; ++b) {
        MPI_Request r;
        start_allreduce(b, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    });
    t.back_to_back = timed([&] {
      for (int b = 0; b < o.buckets; ++b) run_compute(nullptr);
      for (int b = 0; b < o.buckets; ++b) {
        MPI_Request r;
        start_allreduce(b, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    });
    t.overlapped = timed([&] {
      std::vector<MPI_Request> pending;
      for (int b = 0; b < o.buckets; ++b) {
        run_compute(&pending);  // bucket b's gradients are ready after its compute
        pending.push_back(MPI_REQUEST_NULL);
        start_allreduce(b, &pending.back());
      }
      MPI_Waitall(int(pending.size()), pending.data(), MPI_STATUSES_IGNORE);
    });
    if (rep > 0) runs.push_back(t);
  }
  auto median = [&](double Timings::*field) {
    std::vector<double> v;
    for (const Timings& t : runs) v.push_back(t.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const Timings m{median(&Timings::compute), median(&Timings::comm), median(&Timings::back_to_back), median(&Timings::overlapped)};
  const double exposed = std::max(0.0, m.overlapped - m.compute), ratio = m.comm > 0 ? 1 - exposed / m.comm : 0;
  if (s.rank() == 0 && o.json) {
    std::printf("%s\n", nlohmann::json{{"ranks", s.size()}, {"bytes", o.bytes}, {"buckets", o.buckets},
                                       {"compute_ms_per_bucket", o.compute_ms}, {"compute_s", m.compute},
                                       {"allreduce_s", m.comm}, {"back_to_back_s", m.back_to_back},
                                       {"overlapped_s", m.overlapped}, {"exposed_comm_s", exposed}, {"overlap_ratio", ratio},
                                       {"sink", sink}}.dump(1).c_str());
  } else if (s.rank() == 0) {
    std::printf("comm overlap: %d ranks, %d buckets of %.1f MiB fp32 (MPI_Iallreduce), compute target %d x %.1f ms; medians of %d\n",
                s.size(), o.buckets, double(bucket * sizeof(float)) / (1 << 20), o.buckets, o.compute_ms, o.repeats);
    std::printf("  compute alone          %9.2f ms\n", m.compute * 1e3);
    std::printf("  all-reduces alone      %9.2f ms\n", m.comm * 1e3);
    std::printf("  back to back           %9.2f ms\n", m.back_to_back * 1e3);
    std::printf("  overlapped             %9.2f ms\n", m.overlapped * 1e3);
    std::printf("  exposed communication  %9.2f ms (overlapped - compute alone)\n", exposed * 1e3);
    std::printf("  overlap ratio          %9.2f (1 - exposed / all-reduces alone)\n", ratio);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace kl::comm
