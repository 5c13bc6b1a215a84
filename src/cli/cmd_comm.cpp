// `kernelab comm bench|check|doctor`: own collectives beside the MPI library's in nccl-tests'
// columns, every algorithm checked against the float64 reference, and the flight-recorder
// analysis of a run that hung, crashed or lagged. bench and check run on every rank of an MPI job:
// under mpirun as nccl-tests are, or starting mpirun themselves (comm/launcher.h).
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/common.h"
#include "comm/bench.h"
#include "comm/doctor.h"
#include "comm/launcher.h"
#include "comm/overlap.h"
#include "kernelab/error.h"

namespace kl::cli {

namespace {

using comm::Algo;
using comm::Collective;

struct RunFlags {  // what bench and check share
  std::optional<int> ranks;  // unset: the launcher's count, else 2
  double timeout_s = 300;
  std::vector<std::string> inject;
  std::string dump_dir;
  std::string trace_dir;
  std::size_t slice_bytes = std::size_t(4) << 20;
};

// "64M", "1G", "8" (nccl-tests' suffixes K, M, G: powers of 1024).
std::size_t parse_bytes(const std::string& flag, const std::string& s) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    bad_input(fmt::format("{} {}: not a size (bytes, or with K, M, G)", flag, s));
  }
  const std::string suffix = s.substr(pos);
  const double scale = suffix.empty() ? 1 : suffix == "K" || suffix == "k" ? 1024 : suffix == "M" || suffix == "m" ? 1 << 20
                     : suffix == "G" || suffix == "g" ? double(1 << 30) : 0;
  if (scale == 0 || !(v * scale >= 1) || v * scale > double(1u << 31))
    bad_input(fmt::format("{} {}: a size from 1 byte to 2G (bytes, or with K, M, G)", flag, s));
  return std::size_t(v * scale);
}

// nccl-tests' binaries (all_reduce_perf), MPI's functions (MPI_Allreduce) and dashes (all-reduce) name the ops too.
std::string canonical_op(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (ch != '_' && ch != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (out.rfind("mpi", 0) == 0) out.erase(0, 3);
  if (out.size() > 4 && out.ends_with("perf")) out.resize(out.size() - 4);
  return out;
}

Collective parse_op(const std::string& s) {
  const std::optional<Collective> c = model::parse_collective(canonical_op(s));
  if (!c)
    bad_input(fmt::format("unknown collective '{}' (allreduce, allgather, reducescatter, alltoall; nccl-tests' and MPI's "
                          "spellings such as all_reduce_perf and MPI_Allreduce too)",
                          s));
  return *c;
}

std::vector<Algo> parse_algos(Collective c, const std::string& s) {
  const std::vector<Algo> have = comm::algos_of(c);
  if (s.empty()) return have;
  std::vector<Algo> out;
  std::string names;
  for (Algo a : have) names += (names.empty() ? "" : ", ") + std::string(comm::algo_name(a));
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string name = s.substr(pos, comma - pos);
    pos = comma + 1;
    const std::optional<Algo> a = comm::parse_algo(name);
    if (!a || std::find(have.begin(), have.end(), *a) == have.end())
      bad_input(fmt::format("--algo {}: {} has {}", name, comm::collective_name(c), names));
    out.push_back(*a);
  }
  return out;
}

DType parse_comm_dtype(const std::string& s) {
  const std::optional<DType> t = parse_dtype(s);
  if (!t) bad_input(fmt::format("unknown --dtype '{}' (fp32, fp16, bf16)", s));
  return comm::check_comm_dtype(*t);
}

