#include "comm/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace kl::comm {

StragglerReport find_straggler(const std::vector<std::vector<Record>>& per_rank) {
  const std::size_t n = per_rank.size();
  std::map<uint64_t, std::vector<const Record*>> by_seq;
  for (std::size_t r = 0; r < n; ++r)
    for (const Record& rec : per_rank[r]) {
      std::vector<const Record*>& v = by_seq[rec.seq];
      v.resize(n, nullptr);
      v[r] = &rec;
    }
  std::vector<double> total(n, 0), worst(n, 0);
  std::vector<int> last(n, 0);
  std::vector<const Record*> worst_rec(n, nullptr);
  int collectives = 0;
  for (const auto& [seq, recs] : by_seq) {
    if (std::any_of(recs.begin(), recs.end(), [](const Record* p) { return p == nullptr; })) continue;
    ++collectives;
    int64_t first = recs[0]->start_us;
    std::size_t latest = 0;
    for (std::size_t r = 0; r < n; ++r) {
      first = std::min(first, recs[r]->start_us);
      if (recs[r]->start_us > recs[latest]->start_us) latest = r;
    }
    ++last[latest];
    for (std::size_t r = 0; r < n; ++r) {
      const double lag = double(recs[r]->start_us - first) / 1e3;
      total[r] += lag;
      if (!worst_rec[r] || lag > worst[r]) worst[r] = lag, worst_rec[r] = recs[r];
    }
  }
  StragglerReport s;
  s.collectives = collectives;
  if (collectives == 0) return s;
  const std::size_t r = std::size_t(std::max_element(total.begin(), total.end()) - total.begin());
  s.rank = int(r);
  s.times_last = last[r];
  s.mean_lag_ms = total[r] / collectives;
  s.max_lag_ms = worst[r];
  s.worst_seq = worst_rec[r]->seq;
  s.worst_op = worst_rec[r]->op;
  return s;
}

std::string straggler_text(const StragglerReport& s, double threshold_ms) {
  if (s.rank < 0) return "no straggler: no collective recorded by every rank";
  if (s.max_lag_ms < threshold_ms)
    return fmt::format("no straggler: every rank entered each of {} collectives within {:g} ms of the first (largest lag "
                       "{:.2f} ms, rank {})", s.collectives, threshold_ms, s.max_lag_ms, s.rank);
  return fmt::format("straggler: rank {} lag {:.1f} ms at {} seq {} (mean lag {:.2f} ms over {} collectives, last to "
                     "enter in {} of them)", s.rank, s.max_lag_ms, s.worst_op, s.worst_seq, s.mean_lag_ms, s.collectives,
                     s.times_last);
}

nlohmann::json straggler_json(const StragglerReport& s, double threshold_ms) {
  return {{"rank", s.rank}, {"is_straggler", s.rank >= 0 && s.max_lag_ms >= threshold_ms}, {"threshold_ms", threshold_ms},
          {"max_lag_ms", s.max_lag_ms}, {"mean_lag_ms", s.mean_lag_ms}, {"seq", s.worst_seq}, {"op", s.worst_op},
          {"collectives", s.collectives}, {"times_last", s.times_last}, {"text", straggler_text(s, threshold_ms)}};
}

}  // namespace kl::comm
