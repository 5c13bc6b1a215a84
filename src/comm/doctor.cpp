#include "comm/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "comm/board.h"
#include "comm/recorder.h"
#include "comm/straggler.h"
#include "comm/watchdog.h"
#include "kernelab/error.h"

namespace kl::comm {

namespace {

struct RankState {
  std::optional<nlohmann::json> dump;
  std::vector<Record> records;
  std::optional<Record> in_flight;
  int64_t entered = 0, completed = 0;
  Stage stage = Stage::setup;
  bool alive = false, on_board = false;
};

std::string join(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

Diagnosis diagnose(const std::string& dir, double straggler_ms) {
  if (!std::filesystem::is_directory(dir)) bad_input(fmt::format("comm doctor {}: not a folder", dir));
  const std::vector<BoardSlot> board = read_board(dir);
  std::map<int, nlohmann::json> dumps;
  int size = int(board.size());
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("rank-") || !name.ends_with(".json")) continue;
    try {
      nlohmann::json j = nlohmann::json::parse(std::ifstream(e.path()));
      const int r = j.at("rank").get<int>();
      size = std::max({size, j.at("size").get<int>(), r + 1});
      dumps[r] = std::move(j);
    } catch (const std::exception& ex) {
      bad_input(fmt::format("comm doctor: {}: not a kernelab flight-recorder dump ({})", e.path().string(), ex.what()));
    }
  }
  if (dumps.empty() && board.empty()) bad_input(fmt::format("comm doctor {}: no rank-R.json dumps and no status board", dir));

  std::vector<RankState> ranks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    RankState& s = ranks[std::size_t(r)];
    if (r < int(board.size())) {
      const BoardSlot& b = board[std::size_t(r)];
      s.on_board = true, s.entered = b.entered, s.completed = b.completed, s.stage = b.stage, s.alive = process_alive(b.pid);
    }
    if (auto it = dumps.find(r); it != dumps.end()) {
      s.dump = it->second;
      for (const nlohmann::json& rec : it->second.at("records")) s.records.push_back(record_from_json(rec));
      if (!it->second.at("in_flight").is_null()) s.in_flight = record_from_json(it->second.at("in_flight"));
      for (const Record& rec : s.records) {
        s.entered = std::max(s.entered, int64_t(rec.seq));
        if (rec.end_us) s.completed = std::max(s.completed, int64_t(rec.seq));
      }
    }
  }
  int64_t front = 0;
  for (const RankState& s : ranks) front = std::max(front, s.entered);
  std::string front_op = "collective";
  for (const RankState& s : ranks)
    for (const Record& rec : s.records)
      if (int64_t(rec.seq) == front) front_op = rec.op;