void add_run_flags(CLI::App& cmd, RunFlags& f, bool traced) {
  if (traced)
    cmd.add_option("--trace", f.trace_dir, "write one Chrome/Perfetto trace per rank to this folder (DIR/rank-R.json; trace analyze reads them)");
  cmd.add_option("--ranks", f.ranks, "MPI processes to start when not under mpirun (default 2)");
  cmd.add_option("--timeout", f.timeout_s, "seconds a collective may wait before the watchdog names who is missing and exits 1");
  cmd.add_option("--inject", f.inject,
                 "fault: rank=R,delay_ms=T[,at=SEQ] | rank=R,crash[,at=SEQ] | rank=R,hang[,at=SEQ]; at=init, at=start or at=end: "
                 "before MPI_Init or the run's start or end barrier");
  cmd.add_option("--dump-dir", f.dump_dir, "folder for the flight-recorder dumps and the status board (default: a new temporary folder)");
  cmd.add_option("--slice-bytes", f.slice_bytes, "bytes per message of the pipelined ring (default 4 MiB)");
}

// Validated here, before mpirun starts, so bad input is one message and exit 2.
comm::SessionOptions session_options(const RunFlags& f, nlohmann::json run) {
  if (f.ranks && (*f.ranks < 2 || *f.ranks > 64)) bad_input(fmt::format("--ranks {}: from 2 to 64", *f.ranks));
  if (!(f.timeout_s > 0)) bad_input(fmt::format("--timeout {}: must be positive seconds", f.timeout_s));
  if (f.slice_bytes < 64) bad_input(fmt::format("--slice-bytes {}: at least 64", f.slice_bytes));
  if (!f.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.trace_dir, ec);
    if (ec) bad_input(fmt::format("--trace {}: cannot create the folder: {}", f.trace_dir, ec.message()));
    if (!f.dump_dir.empty() && std::filesystem::equivalent(f.trace_dir, f.dump_dir, ec))
      bad_input(fmt::format("--trace {} is the --dump-dir: both write rank-R.json; give two folders", f.trace_dir));
  }
  const int world = comm::launcher_world_size();
  if (world && f.ranks && world != *f.ranks)
    bad_input(fmt::format("--ranks {} under a launcher that started {} ranks", *f.ranks, world));
  const int ranks = world ? world : f.ranks.value_or(2);
  comm::SessionOptions o;
  o.timeout_s = f.timeout_s;
  o.dump_dir = f.dump_dir;
  o.trace_dir = f.trace_dir;
  o.ring.slice_bytes = f.slice_bytes;
  nlohmann::json injections = nlohmann::json::array();
  for (const std::string& spec : f.inject) {
    o.injections.push_back(comm::parse_injection(spec, ranks));
    injections.push_back(comm::injection_text(o.injections.back()));
  }
  run["injections"] = injections;
  o.run = std::move(run);
  if (!comm::under_mpi_launcher()) comm::relaunch_under_mpirun(ranks);
  return o;
}

void check_transport(const std::string& transport) {
  if (transport != "mpi" && transport != "nccl") bad_input(fmt::format("--transport {}: mpi or nccl", transport));
#ifndef KERNELAB_HAVE_NCCL
  if (transport == "nccl") bad_input("--transport nccl: this kernelab was built without CUDA and NCCL");
#else
  // Without a GPU every rank would fail alike after mpirun started, which then waits out its kill timeouts (5 s).
  if (transport == "nccl" && !comm::under_mpi_launcher()) comm::require_nccl_gpu();
#endif
}

