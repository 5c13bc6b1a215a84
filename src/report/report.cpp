#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "kernelab/error.h"
#include "kernelab/ladder.h"

namespace kl {

nlohmann::json point_to_json(const Point& p) {
  return {{"op", p.op},
          {"variant", p.variant},
          {"config", p.config},
          {"backend", p.backend},
          {"shape", p.shape},
          {"dtype", p.dtype},
          {"median_s", p.median_s},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"tflops", p.tflops},
          {"gbps", p.gbps},
          {"pct_of_bound", p.pct_of_bound},
          {"max_rel_err", p.max_rel_err},
          {"device", p.device},
          {"clocks", p.clocks},
          {"commit", p.commit},
          {"label", p.label},
          {"peer", p.peer},
          {"min_s", p.min_s},
          {"max_s", p.max_s},
          {"p10_s", p.p10_s},
          {"p90_s", p.p90_s},
          {"host_launch_s", p.host_launch_s},
          {"host_bound", p.host_bound},
          {"runs", p.runs},
          {"noise", p.noise},
          {"t_lower_bound_s", p.t_lower_bound_s},
          {"bound", p.bound},
          {"cold", p.cold},
          {"peak_flops", p.peak_flops},
          {"bandwidth", p.bandwidth},
          {"ceilings_source", p.ceilings_source}};
}

nlohmann::json report_to_json(const ReportData& r) {
  nlohmann::json roofs = nlohmann::json::array();
  for (const Roof& f : r.roofs)
    roofs.push_back({{"device", f.device},
                     {"backend", f.backend},
                     {"dtype", f.dtype},
                     {"peak_flops", f.peak_flops},
                     {"bandwidth", f.bandwidth},
                     {"flops_source", f.flops_source},
                     {"bandwidth_source", f.bandwidth_source}});
  nlohmann::json points = nlohmann::json::array();
  for (const Point& p : r.points) points.push_back(point_to_json(p));
  nlohmann::json cuda = nlohmann::json::array();
  for (const CudaVariantRow& c : r.cuda_variants) {
    nlohmann::json gpu = nullptr;
    if (!c.gpu_device.empty()) gpu = {{"device", c.gpu_device}, {"date", c.gpu_date}, {"file", c.gpu_file}};
    nlohmann::json profiles = nlohmann::json::array();
    for (const RungProfileSummary& p : c.profiles)
      profiles.push_back({{"problem", p.problem},
                          {"config", p.config},
                          {"ld_sectors_per_request", p.ld_sectors_per_request},
                          {"st_sectors_per_request", p.st_sectors_per_request},
                          {"ld_bank_conflicts_per_request", p.ld_conflicts_per_request},
                          {"st_bank_conflicts_per_request", p.st_conflicts_per_request},
                          {"active_lanes_per_memory_inst", p.active_lanes},
                          {"sectors_over_min", p.sectors_over_min},
                          {"model_dram_over_min", p.dram_over_min},
                          {"modelled_time_s", p.modelled_time_s},
                          {"modelled_bound", p.bound},
                          {"model_gpu", p.gpu},
                          {"sampled_scale", p.sampled_scale},
                          {"failure", p.failure}});
    cuda.push_back({{"op", c.op},
                    {"variant", c.variant},
                    {"source", c.source},
                    {"simulator", c.simulator},
                    {"sim_passed", c.sim_passed},
                    {"resources", c.resources},
                    {"static", c.static_info},
                    {"gpu_verified", c.gpu_verified},
                    {"gpu", gpu},
                    {"memory", c.memory},
                    {"profiles", profiles},
                    {"gpu_status", c.gpu}});
  }
  return {{"generated_at", r.generated_at},  {"commit", r.commit}, {"host", r.host},
          {"absent_backends", r.absent_backends}, {"check_summary", r.check_summary},
          {"roofs", roofs},                  {"points", points},
          {"cuda_variants", cuda},           {"cuda_notes", r.cuda_notes}};
}