  Diagnosis d;
  std::vector<int> behind, waiting, no_dump, short_of_barrier, in_barrier, not_finished, before_init, in_startup;
  Stage front_stage = Stage::setup;
  for (const RankState& s : ranks) front_stage = std::max(front_stage, s.stage);
  const bool at_barrier = front_stage == Stage::start_barrier || front_stage == Stage::end_barrier;
  for (int r = 0; r < size; ++r) {
    const RankState& s = ranks[std::size_t(r)];
    if (s.entered < front) behind.push_back(r);
    else if (s.in_flight) waiting.push_back(r);
    if (at_barrier && s.on_board && s.stage < front_stage) short_of_barrier.push_back(r);
    const std::string phase = s.dump ? s.dump->value("startup_phase", "") : "";
    if (phase == "before MPI_Init") before_init.push_back(r);
    else if (!phase.empty()) in_startup.push_back(r);
    else if (s.dump && !s.dump->value("waiting", nlohmann::json()).is_null()) in_barrier.push_back(r);
    if (!s.dump) no_dump.push_back(r);
    else if (s.dump->at("reason") != "finished") not_finished.push_back(r);
  }
  const std::string barrier = front_stage == Stage::start_barrier ? "the start barrier" : "the end barrier";
  for (int r : short_of_barrier) {
    const RankState& s = ranks[std::size_t(r)];
    const std::string last = s.records.empty() ? fmt::format("entered up to seq {}", s.entered)
                                               : fmt::format("its last: {} seq {}, {}", s.records.back().op, s.records.back().seq,
                                                             s.records.back().end_us ? "completed" : "never completed");
    d.findings.push_back(fmt::format("rank {} never reached {} ({}; {}){}", r, barrier, stage_name(s.stage), last,
                                     in_barrier.empty() ? "" : fmt::format("; ranks {} waited in it", join(in_barrier))));
  }
  for (int r : before_init)  // a start-up dump (watchdog.h): the rank that holds the others in MPI_Init
    d.findings.push_back(fmt::format("rank {} never reached MPI_Init ({}){}", r, ranks[std::size_t(r)].dump->at("reason").get<std::string>(),
                                     in_startup.empty() ? "" : fmt::format("; ranks {} waited at start-up", join(in_startup))));
  for (int r : behind) {
    const RankState& s = ranks[std::size_t(r)];
    std::string last = s.entered == 0 ? "it entered no collective" : fmt::format("its last: seq {}", s.entered);
    if (!s.records.empty()) {
      const Record& rec = s.records.back();
      last = fmt::format("its last: {} seq {}, {}", rec.op, rec.seq, rec.end_us ? "completed" : "never completed");
    } else if (s.entered > 0) {
      last += s.completed >= s.entered ? ", completed" : ", never completed";
    }
    d.findings.push_back(fmt::format("rank {} never entered {} seq {} ({}){}", r, front_op, front, last,
                                     waiting.empty() ? "" : fmt::format("; ranks {} waited in it", join(waiting))));
  }
  const bool at_startup = board.empty() && !(before_init.empty() && in_startup.empty());
  for (int r : no_dump) {
    const RankState& s = ranks[std::size_t(r)];
    if (at_startup) {
      d.findings.push_back(fmt::format("rank {} left no dump: it never started, or its process died or was killed before "
                                       "MPI_Init{}", r, in_startup.empty() ? "" : fmt::format("; ranks {} waited at start-up", join(in_startup))));
      continue;
    }
    d.findings.push_back(fmt::format("rank {} left no dump: its process {} before its watchdog could write one{}", r,
                                     s.on_board && !s.alive ? "died (crashed or was killed)" : "was killed or is stuck",
                                     s.on_board ? fmt::format(" (status board: entered seq {}, completed seq {}, process {})",
                                                              s.entered, s.completed, s.alive ? "alive" : "gone")
                                                : ""));
  }
  for (int r : waiting) {
    const RankState& s = ranks[std::size_t(r)];
    const std::string why = s.dump ? s.dump->at("reason").get<std::string>() : "no dump";
    d.findings.push_back(fmt::format("rank {} was waiting in {} seq {} ({}, peers {}) for {:.1f} s: {}", r, s.in_flight->op,
                                     s.in_flight->seq, s.in_flight->algo, join(s.in_flight->peers),
                                     s.dump ? double(s.dump->at("dumped_us").get<int64_t>() - s.in_flight->start_us) / 1e6 : 0.0,
                                     why));
  }
  for (int r : in_startup) {
    const nlohmann::json& w = ranks[std::size_t(r)].dump->at("waiting");
    d.findings.push_back(fmt::format("rank {} was waiting {}, at start-up, for {:.1f} s: {}", r, w.at("what").get<std::string>(),
                                     double(ranks[std::size_t(r)].dump->at("dumped_us").get<int64_t>() - w.at("start_us").get<int64_t>()) / 1e6,
                                     ranks[std::size_t(r)].dump->at("reason").get<std::string>()));
  }
  for (int r : in_barrier) {
    const nlohmann::json& w = ranks[std::size_t(r)].dump->at("waiting");
    d.findings.push_back(fmt::format("rank {} was waiting in {} for {:.1f} s: {}", r, w.at("what").get<std::string>(),
                                     double(ranks[std::size_t(r)].dump->at("dumped_us").get<int64_t>() - w.at("start_us").get<int64_t>()) / 1e6,
                                     ranks[std::size_t(r)].dump->at("reason").get<std::string>()));
  }
  std::map<int64_t, std::vector<int>> by_count;
  for (int r = 0; r < size; ++r) by_count[ranks[std::size_t(r)].completed].push_back(r);
  if (by_count.size() > 1) {
    std::string counts;
    for (const auto& [count, rs] : by_count) counts += fmt::format("{}ranks {}: {}", counts.empty() ? "" : "; ", join(rs), count);
    d.findings.push_back("mismatched collective counts (completed): " + counts);
  }
  std::vector<std::vector<Record>> per_rank;
  for (const RankState& s : ranks) per_rank.push_back(s.records);
  const StragglerReport st = find_straggler(per_rank);
  d.healthy = behind.empty() && before_init.empty() && in_startup.empty() && no_dump.empty() && waiting.empty() && by_count.size() == 1 && short_of_barrier.empty() &&
              in_barrier.empty() && not_finished.empty();
  if (!d.healthy && d.findings.empty())  // every rank kept pace, yet one did not finish (killed between collectives)
    for (int r : not_finished)
      d.findings.push_back(fmt::format("rank {} did not finish: {}", r, ranks[std::size_t(r)].dump->at("message").get<std::string>()));
  if (d.healthy) d.findings.push_back(fmt::format("healthy: all {} ranks completed {} collectives", size, front));
  d.findings.push_back(straggler_text(st, straggler_ms));

  nlohmann::json rank_rows = nlohmann::json::array();
  for (int r = 0; r < size; ++r) {
    const RankState& s = ranks[std::size_t(r)];
    rank_rows.push_back({{"rank", r}, {"dump", bool(s.dump)}, {"reason", s.dump ? s.dump->at("reason") : nlohmann::json()},
                         {"entered", s.entered}, {"completed", s.completed}, {"alive", s.alive}, {"stage", stage_name(s.stage)},
                         {"in_flight", s.in_flight ? record_json(*s.in_flight) : nlohmann::json()}});
  }
  d.json = {{"dir", dir}, {"size", size}, {"front_seq", front}, {"behind", behind}, {"no_dump", no_dump},
            {"waiting", waiting}, {"short_of_barrier", short_of_barrier}, {"in_barrier", in_barrier},
            {"before_mpi_init", before_init}, {"waiting_at_startup", in_startup},
            {"healthy", d.healthy}, {"ranks", rank_rows},
            {"straggler", straggler_json(st, straggler_ms)}, {"findings", d.findings}};
  return d;
}

}  // namespace kl::comm
