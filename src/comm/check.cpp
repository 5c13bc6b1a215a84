// `comm check`: every algorithm beside the library on the same inputs. Rank 0 prints one row per
// case with the worst error as a fraction of the tolerance (data.h) over all ranks.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "comm/bench.h"
#include "comm/data.h"

namespace kl::comm {

namespace {

// Runs algorithm a on a fresh copy of the inputs; the output, copied out.
std::vector<std::byte> run_case(Session& s, const CheckCase& k, Algo a, const std::vector<std::byte>& input) {
  const Layout l = layout(k.op, k.block, s.size(), s.rank());
  const std::size_t e = dtype_size(k.t);
  std::vector<std::byte> in(l.in_count * e), out(l.out_count * e, std::byte{0xff});  // poisoned: NaN in every dtype
  const auto [src, dst] = placed(k.op, l, e, k.in_place, in.data(), out.data());
  std::memcpy(src, input.data(), input.size());
  s.run(k.op, a, src, dst, k.block, k.t, k.redop);
  std::vector<std::byte> result(l.out_count * e);
  std::memcpy(result.data(), dst, result.size());
  return result;
}

}  // namespace

int run_check(Session& s, const CheckOptions& o) {
  return check_cases(s, o, [&s](const CheckCase& k, Algo a, const std::vector<std::byte>& input) {
    return run_case(s, k, a, input);
  });
}

int check_cases(Session& s, const CheckOptions& o, const CaseRunner& run) {
  const bool root = s.rank() == 0;
  int cases = 0, failed = 0;
  nlohmann::json rows = nlohmann::json::array();
  if (root && !o.json)
    std::printf("%-14s %-9s %-9s %-5s %9s %-13s %12s %12s %s\n", "op", "algo", "type", "redop", "count", "placement",
                "err/tol ref", "err/tol peer", "result");
  for (Collective op : o.ops)
    for (DType t : o.dtypes)
      for (RedOp redop : is_reduction(op) ? std::vector{RedOp::sum, RedOp::max} : std::vector{RedOp::sum})
        for (std::size_t block : o.counts)
          for (bool in_place : {false, true}) {
            const CheckCase k{op, t, redop, block, in_place};
            std::vector<std::byte> input(layout(op, block, s.size(), s.rank()).in_count * dtype_size(t));
            fill_input(op, input.data(), block, t, s.size(), s.rank(), kInputSeed);
            const std::vector<std::byte> peer = run(k, Algo::library, input);
            const Reference want = reference(op, block, t, redop, s.size(), s.rank(), kInputSeed);
            for (Algo a : algos_of(op)) {
              const std::vector<std::byte> out = a == Algo::library ? peer : run(k, a, input);
              const Mismatch ref = check_against_reference(want, out.data(), t);
              const Mismatch vs = a == Algo::library ? Mismatch{} : check_against_peer(want, out.data(), peer.data(), t);
              double mine[3] = {ref.worst, vs.worst, double(ref.wrong + vs.wrong)}, all[3];
              MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, s.comm());
              const bool ok = all[2] == 0;
              ++cases, failed += !ok;
              const std::string redop_text = is_reduction(op) ? std::string(redop_name(redop)) : "none";
              const std::string place = in_place ? "in-place" : "out-of-place";
              if (root && !o.json)
                std::printf("%-14s %-9s %-9s %-5s %9zu %-13s %12.3g %12s %s\n", std::string(collective_name(op)).c_str(),
                            std::string(algo_name(a)).c_str(), nccl_type_name(t).c_str(), redop_text.c_str(), block,
                            place.c_str(), all[0], a == Algo::library ? "-" : fmt::format("{:.3g}", all[1]).c_str(),
                            ok ? "ok" : "WRONG");
              rows.push_back({{"op", collective_name(op)}, {"algo", algo_name(a)}, {"type", nccl_type_name(t)},
                              {"redop", redop_text}, {"count", block}, {"in_place", in_place},
                              {"err_over_tol_reference", std::isfinite(all[0]) ? all[0] : 1e300},
                              {"err_over_tol_peer", std::isfinite(all[1]) ? all[1] : 1e300}, {"ok", ok}});
            }
          }
  if (root && !o.json)
    std::printf("comm check: %d of %d cases passed on %d ranks (%s)\n", cases - failed, cases, s.size(), o.transport.c_str());
  if (root && o.json)
    std::printf("%s\n", nlohmann::json{{"ranks", s.size()}, {"transport", o.transport}, {"cases", cases}, {"failed", failed}, {"rows", rows}}.dump(1).c_str());
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace kl::comm