namespace {

// Three significant digits for ordinary magnitudes: 4800, 123, 12.3, 1.23, 0.0123.
std::string num3(double v) {
  if (v == 0 || !std::isfinite(v)) return fmt::format("{}", v);
  int e = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  if (std::round(std::fabs(v) / std::pow(10.0, e - 2)) >= 1000) ++e;  // 99.97 rounds to 100
  return fmt::format("{:.{}f}", v, std::clamp(2 - e, 0, 6));
}

// A duration in ns/µs/ms/s with three significant digits; empty when not measured.
std::string fmt_time(double s) {
  if (!(s > 0)) return "";
  static const std::pair<double, const char*> units[] = {{1e-9, "ns"}, {1e-6, "µs"}, {1e-3, "ms"}, {1, "s"}};
  size_t i = 0;
  while (i + 1 < std::size(units) && s >= units[i + 1].first * 0.9995) ++i;  // 999.7 ns reads 1.00 µs
  return num3(s / units[i].first) + " " + units[i].second;
}

// A value with an SI prefix: 1.23 T, 456 G.
std::string si(double v) {
  static const char* prefixes[] = {"n", "µ", "m", "", "k", "M", "G", "T", "P", "E"};
  int k = v > 0 ? std::clamp(static_cast<int>(std::floor(std::log10(v * 1.0005) / 3)), -3, 6) : 0;
  return num3(v / std::pow(1000.0, k)) + " " + prefixes[k + 3];
}

// Tick label of 10^e: 1 G, 10 G, 100 G, 1 T.
std::string si_tick(int e) {
  static const char* prefixes[] = {"n", "µ", "m", "", "k", "M", "G", "T", "P", "E"};
  int k = std::clamp(static_cast<int>(std::floor(e / 3.0)), -3, 6);
  return fmt::format("{:g} {}", std::pow(10.0, e - 3 * k), prefixes[k + 3]);
}

std::string speedup(const std::optional<double>& x) { return x ? fmt::format("{:.2f}×", *x) : ""; }

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

const std::vector<std::string> kColumns = {"variant", "median", "p10–p90", "TFLOP/s", "GB/s", "% of bound",
                                           "× vs rung below", "× vs peer", "max rel err", "what the rung changes"};

std::vector<std::string> row_cells(const LadderRow& row) {
  const Point& p = row.point;
  return {p.variant + (p.peer ? " (peer)" : ""),
          fmt_time(p.median_s),
          p.p10_s > 0 ? fmt_time(p.p10_s) + " – " + fmt_time(p.p90_s) : "",
          num3(p.tflops),
          num3(p.gbps),
          fmt::format("{:.1f}%", p.pct_of_bound),
          speedup(row.vs_below),
          speedup(row.vs_peer),
          fmt::format("{:.2e}", p.max_rel_err),
          row.note};
}

std::string ladder_heading(const Ladder& L) {
  return fmt::format("{} — {} — {} — {} ({})", L.op, L.label, L.dtype, L.backend, L.device);
}

// "cuda: no CUDA device found" -> "... — no GPU figures in this report".
std::string absent_line(const std::string& entry) {
  std::string backend = entry.substr(0, entry.find(':'));
  return fmt::format("{} — no {} figures in this report", entry, backend == "cuda" ? "GPU" : backend);
}

std::string roof_line(const Roof& f) {
  return fmt::format("{} ({}, {}): peak {}FLOP/s ({}), bandwidth {}B/s ({}), ridge at {} FLOP/byte", f.device,
                     f.backend, f.dtype, si(f.peak_flops), f.flops_source, si(f.bandwidth), f.bandwidth_source,
                     f.bandwidth > 0 ? num3(f.peak_flops / f.bandwidth) : "?");
}

std::string markdown(const ReportData& r, const std::vector<Ladder>& ladders) {
  std::string md = "# kernelab report\n\n";
  md += fmt::format("- Generated: {}\n- Commit: {}\n- Host: {}\n\n", r.generated_at, r.commit, r.host);
  md += "## Backends not present\n\n";
  if (r.absent_backends.empty()) md += "None: every backend was measured.\n";
  for (const auto& a : r.absent_backends) md += "- " + absent_line(a) + "\n";
  md += "\n## Correctness checks\n\n";
  for (const auto& c : r.check_summary) md += "- " + c + "\n";
  md += "\n## CUDA variants\n\n";
  if (r.cuda_variants.empty()) md += "None registered.\n";
  else md += "| op | variant | simulator | resources | memory (simulator profile) | GPU |\n|---|---|---|---|---|---|\n";
  for (const CudaVariantRow& c : r.cuda_variants)
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_escape(c.op), md_escape(c.variant), md_escape(c.simulator),
                      md_escape(c.resources), md_escape(c.memory), md_escape(c.gpu));
  if (!r.cuda_notes.empty()) md += "\n";
  for (const auto& n : r.cuda_notes) md += fmt::format("- {}\n", n);
  md += "\n## Roofs\n\n";
  for (const Roof& f : r.roofs) md += "- " + roof_line(f) + "\n";
  for (const Ladder& L : ladders) {
    md += "\n## " + ladder_heading(L) + "\n\n|";
    for (const auto& c : kColumns) md += " " + c + " |";
    md += "\n|";
    for (size_t i = 0; i < kColumns.size(); ++i) md += "---|";
    md += "\n";
    for (const LadderRow& row : L.rows) {
      md += "|";
      for (const auto& c : row_cells(row)) md.append(" ").append(md_escape(c)).append(" |");  // not operator+: GCC 12 warns falsely (-Wrestrict)
      md += "\n";
    }
  }
  return md;
}

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// One log-log roofline chart: the roof min(peak, bandwidth * x) and the points measured under it.
std::string roofline_svg(const Roof& f, const std::vector<const Point*>& pts, const std::map<std::string, int>& colour) {
  const double W = 680, H = 440, left = 70, right = 150, top = 20, bottom = 50;
  const bool has_roof = f.peak_flops > 0 && f.bandwidth > 0;
  const double ridge = has_roof ? f.peak_flops / f.bandwidth : 0;
  double xmin = has_roof ? ridge : INFINITY, xmax = has_roof ? ridge : 0;
  double ymin = INFINITY, ymax = has_roof ? f.peak_flops : 0;
  for (const Point* p : pts) {
    double x = p->flops / p->bytes, y = p->flops / p->median_s;
    xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  }
  const int x0 = static_cast<int>(std::floor(std::log10(xmin))) - 1, x1 = static_cast<int>(std::ceil(std::log10(xmax))) + 1;
  if (has_roof) ymin = std::min(ymin, f.bandwidth * std::pow(10.0, x0));  // the roof enters at the left edge
  const int y0 = static_cast<int>(std::floor(std::log10(ymin))) - 1, y1 = static_cast<int>(std::ceil(std::log10(ymax))) + 1;
  auto X = [&](double x) { return left + (std::log10(x) - x0) / (x1 - x0) * (W - left - right); };
  auto Y = [&](double y) { return H - bottom - (std::log10(y) - y0) / (y1 - y0) * (H - top - bottom); };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"plot\"/>\n",
      W, H, W, H, left, top, W - left - right, H - top - bottom);
  for (int e = x0; e <= x1; ++e)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"grid\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                     X(std::pow(10.0, e)), top, H - bottom, H - bottom + 16, std::pow(10.0, e));
  for (int e = y0; e <= y1; ++e)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" class=\"grid\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     left, Y(std::pow(10.0, e)), W - right, left - 6, Y(std::pow(10.0, e)) + 4, si_tick(e));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
                   (left + W - right) / 2, H - 12);
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">achieved FLOP/s</text>\n",
                   (top + H - bottom) / 2);
  if (has_roof) {
    const double xl = std::pow(10.0, x0), xr = std::pow(10.0, x1);
    s += fmt::format("<polyline class=\"roof\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n", X(xl),
                     Y(f.bandwidth * xl), X(ridge), Y(f.peak_flops), X(xr), Y(f.peak_flops));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"ridge\">ridge {} FLOP/B</text>\n", X(ridge) + 4,
                     Y(f.peak_flops) + 14, num3(ridge));
  }
  for (const Point* p : pts) {
    double x = p->flops / p->bytes, y = p->flops / p->median_s;
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"><title>{}</title></circle>\n", X(x), Y(y),
                     kPalette[colour.at(p->op) % std::size(kPalette)],
                     html_escape(fmt::format("{} {} {} {}: {} GFLOP/s, {:.1f}% of bound", p->op, p->variant, p->label,
                                             p->dtype, num3(y / 1e9), p->pct_of_bound)));
  }
  std::vector<std::string> ops;  // the legend: each op drawn here, once
  for (const Point* p : pts)
    if (std::find(ops.begin(), ops.end(), p->op) == ops.end()) ops.push_back(p->op);
  for (size_t i = 0; i < ops.size(); ++i)
    s += fmt::format("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" fill=\"{2}\"/>"
                     "<text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                     W - right + 14, top + 20 * i, kPalette[colour.at(ops[i]) % std::size(kPalette)], W - right + 32,
                     top + 20 * i + 11, html_escape(ops[i]));
  return s + "</svg>\n";
}

