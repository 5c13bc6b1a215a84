// A ladder: the points of one op on one problem and backend, in rung order, with each rung's
// speed-up over the rung below and against the library peer. Shared by bench, sweep, report.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "kernelab/harness.h"

namespace kl {

struct LadderRow {
  Point point;
  std::string note;                   // the variant's rung note
  std::optional<double> vs_below;     // median of the rung below / this median (>1: faster)
  std::optional<double> vs_peer;      // median of the peer / this median (>1: faster than the peer)
  std::string below, peer;            // names of the rungs compared against
};

struct Ladder {
  std::string op, label, dtype, backend, device;
  std::vector<LadderRow> rows;
};

// Groups points by (op, label, dtype, backend) and orders each group as the registry lists the
// variants and their configs. A rung is compared with the fastest config of the rung below;
// peers are compared against, never counted as "the rung below".
std::vector<Ladder> make_ladders(const std::vector<Point>& points);

// Where a rung is slower than the rung below at some value of a swept axis.
struct Crossover {
  std::string op, variant, config, below, backend, dtype, axis_value;
  double speedup = 0;  // < 1
};
std::vector<Crossover> find_crossovers(const std::vector<Ladder>& ladders, const std::string& axis);

}  // namespace kl
