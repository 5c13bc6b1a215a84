// nccl-tests' conventions: time is the mean of `iters` calls after `warmup`, the slowest rank's;
// algbw = size / time, busbw = algbw x the op's factor (model::bus_factor); "#wrong" counts the
// elements of one checked call (fresh inputs) outside the reference's tolerance (data.h).
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "comm/bench.h"
#include "comm/data.h"
#include "comm/straggler.h"

namespace kl::comm {

namespace {

struct Placement {
  double time_us = 0, algbw = 0, busbw = 0;
  std::size_t wrong = 0;
};

Placement measure(Session& s, const BenchOptions& o, Algo a, std::size_t block, bool in_place, BenchTarget& b) {
  const Layout l = layout(o.op, block, s.size(), s.rank());
  const std::size_t e = dtype_size(o.dtype);
  const auto [in, out] = placed(o.op, l, e, in_place, b.in(), b.out());
  std::vector<std::byte> input(l.in_count * e);
  fill_input(o.op, input.data(), block, o.dtype, s.size(), s.rank(), kInputSeed);
  b.write(out, std::vector<std::byte>(l.out_count * e, std::byte{0xff}));  // poisoned: NaN in every dtype
  b.write(in, input);
  b.run(o.op, a, in, out, block, o.dtype, o.redop, 1);
  Placement p;
  const unsigned long long wrong = check_against_reference(reference(o.op, block, o.dtype, o.redop, s.size(), s.rank(), kInputSeed),
                                                           b.read(out, l.out_count * e).data(), o.dtype).wrong;
  unsigned long long total = 0;
  s.guarded("the bench's count of wrong elements (MPI_Allreduce)",
            [&] { MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, s.comm()); });
  p.wrong = std::size_t(total);
  b.run(o.op, a, in, out, block, o.dtype, o.redop, o.warmup);
  s.guarded("the bench's barrier before timing", [&] { MPI_Barrier(s.comm()); });
  const double t0 = MPI_Wtime();
  b.run(o.op, a, in, out, block, o.dtype, o.redop, o.iters);
  double elapsed = MPI_Wtime() - t0, slowest = 0;
  s.guarded("the bench's slowest-rank time (MPI_Allreduce)",
            [&] { MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, s.comm()); });
  const double seconds = slowest / o.iters, bytes = double(l.reported_count() * e);
  p.time_us = seconds * 1e6;
  p.algbw = bytes / seconds / 1e9;
  p.busbw = p.algbw * model::bus_factor(o.op, s.size());
  return p;
}

// Host memory; the session's own algorithms on MPI point-to-point, or the MPI library.
class HostTarget final : public BenchTarget {
 public:
  explicit HostTarget(Session& s) : s_(s) {}
  std::string ranks_text() const override { return fmt::format("{} ranks (MPI processes)", s_.size()); }
  std::string algo_text(Algo a) const override {
    return a == Algo::library ? " (the MPI library's own)" : " (written here, on the MPI point-to-point transport)";
  }
  void resize(std::size_t in_bytes, std::size_t out_bytes) override { in_.assign(in_bytes, {}), out_.assign(out_bytes, {}); }
  std::byte* in() override { return in_.data(); }
  std::byte* out() override { return out_.data(); }
  void write(std::byte* dst, const std::vector<std::byte>& host) override { std::memcpy(dst, host.data(), host.size()); }
  std::vector<std::byte> read(const std::byte* src, std::size_t bytes) override { return {src, src + bytes}; }
  void run(Collective c, Algo a, const std::byte* in, std::byte* out, std::size_t block, DType t, RedOp op, int calls) override {
    for (int i = 0; i < calls; ++i) s_.run(c, a, in, out, block, t, op);
  }

 private:
  Session& s_;
  std::vector<std::byte> in_, out_;
};

std::vector<std::size_t> sizes(const BenchOptions& o) {
  std::vector<std::size_t> out;
  for (double b = double(o.min_bytes); b <= double(o.max_bytes) * (1 + 1e-9); b *= o.factor) {
    out.push_back(std::size_t(b));
    if (o.factor <= 1) break;
  }
  return out;
}

// Elements per block for a reported size of `bytes` (at least one).
std::size_t block_for(Collective c, std::size_t bytes, std::size_t e, int ranks) {
  const std::size_t per = c == Collective::allreduce ? e : e * std::size_t(ranks);
  return std::max<std::size_t>(1, bytes / per);
}

std::string placement_cells(const Placement& p) {
  return fmt::format("{:9.1f}  {:6.2f}  {:6.2f}  {:6}", p.time_us, p.algbw, p.busbw, p.wrong);
}

nlohmann::json placement_json(const Placement& p) {
  return {{"time_us", p.time_us}, {"algbw_gbs", p.algbw}, {"busbw_gbs", p.busbw}, {"wrong", p.wrong}};
}