void add_comm_bench(CLI::App& comm_cmd) {
  auto* cmd = comm_cmd.add_subcommand("bench", "a collective, own algorithms beside the MPI library's, in nccl-tests' columns");
  auto op = std::make_shared<std::string>();
  auto algo = std::make_shared<std::string>();
  auto dtype = std::make_shared<std::string>("fp32");
  auto redop = std::make_shared<std::string>("sum");
  auto min_b = std::make_shared<std::string>("8"), max_b = std::make_shared<std::string>("64M");
  auto run = std::make_shared<RunFlags>();
  auto o = std::make_shared<comm::BenchOptions>();
  cmd->add_option("op", *op, "allreduce, allgather, reducescatter, alltoall")->required();
  cmd->add_option("--algo", *algo, "ring, tree (allreduce), pairwise (alltoall), library; comma separated (default: all of the op's)");
  cmd->add_option("-b,--minbytes", *min_b, "smallest size (bytes; K, M, G suffixes), default 8");
  cmd->add_option("-e,--maxbytes", *max_b, "largest size, default 64M");
  cmd->add_option("-f,--stepfactor", o->factor, "size multiplier between rows, default 2");
  cmd->add_option("--dtype", *dtype, "fp32, fp16, bf16");
  cmd->add_option("-o,--op", *redop, "reduction: sum, max");
  cmd->add_option("-n,--iters", o->iters, "timed calls per size, default 20");
  cmd->add_option("-w,--warmup-iters", o->warmup, "warm-up calls per size, default 5");
  cmd->add_option("--straggler-ms", o->straggler_ms, "lag past which a rank is reported as a straggler, default 20");
  cmd->add_flag("--json", o->json, "one JSON object: every size per algorithm, as the table");
  cmd->add_option("--transport", o->transport, "mpi (host memory, default) or nccl (device memory, built with CUDA)");
  add_run_flags(*cmd, *run, true);
  cmd->callback([=] {
    check_transport(o->transport);
    o->op = parse_op(*op);
    o->algos = parse_algos(o->op, *algo);
    o->dtype = parse_comm_dtype(*dtype);
    const std::optional<comm::RedOp> r = comm::parse_redop(*redop);
    if (!r) bad_input(fmt::format("unknown -o/--op '{}' (sum, max)", *redop));
    o->redop = *r;
    o->min_bytes = parse_bytes("-b", *min_b), o->max_bytes = parse_bytes("-e", *max_b);
    if (o->min_bytes > o->max_bytes) bad_input(fmt::format("-b {} is larger than -e {}", *min_b, *max_b));
    if (!(o->factor > 1) && o->min_bytes != o->max_bytes) bad_input(fmt::format("-f {}: must be above 1", o->factor));
    if (o->iters < 1 || o->warmup < 0) bad_input("-n must be at least 1 and -w at least 0");
    comm::Session s(session_options(*run, {{"command", "bench"}, {"op", *op}, {"dtype", *dtype}, {"transport", o->transport}}));
#ifdef KERNELAB_HAVE_NCCL
    const int code = o->transport == "nccl" ? comm::run_nccl_bench(s, *o) : comm::run_bench(s, *o);
#else
    const int code = comm::run_bench(s, *o);
#endif
    if (code) throw CLI::RuntimeError(code);
  });
}

void add_comm_check(CLI::App& comm_cmd) {
  auto* cmd = comm_cmd.add_subcommand("check", "every algorithm against the float64 reference and the MPI library");
  auto ops = std::make_shared<std::vector<std::string>>();
  auto dtypes = std::make_shared<std::vector<std::string>>();
  auto counts = std::make_shared<std::vector<std::size_t>>(std::vector<std::size_t>{1, 7, 1000, (1u << 20) + 3});
  auto run = std::make_shared<RunFlags>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--ops", *ops, "collectives (default all)")->delimiter(',');
  cmd->add_option("--dtype", *dtypes, "fp32, fp16, bf16 (default all)")->delimiter(',');
  cmd->add_option("--counts", *counts, "elements per block (default 1,7,1000,1048579)")->delimiter(',');
  auto transport = std::make_shared<std::string>("mpi");
  cmd->add_option("--transport", *transport, "mpi (host memory, default) or nccl (device memory, built with CUDA)");
  cmd->add_flag("--json", *json, "one JSON object: every case");
  add_run_flags(*cmd, *run, false);
  cmd->callback([=] {
    comm::CheckOptions o;
    check_transport(*transport);
    o.transport = *transport;
    for (const std::string& s : ops->empty() ? std::vector<std::string>{"allreduce", "allgather", "reducescatter", "alltoall"} : *ops)
      o.ops.push_back(parse_op(s));
    for (const std::string& s : dtypes->empty() ? std::vector<std::string>{"fp32", "fp16", "bf16"} : *dtypes)
      o.dtypes.push_back(parse_comm_dtype(s));
    for (std::size_t c : *counts)
      if (c < 1 || c > (std::size_t(1) << 26)) bad_input(fmt::format("--counts {}: from 1 to 2^26", c));
    o.counts = *counts;
    o.json = *json;
    comm::Session s(session_options(*run, {{"command", "check"}, {"transport", o.transport}}));
#ifdef KERNELAB_HAVE_NCCL
    const int code = o.transport == "nccl" ? comm::run_nccl_check(s, o) : comm::run_check(s, o);
#else
    const int code = comm::run_check(s, o);
#endif
    if (code) throw CLI::RuntimeError(code);
  });
}

