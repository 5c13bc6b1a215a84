#include "trace/ranks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernelab/error.h"
#include "trace/analysis.h"

namespace kl::trace {

namespace {

// One event per rank (indices into each rank's comm) per collective.
using Match = std::vector<const CommEvent*>;

// By args.seq: a collective is matched when every rank has its seq under the same name.
std::vector<Match> match_by_seq(const std::vector<RankTrace>& t, uint64_t& mismatches) {
  std::map<int64_t, Match> by_seq;
  for (size_t r = 0; r < t.size(); ++r)
    for (const CommEvent& e : t[r].comm) {
      Match& m = by_seq[e.seq];
      m.resize(t.size(), nullptr);
      m[r] = &e;
    }
  std::vector<Match> out;
  for (auto& [seq, m] : by_seq) {
    if (std::any_of(m.begin(), m.end(), [](const CommEvent* e) { return e == nullptr; })) continue;
    if (std::any_of(m.begin(), m.end(), [&](const CommEvent* e) { return e->name != m[0]->name; })) {
      ++mismatches;
      continue;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Per name, in order: the ranks' next events match when they share a moment (the latest start is
// not after the earliest end); else the one that ends first cannot overlap the latest-starting
// rank's event or any later one of that rank, and is left unmatched.
std::vector<Match> match_by_order(const std::vector<RankTrace>& t) {
  std::map<std::string, std::vector<std::vector<const CommEvent*>>> by_name;
  for (size_t r = 0; r < t.size(); ++r)
    for (const CommEvent& e : t[r].comm) {
      auto& lists = by_name[e.name];
      lists.resize(t.size());
      lists[r].push_back(&e);
    }
  std::vector<Match> out;
  for (auto& [name, lists] : by_name) {
    std::vector<size_t> next(t.size(), 0);
    for (;;) {
      bool done = false;
      for (size_t r = 0; r < t.size(); ++r) done = done || next[r] >= lists[r].size();
      if (done) break;
      size_t first_end = 0, last_start = 0;
      for (size_t r = 0; r < t.size(); ++r) {
        if (lists[r][next[r]]->end < lists[first_end][next[first_end]]->end) first_end = r;
        if (lists[r][next[r]]->start > lists[last_start][next[last_start]]->start) last_start = r;
      }
      if (lists[last_start][next[last_start]]->start > lists[first_end][next[first_end]]->end) {
        ++next[first_end];
        continue;
      }
      Match m(t.size());
      for (size_t r = 0; r < t.size(); ++r) m[r] = lists[r][next[r]++];
      out.push_back(std::move(m));
    }
  }
  return out;
}

// Length of the merged intervals `a` covered by the merged intervals `b`.
Ns covered_by(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  size_t hint = 0;
  Ns total = 0;
  for (const Interval& i : a) total += covered_within(b, i.start, i.end, hint);
  return total;
}

double us(Ns ns) { return double(ns) / 1e3; }

}  // namespace

RanksReport analyze_ranks(std::vector<RankTrace> traces) {
  if (traces.empty()) bad_input("trace analyze: no trace given");
  std::set<int64_t> claimed;
  for (size_t i = 0; i < traces.size(); ++i) {
    if (traces[i].rank < 0) traces[i].rank = int64_t(i);
    if (!claimed.insert(traces[i].rank).second)
      bad_input(fmt::format("trace analyze: two traces are rank {} (distributedInfo.rank, or the position when absent); {} is one",
                            traces[i].rank, traces[i].source));
  }
  std::stable_sort(traces.begin(), traces.end(), [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });

  RanksReport r;
  const bool all_seq = std::all_of(traces.begin(), traces.end(), [](const RankTrace& t) {
    return std::all_of(t.comm.begin(), t.comm.end(), [](const CommEvent& e) { return e.seq >= 0; });
  });
  r.matched_by = all_seq ? "seq" : "order";
  std::vector<Match> matches = all_seq ? match_by_seq(traces, r.name_mismatches) : match_by_order(traces);

  for (const RankTrace& t : traces) {
    RankSummary s;
    s.rank = t.rank, s.source = t.source, s.gpu = t.gpu, s.events = t.comm.size();
    std::vector<Interval> comm;
    for (const CommEvent& e : t.comm) comm.push_back({e.start, e.end});
    const std::vector<Interval> c = merge_intervals(std::move(comm)), k = merge_intervals(t.compute);
    s.comm_time = covered(c), s.compute_time = covered(k), s.overlapped = covered_by(c, k);
    s.exposed = s.comm_time - s.overlapped;
    r.ranks.push_back(std::move(s));
  }
  for (const Match& m : matches) {
    MatchedCollective x;
    x.name = m[0]->name, x.seq = m[0]->seq;
    Ns first = m[0]->start;
    for (size_t i = 0; i < m.size(); ++i) {
      x.starts.push_back(m[i]->start);
      first = std::min(first, m[i]->start);
      if (m[i]->start > m[x.slowest]->start) x.slowest = i;
    }
    x.lag = m[x.slowest]->start - first;
    for (size_t i = 0; i < m.size(); ++i) {
      r.ranks[i].matched += 1;
      r.ranks[i].wait += m[x.slowest]->start - m[i]->start;
    }
    if (x.lag > 0) r.ranks[x.slowest].times_last += 1;  // a tie makes no rank last
    r.ranks[x.slowest].lag_caused += x.lag;
    r.collectives.push_back(std::move(x));
  }
  std::sort(r.collectives.begin(), r.collectives.end(), [](const MatchedCollective& a, const MatchedCollective& b) {
    return *std::min_element(a.starts.begin(), a.starts.end()) < *std::min_element(b.starts.begin(), b.starts.end());
  });
  return r;
}

std::string ranks_text(const RanksReport& r, int top) {
  std::string out = fmt::format(
      "{} ranks; communication: {}; exposed = communication not under compute; wait = time from its arrival to the last "
      "rank's, summed over matched collectives\n",
      r.ranks.size(), r.ranks.empty() || r.ranks[0].gpu ? "NCCL kernels (compute: computation kernels)"
                                                        : "host collective events (compute: cpu_op events)");
  out += fmt::format("{:>5}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>7}  {:>9}  {:>5}  {:>12}  {}\n", "rank", "comm", "exposed",
                     "overlapped", "compute", "wait", "events", "matched", "last", "lag caused", "trace");
  for (const RankSummary& s : r.ranks)
    out += fmt::format("{:>5}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>7}  {:>9}  {:>5}  {:>12}  {}\n", s.rank,
                       format_ns(double(s.comm_time)), format_ns(double(s.exposed)), format_ns(double(s.overlapped)),
                       format_ns(double(s.compute_time)), format_ns(double(s.wait)), s.events, s.matched, s.times_last,
                       format_ns(double(s.lag_caused)), s.source);
  out += fmt::format("collectives matched across all ranks: {} (by {}){}\n", r.collectives.size(),
                     r.matched_by == "seq" ? "sequence number" : "name, in order, overlapping in time",
                     r.name_mismatches ? fmt::format("; {} sequence numbers with different names on different ranks", r.name_mismatches)
                                       : "");
  if (r.collectives.empty()) return out;
  const auto most = std::max_element(r.ranks.begin(), r.ranks.end(), [](const RankSummary& a, const RankSummary& b) {
    return a.lag_caused < b.lag_caused;
  });
  out += fmt::format("slowest rank: {} (last to arrive in {} of {} collectives, {} of lag in all)\n", most->rank, most->times_last,
                     r.collectives.size(), format_ns(double(most->lag_caused)));
  std::vector<const MatchedCollective*> by_lag;
  for (const MatchedCollective& c : r.collectives) by_lag.push_back(&c);
  std::stable_sort(by_lag.begin(), by_lag.end(), [](const MatchedCollective* a, const MatchedCollective* b) { return a->lag > b->lag; });
  if (top > 0 && by_lag.size() > size_t(top)) by_lag.resize(size_t(top));
  out += fmt::format("largest lags (the last rank's start - the first rank's):\n{:>6}  {:>5}  {:>12}  {}\n", "seq", "last", "lag", "collective");
  for (const MatchedCollective* c : by_lag)
    out += fmt::format("{:>6}  {:>5}  {:>12}  {}\n", c->seq >= 0 ? std::to_string(c->seq) : "-", r.ranks[c->slowest].rank,
                       format_ns(double(c->lag)), shortened(c->name, 70));
  return out;
}

nlohmann::json ranks_json(const RanksReport& r) {
  nlohmann::json ranks = nlohmann::json::array(), colls = nlohmann::json::array();
  for (const RankSummary& s : r.ranks)
    ranks.push_back({{"rank", s.rank}, {"source", s.source}, {"comm_from", s.gpu ? "gpu_kernels" : "host_events"},
                     {"comm_events", s.events}, {"comm_us", us(s.comm_time)}, {"compute_us", us(s.compute_time)},
                     {"overlapped_us", us(s.overlapped)}, {"exposed_comm_us", us(s.exposed)}, {"wait_us", us(s.wait)},
                     {"matched", s.matched}, {"times_last", s.times_last}, {"lag_caused_us", us(s.lag_caused)}});
  for (const MatchedCollective& c : r.collectives) {
    nlohmann::json starts = nlohmann::json::array();
    for (Ns s : c.starts) starts.push_back(us(s));
    colls.push_back({{"name", c.name}, {"seq", c.seq >= 0 ? nlohmann::json(c.seq) : nlohmann::json()},
                     {"slowest_rank", r.ranks[c.slowest].rank}, {"lag_us", us(c.lag)}, {"start_us", starts}});
  }
  nlohmann::json slowest = nullptr;
  if (!r.collectives.empty()) {
    const auto most = std::max_element(r.ranks.begin(), r.ranks.end(), [](const RankSummary& a, const RankSummary& b) {
      return a.lag_caused < b.lag_caused;
    });
    slowest = {{"rank", most->rank}, {"times_last", most->times_last}, {"lag_caused_us", us(most->lag_caused)}};
  }
  return {{"ranks", ranks}, {"matched_by", r.matched_by}, {"name_mismatches", r.name_mismatches},
          {"collectives", colls}, {"slowest_rank", slowest}};
}

}  // namespace kl::trace