const char* kStyle = R"(body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:0.5em 0 2em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,td:last-child,th:first-child,th:last-child{text-align:left}th{background:#f3f3f3}
table.text td{text-align:left}
.absent{background:#fff4e5;border:1px solid #f0b35a;padding:0.5em 1em}figure{margin:1em 0 2em}
svg text{font-size:11px}.plot{fill:#fcfcfc;stroke:#999}.grid{stroke:#e4e4e4}
.roof{fill:none;stroke:#333;stroke-width:2}.ridge{fill:#333}circle{stroke:#222;fill-opacity:0.8})";

std::string html(const ReportData& r, const std::vector<Ladder>& ladders) {
  std::string h = fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                              "<title>kernelab report</title>\n<style>{}</style></head><body>\n"
                              "<h1>kernelab report</h1>\n<p>Generated {} · commit {} · host {}</p>\n",
                              kStyle, html_escape(r.generated_at), html_escape(r.commit), html_escape(r.host));
  if (!r.absent_backends.empty()) {
    h += "<div class=\"absent\"><strong>Backends not present</strong><ul>\n";
    for (const auto& a : r.absent_backends) h += "<li>" + html_escape(absent_line(a)) + "</li>\n";
    h += "</ul></div>\n";
  }
  h += "<h2>Correctness checks</h2><ul>\n";
  for (const auto& c : r.check_summary) h += "<li>" + html_escape(c) + "</li>\n";
  h += "</ul>\n<h2>CUDA variants</h2>\n";
  if (r.cuda_variants.empty()) h += "<p>None registered.</p>\n";
  else
    h += "<table class=\"text\"><tr><th>op</th><th>variant</th><th>simulator</th><th>resources</th><th>memory (simulator "
         "profile)</th><th>GPU</th></tr>\n";
  for (const CudaVariantRow& c : r.cuda_variants)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(c.op),
                     html_escape(c.variant), html_escape(c.simulator), html_escape(c.resources), html_escape(c.memory),
                     html_escape(c.gpu));
  if (!r.cuda_variants.empty()) h += "</table>\n";
  for (const auto& n : r.cuda_notes) h += "<p>" + html_escape(n) + "</p>\n";
  h += "<h2>Rooflines</h2>\n";
  std::map<std::string, int> colour;  // one colour per op, the same in every chart
  for (const Point& p : r.points) colour.emplace(p.op, static_cast<int>(colour.size()));
  for (const Roof& f : r.roofs) {
    std::vector<const Point*> pts;
    for (const Point& p : r.points)
      if (p.device == f.device && p.dtype == f.dtype && p.flops > 0 && p.bytes > 0 && p.median_s > 0)
        pts.push_back(&p);
    if (pts.empty()) continue;
    h += "<figure>\n" + roofline_svg(f, pts, colour);
    h += fmt::format("<figcaption>{} — {} — {}. Ridge point at {} FLOP/byte. Peak {}FLOP/s from {}; bandwidth {}B/s "
                     "from {}.</figcaption>\n</figure>\n",
                     html_escape(f.device), html_escape(f.backend), html_escape(f.dtype),
                     f.bandwidth > 0 ? num3(f.peak_flops / f.bandwidth) : "?", si(f.peak_flops),
                     html_escape(f.flops_source), si(f.bandwidth), html_escape(f.bandwidth_source));
  }
  h += "<h2>Ladders</h2>\n";
  for (const Ladder& L : ladders) {
    h += "<h3>" + html_escape(ladder_heading(L)) + "</h3>\n<table><tr>";
    for (const auto& c : kColumns) h += "<th>" + html_escape(c) + "</th>";
    h += "</tr>\n";
    for (const LadderRow& row : L.rows) {
      h += "<tr>";
      for (const auto& c : row_cells(row)) h += "<td>" + html_escape(c) + "</td>";
      h += "</tr>\n";
    }
    h += "</table>\n";
  }
  return h + "</body></html>\n";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) runtime_failure(fmt::format("cannot write {}", path.string()));
}

}  // namespace

void write_report(const ReportData& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) runtime_failure(fmt::format("cannot create report directory {}: {}", dir, ec.message()));
  const std::vector<Ladder> ladders = make_ladders(r.points);
  const std::filesystem::path d(dir);
  write_file(d / "results.json", report_to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  write_file(d / "report.md", markdown(r, ladders));
  write_file(d / "index.html", html(r, ladders));
}

}  // namespace kl
