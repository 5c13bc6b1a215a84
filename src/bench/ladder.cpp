#include "kernelab/ladder.h"

#include <map>
#include <tuple>

#include "kernelab/op.h"

namespace kl {

std::vector<Ladder> make_ladders(const std::vector<Point>& points) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<const Point*>> groups;
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> order;
  for (const Point& p : points) {
    auto key = std::make_tuple(p.op, p.label, p.dtype, p.backend);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&p);
  }
  std::vector<Ladder> out;
  for (const auto& key : order) {
    const auto& pts = groups[key];
    const Op& op = find_op(std::get<0>(key));
    Ladder L{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), pts.front()->device, {}};
    const Point* peer = nullptr;
    for (const Point* p : pts)
      if (p->peer) peer = p;
    const Point* below = nullptr;  // the fastest config of the last rung seen
    for (const Variant& v : op.variants) {  // registry order is rung order, then config order
      const Point* fastest = nullptr;
      for (const Config& c : v.configs)
        for (const Point* p : pts) {
          if (p->variant != v.name || p->config != c.name) continue;
          LadderRow row{*p, v.note, {}, {}, "", ""};
          if (below && !p->peer) {
            row.vs_below = below->median_s / p->median_s;
            row.below = below->variant;
          }
          if (peer && peer != p) {
            row.vs_peer = peer->median_s / p->median_s;
            row.peer = peer->variant;
          }
          if (!fastest || p->median_s < fastest->median_s) fastest = p;
          L.rows.push_back(row);
        }
      if (fastest && !fastest->peer) below = fastest;
    }
    out.push_back(std::move(L));
  }
  return out;
}

std::vector<Crossover> find_crossovers(const std::vector<Ladder>& ladders, const std::string& axis) {
  std::vector<Crossover> out;
  for (const Ladder& L : ladders)
    for (const LadderRow& r : L.rows)
      if (r.vs_below && *r.vs_below < 1.0) {
        std::string value = L.label;
        auto at = L.label.find(axis + "=");
        if (at != std::string::npos) value = L.label.substr(at + axis.size() + 1, L.label.find(',', at) - at - axis.size() - 1);
        out.push_back({L.op, r.point.variant, r.point.config, r.below, L.backend, L.dtype, value, *r.vs_below});
      }
  return out;
}

}  // namespace kl
