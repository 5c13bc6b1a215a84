// Findings: plain statements with their numbers, ranked by the time at stake.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace/analysis.h"

namespace kl::trace {

std::string format_ns(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string shortened(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes > 3 ? max_bytes - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // back to a character's first byte
  return std::string(s.substr(0, cut)) + "...";
}

namespace {

std::string short_name(const std::string& s) { return shortened(s, 80); }
double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

void idle_findings(const Report& r, std::vector<Finding>& out) {
  for (const auto& [dev, d] : r.devices) {
    if (d.span() <= 0 || d.idle() < d.span() / 20) continue;  // under 5% idle: nothing to say
    Ns hw = 0, kw = 0, ot = 0;
    for (const StreamIdle& s : r.idle)
      if (s.device == dev) hw += std::max<Ns>(0, s.host_wait), kw += std::max<Ns>(0, s.kernel_wait), ot += std::max<Ns>(0, s.other);
    std::string text = fmt::format("GPU {} idle {:.0f}% of its span ({} of {})", dev, pct(d.idle(), d.span()), format_ns(d.idle()),
                                   format_ns(d.span()));
    const double total = static_cast<double>(hw + kw + ot);
    const auto in_driver = r.slow_calls.idle_covered.find(dev);
    if (in_driver != r.slow_calls.idle_covered.end() && 2 * in_driver->second >= d.idle()) {
      text += fmt::format("; {:.0f}% of it inside CUDA API calls over {} with no GPU op running (start-up or allocation, their "
                          "own finding), not launch overhead",
                          pct(in_driver->second, d.idle()), format_ns(kSlowCallNs));
    } else if (2 * total < static_cast<double>(d.idle())) {
      text += fmt::format("; the gaps between ops on one stream hold only {} of it (host wait {}, kernel wait {}, other {}): the GPU "
                          "mostly sat with no op queued on any stream, before, after or between other streams' work (the gap "
                          "finding says what the CPU did meanwhile)",
                          format_ns(total), format_ns(hw), format_ns(kw), format_ns(ot));
    } else if (total > 0) {
      text += fmt::format("; of the idle time between ops on its streams, {:.0f}% is host wait, {:.0f}% kernel wait, {:.0f}% other",
                          pct(hw, total), pct(kw, total), pct(ot, total));
      if (hw >= kw && hw >= ot)
        text += ": the GPU waited for the CPU to issue work — the gaps say what the CPU did in between; where that is launch "
                "overhead, CUDA Graphs or larger kernels";
      else if (kw >= ot)
        text += fmt::format(": short gaps (< {:g} us) between back-to-back ops, launch overhead — fuse kernels or use CUDA Graphs",
                            r.options.kernel_wait_us);
      else
        text += ": the GPU waits on something other than launches (synchronisation, events, input data)";
    }
    out.push_back({"idle", text, d.idle()});
  }
}

void launch_findings(const Report& r, std::vector<Finding>& out) {
  const LaunchStats& L = r.launch;
  const uint64_t n = L.short_kernels - L.short_kernels_slow_launch;
  if (n == 0) return;
  const Ns gpu = L.short_kernel_gpu - L.short_slow_launch_gpu, cpu = L.short_kernel_cpu - L.short_slow_launch_cpu;
  std::string text = fmt::format("{} of {} kernels ({:.0f}%) run shorter on the GPU than their launch call on the CPU ({} of GPU time "
                                 "against {} of launch calls",
                                 n, L.kernels, pct(n, L.kernels), format_ns(gpu), format_ns(cpu));
  if (L.short_kernels_slow_launch > 0)
    text += fmt::format("; {} more whose launch took over {} ({} in all) left out: a first launch loading its module, or a full "
                        "launch queue",
                        L.short_kernels_slow_launch, format_ns(kSlowCallNs), format_ns(L.short_slow_launch_cpu));
  const uint64_t w = L.short_kernels_waited;
  if (w == 0) {
    text += fmt::format("); the GPU waited for none of them: each was queued behind earlier work (median launch delay {}), its "
                        "launch cost hidden — not launch-bound",
                        format_ns(L.median_delay.value_or(0)));
  } else {
    text += fmt::format("); the GPU waited for {} of them ({} idle before them: their launch began after their stream's previous op "
                        "ended): launch-bound — a CUDA Graph candidate",
                        w, format_ns(L.short_waited_gap));
    if (w < n)
      text += fmt::format("; the other {} were queued behind earlier work, their launch cost hidden (median launch delay of all ops {})",
                          n - w, format_ns(L.median_delay.value_or(0)));
  }
  out.push_back({"short_kernels", text, L.short_waited_gap});
}

void slow_call_findings(const Report& r, std::vector<Finding>& out) {
  const SlowCalls& s = r.slow_calls;
  if (s.calls == 0) return;
  std::vector<std::string> calls;
  for (const SlowCall& c : s.longest)
    calls.push_back(c.why.empty() ? fmt::format("{} {}", c.name, format_ns(c.dur)) : fmt::format("{} {} ({})", c.name, format_ns(c.dur), c.why));
  std::vector<std::string> idle;
  for (const auto& [dev, ns] : s.idle_covered)
    if (ns > 0) idle.push_back(fmt::format("{} of GPU {}'s idle time", format_ns(ns), dev));
  out.push_back({"slow_api_calls",
                 fmt::format("{} CUDA API call{} took over {} with no GPU op running ({} in all{}{}); the longest: {}. Time inside "
                             "the driver, not on the GPU: paid once per process (context, module loading) or when the caching "
                             "allocator grows (a new peak, torch.cuda.empty_cache()) — profile after warm-up "
                             "(torch.profiler.schedule's wait and warmup steps) or a later window (--steps A-B, --window NAME)",
                             s.calls, s.calls == 1 ? "" : "s", format_ns(kSlowCallNs), format_ns(s.total), idle.empty() ? "" : ", ",
                             fmt::join(idle, ", "), fmt::join(calls, "; ")),
                 s.total});
}

void sync_findings(const Report& r, std::vector<Finding>& out) {
  Ns blocked = 0;
  uint64_t calls = 0;
  std::vector<std::string> parts;
  for (const auto& [name, s] : r.sync) {
    blocked += s.blocked, calls += s.calls;
    parts.push_back(fmt::format("{} {}× {}", name, s.calls, format_ns(s.blocked)));
  }
  if (calls == 0) return;
  out.push_back({"sync",
                 fmt::format("the CPU was blocked {} in {} synchronisation calls ({}): each one drains the launch queue — look for "
                             ".item(), .cpu(), .tolist() or explicit synchronize calls in the step",
                             format_ns(blocked), calls, fmt::join(parts, ", ")),
                 blocked});
}

void memcpy_findings(const Report& r, std::vector<Finding>& out) {
  for (const auto& [dev, d] : r.devices)
    if (d.pageable_memcpys > 0)
      out.push_back({"pageable_memcpy",
                     fmt::format("GPU {}: {} memcpys ({}) copy from or to pageable host memory: pinned memory (pin_memory=True) "
                                 "lets them run asynchronously",
                                 dev, d.pageable_memcpys, format_ns(d.pageable_memcpy_time)),
                     d.pageable_memcpy_time});
}

void overlap_findings(const Report& r, std::vector<Finding>& out) {
  for (const auto& [dev, o] : r.overlap) {
    if (!o.ratio()) continue;
    std::string text = fmt::format("GPU {}: {} of communication (NCCL) kernels, {:.0f}% of it overlapped with computation", dev,
                                   format_ns(o.communication), 100.0 * *o.ratio());
    if (*o.ratio() < 0.5) text += ": the rest is exposed — overlap collectives with compute (gradient buckets, async ops)";
    out.push_back({"overlap", text, o.communication - o.overlapped});
  }
}

void kernel_findings(const Report& r, std::vector<Finding>& out) {
  const Ns total = r.kernel_time();
  if (r.kernels.empty() || total <= 0) return;
  const KernelStats& k = r.kernels.front();
  if (k.total * 5 < total) return;  // under 20%: no single kernel dominates
  out.push_back({"top_kernel",
                 fmt::format("{} takes {:.0f}% of kernel time ({} calls, mean {}): the first kernel to optimise", short_name(k.name),
                             pct(k.total, total), k.count, format_ns(k.mean)),
                 k.total});
}

void gap_findings(const Report& r, std::vector<Finding>& out) {
  for (const auto& [dev, st] : r.gap_stats) {
    if (st.count == 0) continue;
    std::string text = fmt::format("GPU {} stood idle in {} gaps longer than {:g} us ({} in all)", dev, st.count, r.options.gap_us,
                                   format_ns(st.total));
    for (const Gap& g : r.gaps) {
      if (g.device != dev) continue;
      text += fmt::format("; the longest, {} at +{}, ", format_ns(g.dur), format_ns(g.start));
      if (g.cpu.empty())
        text += "with no CPU event traced meanwhile (untraced host work: data loading, Python)";
      else if (2 * g.cpu_busy < g.dur)
        text += fmt::format("with traced CPU events under only {:.0f}% of it (the rest untraced host work: data loading, Python, "
                            "sleeps); the most, {} ({}, {})",
                            pct(g.cpu_busy, g.dur), short_name(g.cpu.front().name), g.cpu.front().cat, format_ns(g.cpu.front().overlap));
      else
        text += fmt::format("while the CPU was in {} ({})", short_name(g.cpu.front().name), g.cpu.front().cat);
      break;
    }
    out.push_back({"gaps", text, st.total});
  }
}

}  // namespace

std::vector<Finding> make_findings(const Report& r) {
  std::vector<Finding> out;
  if (!r.gpu_activity()) {
    std::vector<std::string> cats;
    for (const auto& [cat, n] : r.categories) cats.push_back(fmt::format("{} {}", cat, n));
    out.push_back({"no_gpu_activity",
                   fmt::format("no GPU activity: the trace has no kernel, gpu_memcpy or gpu_memset events ({} events; \"X\" events "
                               "by category: {}); a CPU-only profile, or not a PyTorch profiler (Kineto) trace",
                               r.events, cats.empty() ? std::string("none") : fmt::format("{}", fmt::join(cats, ", "))),
                   0});
    return out;
  }
  idle_findings(r, out);
  slow_call_findings(r, out);
  launch_findings(r, out);
  sync_findings(r, out);
  memcpy_findings(r, out);
  overlap_findings(r, out);
  kernel_findings(r, out);
  gap_findings(r, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.impact > b.impact; });
  return out;
}

}  // namespace kl::trace