// Every rank's recorder reaches rank 0 (seq and entry time; op names from rank 0's own).
std::vector<std::vector<Record>> gather_records(Session& s) {
  const std::vector<Record> mine = s.recorder().records();
  std::vector<int64_t> flat;
  for (const Record& r : mine) flat.insert(flat.end(), {int64_t(r.seq), r.start_us, r.end_us});
  int count = int(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(s.size())), offsets(static_cast<std::size_t>(s.size()));
  s.guarded("the gathering of the flight recorders (MPI_Gather)",
            [&] { MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, s.comm()); });
  int total = 0;
  for (int r = 0; r < s.size(); ++r) offsets[std::size_t(r)] = total, total += counts[std::size_t(r)];
  std::vector<int64_t> all(std::size_t(std::max(total, 1)));
  s.guarded("the gathering of the flight recorders (MPI_Gatherv)", [&] {
    MPI_Gatherv(flat.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T, 0, s.comm());
  });
  std::vector<std::vector<Record>> per_rank(std::size_t(s.size()));
  if (s.rank() != 0) return per_rank;
  std::map<uint64_t, const Record*> by_seq;
  for (const Record& r : mine) by_seq[r.seq] = &r;
  for (int r = 0; r < s.size(); ++r)
    for (int i = 0; i < counts[std::size_t(r)]; i += 3) {
      const int64_t* v = &all[std::size_t(offsets[std::size_t(r)] + i)];
      const auto same = by_seq.find(uint64_t(v[0]));
      Record rec = same == by_seq.end() ? Record{} : *same->second;
      rec.seq = uint64_t(v[0]), rec.start_us = v[1], rec.end_us = v[2];
      per_rank[std::size_t(r)].push_back(rec);
    }
  return per_rank;
}

}  // namespace

int run_bench(Session& s, const BenchOptions& o) {
  HostTarget host(s);
  return run_bench(s, o, host);
}

int run_bench(Session& s, const BenchOptions& o, BenchTarget& b) {
  const bool root = s.rank() == 0;
  const std::size_t e = dtype_size(o.dtype);
  const std::string redop = is_reduction(o.op) ? std::string(redop_name(o.redop)) : "none";
  nlohmann::json algos_json = nlohmann::json::array();
  std::size_t wrong = 0;
  if (root && !o.json)
    std::printf("# kernelab comm bench: %s, %s, %s, nccl-tests columns; time: mean of %d calls after "
                "%d warm-up, slowest rank\n", std::string(collective_name(o.op)).c_str(), b.ranks_text().c_str(),
                nccl_type_name(o.dtype).c_str(), o.iters, o.warmup);
  for (Algo a : o.algos) {
    if (root && !o.json) {
      std::printf("#\n# algorithm: %s%s\n", std::string(algo_name(a)).c_str(), b.algo_text(a).c_str());
      std::printf("#                                                   out-of-place                       in-place\n");
      std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
      std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n");
    }
    nlohmann::json rows = nlohmann::json::array();
    double busbw_sum = 0;
    int points = 0;
    for (std::size_t bytes : sizes(o)) {
      const std::size_t block = block_for(o.op, bytes, e, s.size());
      const Layout l = layout(o.op, block, s.size(), s.rank());
      b.resize(l.in_count * e, l.out_count * e);
      const Placement oop = measure(s, o, a, block, false, b), ip = measure(s, o, a, block, true, b);
      wrong += oop.wrong + ip.wrong;
      busbw_sum += oop.busbw + ip.busbw, points += 2;
      const std::size_t size = l.reported_count() * e;
      if (root && !o.json)
        std::printf("%12zu  %12zu  %8s  %6s  %6d  %s  %s\n", size, l.reported_count(), nccl_type_name(o.dtype).c_str(),
                    redop.c_str(), -1, placement_cells(oop).c_str(), placement_cells(ip).c_str());
      rows.push_back({{"size", size}, {"count", l.reported_count()}, {"type", nccl_type_name(o.dtype)}, {"redop", redop},
                      {"root", -1}, {"out_of_place", placement_json(oop)}, {"in_place", placement_json(ip)}});
    }
    const double avg = points ? busbw_sum / points : 0;
    if (root && !o.json) std::printf("# Avg bus bandwidth    : %g\n", avg);
    algos_json.push_back({{"algo", algo_name(a)}, {"rows", rows}, {"avg_busbw_gbs", avg}});
  }
  const StragglerReport st = find_straggler(gather_records(s));
  if (root && !o.json) {
    std::printf("# Out of bounds values : %zu %s\n", wrong, wrong ? "FAILED" : "OK");
    std::printf("# %s\n", straggler_text(st, o.straggler_ms).c_str());
    if (s.keeps_dumps()) std::printf("# flight recorders: %s\n", s.dump_dir().c_str());
  }
  if (root && o.json)
    std::printf("%s\n", nlohmann::json{{"op", collective_name(o.op)}, {"ranks", s.size()}, {"transport", o.transport},
                                       {"dtype", nccl_type_name(o.dtype)},
                                       {"redop", redop}, {"iters", o.iters}, {"warmup", o.warmup}, {"algos", algos_json},
                                       {"wrong", wrong}, {"straggler", straggler_json(st, o.straggler_ms)},
                                       {"dump_dir", s.keeps_dumps() ? nlohmann::json(s.dump_dir()) : nlohmann::json()}}.dump(1).c_str());
  std::fflush(stdout);
  return wrong ? 1 : 0;
}

}  // namespace kl::comm