void add_comm_overlap(CLI::App& comm_cmd) {
  auto* cmd = comm_cmd.add_subcommand("overlap", "a bucketed all-reduce overlapped with compute: exposed time, overlap ratio");
  auto o = std::make_shared<comm::OverlapOptions>();
  auto bytes = std::make_shared<std::string>("64M");
  auto run = std::make_shared<RunFlags>();
  cmd->add_option("--bytes", *bytes, "gradient bytes in all buckets (K, M, G suffixes), default 64M");
  cmd->add_option("--buckets", o->buckets, "buckets, each all-reduced once its compute is done (default 4)");
  cmd->add_option("--compute-ms", o->compute_ms, "compute per bucket in ms (default 20)");
  cmd->add_option("--repeats", o->repeats, "measurements, the median reported (default 3)");
  auto algo = std::make_shared<std::string>("library");
  cmd->add_option("--algo", *algo, "library (MPI_Iallreduce, default), or ring or tree (own, on a communication thread)");
  cmd->add_flag("--json", o->json, "one JSON object");
  add_run_flags(*cmd, *run, true);
  cmd->callback([=] {
    o->bytes = parse_bytes("--bytes", *bytes);
    if (o->buckets < 1 || o->bytes / std::size_t(o->buckets) < sizeof(float))
      bad_input(fmt::format("--buckets {}: from 1 to one float per bucket", o->buckets));
    if (!(o->compute_ms > 0) || o->compute_ms > 10000) bad_input(fmt::format("--compute-ms {}: from above 0 to 10000", o->compute_ms));
    if (o->repeats < 1) bad_input(fmt::format("--repeats {}: at least 1", o->repeats));
    o->algo = parse_algos(Collective::allreduce, *algo).at(0);
    if (algo->find(',') != std::string::npos) bad_input(fmt::format("--algo {}: one algorithm", *algo));
    comm::Session s(session_options(*run, {{"command", "overlap"}, {"algo", comm::algo_name(o->algo)}}));
    if (const int code = comm::run_overlap(s, *o)) throw CLI::RuntimeError(code);
  });
}

void add_comm_doctor(CLI::App& comm_cmd) {
  auto* cmd = comm_cmd.add_subcommand("doctor", "who hung, died or lagged, from the ranks' flight-recorder dumps (exit 1 when a rank is missing, dead or behind)");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto straggler_ms = std::make_shared<double>(20);
  cmd->add_option("dump_dir", *dir, "the --dump-dir of a comm bench or check run")->required();
  cmd->add_option("--straggler-ms", *straggler_ms, "lag past which a rank is reported as a straggler, default 20");
  cmd->add_flag("--json", *json, "one JSON object");
  cmd->callback([=] {
    const comm::Diagnosis d = comm::diagnose(*dir, *straggler_ms);
    if (*json) {
      std::printf("%s\n", d.json.dump(1).c_str());
    } else {
      std::printf("comm doctor: %s\n", dir->c_str());
      for (const std::string& f : d.findings) std::printf("  %s\n", f.c_str());
    }
    std::fflush(stdout);
    if (!d.healthy) throw CLI::RuntimeError(1);  // a missing, dead or behind rank, or mismatched counts
  });
}

}  // namespace

void add_comm(CLI::App& app) {
  auto* cmd = app.add_subcommand("comm", "collectives: bench and check own algorithms beside MPI's; overlap; doctor a failed run");
  cmd->require_subcommand(1);
  add_comm_bench(*cmd);
  add_comm_check(*cmd);
  add_comm_overlap(*cmd);
  add_comm_doctor(*cmd);
}

}  // namespace kl::cli
