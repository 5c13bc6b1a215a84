// `kernelab explain`: the numbers a kernel engineer answers with, all computed from the cost
// models and the GPU's ceilings, each ceiling with its source.
#include "model/explain.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernelab/error.h"
#include "model/text.h"

namespace kl::model {

namespace {

std::string gbps(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }

std::string bound_word(const Roofline& r) { return r.compute_bound ? "compute-bound" : "memory-bound"; }

std::string link_name(const Analysis& a) {
  if (a.bandwidth_kind == "nvlink") return "NVLink per direction";
  if (a.bandwidth_kind == "pcie") return "PCIe per direction";
  return "memory";
}

std::string versus_ridge(const Roofline& r) {
  if (r.intensity >= r.ridge) return fmt::format("{}x above", num(r.intensity / r.ridge));
  return fmt::format("{}x below", num(r.ridge / r.intensity));
}

// The measured points of the analysed op and dtype, each against its own bound on a's ceilings.
std::string place_results(const Analysis& a, const nlohmann::json& results) {
  const nlohmann::json& points = results.is_object() ? results.at("points") : results;
  if (!points.is_array()) bad_input("results: expected a list of points or an object with \"points\"");
  const DType want = parse_format(a.dtype).storage;
  std::string s;
  for (const nlohmann::json& p : points) {
    if (p.value("op", "") != a.op || parse_dtype(p.value("dtype", "")) != want) continue;
    const double median = p.value("median_s", 0.0), flops = p.value("flops", 0.0), bytes = p.value("bytes", 0.0);
    if (!(median > 0) || !(bytes > 0)) continue;
    const Roofline r = reroof(a, Cost{flops, bytes});
    s += fmt::format("  {} {} on {}: median {}, lower bound on {} {} ({}): {:.1f}% of the bound\n", p.value("variant", "?"),
                     p.value("shape", "?"), p.value("device", "?"), secs(median), a.gpu, secs(r.t_lower_bound_s),
                     bound_word(r), 100 * r.t_lower_bound_s / median);
  }
  if (s.empty()) return fmt::format("measured: no point of op {} in {} in the results\n", a.op, a.dtype);
  return "measured, against this GPU's bound:\n" + s;
}

}  // namespace

std::string roof_story(const Request&, const Analysis& a) {
  const Roofline& r = a.roof;
  std::string s;
  s += fmt::format("  FLOPs        {}\n", num(r.flops));
  s += fmt::format("  bytes        {} ({})\n", num(r.bytes), link_name(a));
  s += fmt::format("  intensity    {} FLOP/B, {} the ridge {} FLOP/B = {} TFLOP/s {} ({}) / {} {} ({})\n", num(r.intensity),
                   versus_ridge(r), num(r.ridge), num(a.peak.value / 1e12), a.dtype, a.peak.source, gbps(a.bandwidth.value),
                   link_name(a), a.bandwidth.source);
  s += fmt::format("  bound        {}\n", bound_word(r));
  s += fmt::format("  lower bound  {} = max(compute {}, memory {})\n", secs(r.t_lower_bound_s), secs(r.t_compute_s),
                   secs(r.t_memory_s));
  return s;
}

// What the FLOP count leaves out: the int4 weights' dequantization in registers, repeated per block row.
std::string dequantization_story(const GemmShape& g, const Analysis& a) {
  const Dequantization d = w4_dequantization(g);
  const GpuSpec& gpu = find_gpu(a.gpu);
  // An SM issues at most 4 warp instructions (128 thread instructions) per clock: one per scheduler,
  // four schedulers (the Ampere and Hopper architecture whitepapers' SM).
  const double issue = 128.0 * gpu.sm_count.value * gpu.boost_clock_mhz.value * 1e6;
  const double t = d.instructions / issue;
  return fmt::format("  dequantize   {} instructions per weight, in registers (cuda_fragment_lop3: per lane and word of 8 "
                     "weights 3 shifts, 4 LOP3, 4 HSUB2, 4 HFMA2), every weight again per block row of {} rows of A: {} "
                     "weights, {} instructions; at 128 per clock per SM ({} SMs at {} MHz, {}) at least {} of issue "
                     "time, {:.0f}% of the int4 gemm's lower bound {}: {}; it grows with m while the saved bytes stop "
                     "counting (modelled)\n",
                     num(d.instructions_per_weight), d.block_rows, num(d.weights), num(d.instructions),
                     num(gpu.sm_count.value), num(gpu.boost_clock_mhz.value), gpu.sm_count.source, secs(t),
                     100 * t / a.roof.t_lower_bound_s, secs(a.roof.t_lower_bound_s),
                     a.roof.compute_bound ? "compute-bound, so these slots come out of the schedulers that issue the mma.sync"
                                          : "memory-bound, so it hides under the loads while it stays below 100%");
}

// The decode GEMV rung (cuda_decode_gemv, m <= 16): each block owns 16 * S columns over all of k
// and reads all of A from L2 (src/ops/gemm_w4a16/cuda/v04_decode_gemv.cu, its first config's S).
std::string decode_gemv_story(const GemmShape& g, const Analysis& a, double weight_bytes) {
  const GpuSpec& gpu = find_gpu(a.gpu);
  const int64_t sms = static_cast<int64_t>(gpu.sm_count.value);
  const int strips = g.m > 8 && g.n % 64 == 0 && g.n / 64 >= sms ? 4 : g.n % 32 == 0 ? 2 : 1;
  const double blocks = std::ceil(static_cast<double>(g.n) / (16.0 * strips));
  const double a_bytes = static_cast<double>(g.m) * static_cast<double>(g.k) * parse_format(a.dtype).bytes * blocks;
  return fmt::format("  decode gemv  cuda_decode_gemv (m <= 16): {} blocks of {} columns ({} SMs), each reading all of A "
                     "(m*k*e = {} bytes) from L2: {} bytes, {}x the int4 weights' {}; {} (modelled)\n",
                     num(blocks), 16 * strips, num(gpu.sm_count.value), num(a_bytes / blocks), num(a_bytes),
                     num(a_bytes / weight_bytes), num(weight_bytes),
                     a_bytes > weight_bytes ? "A's L2 traffic passes the weights', so the L2, not DRAM, may set the time"
                                            : "under the weights' bytes, which set the time");
}

std::string gemm_story(const Request& req, const Analysis& a) {
  std::string s = roof_story(req, a);
  const GemmShape g = gemm_shape(req);
  const std::string form = a.extra.value("form", "");
  if (form == "w8a8") {
    Request b = req;
    b.dtype = "bf16";
    const Analysis u = analyze(b);
    s += fmt::format("  vs bf16      the bf16 gemm moves {} bytes, lower bound {} ({}); {} has {}x fewer bytes, a {}x "
                     "higher peak ({} TFLOP/s bf16, {}): {}x faster at the bound\n",
                     num(u.roof.bytes), secs(u.roof.t_lower_bound_s), bound_word(u.roof), a.dtype,
                     num(u.roof.bytes / a.roof.bytes), num(a.peak.value / u.peak.value), num(u.peak.value / 1e12),
                     u.peak.source, num(u.roof.t_lower_bound_s / a.roof.t_lower_bound_s));
    return s;
  }
  Request plain = req;
  plain.dims.erase("weight_bits");
  plain.dims.erase("group_size");
  const Analysis u = form == "weight_only" ? analyze(plain) : a;
  const double e = parse_format(a.dtype).bytes, R = u.roof.ridge;
  const double w = e * static_cast<double>(g.k) * static_cast<double>(g.n);
  const std::optional<double> m_star = gemm_compute_bound_m(g.n, g.k, e, w, R);
  const std::string terms = fmt::format("(R = {} FLOP/B, e = {} bytes)", num(R), e);
  if (form != "weight_only") {
    s += m_star ? fmt::format("  compute-bound from m* = R*e*k*n / (2*n*k - R*e*(k+n)) = {} {}; below it the k*n weights "
                              "dominate the bytes\n", num(*m_star), terms)
                : fmt::format("  memory-bound at every m: 2*n*k <= R*e*(k+n) {}\n", terms);
    return s;
  }
  const int bits = a.extra.at("weight_bits").get<int>();
  const int64_t group = a.extra.at("group_size").get<int64_t>();
  const double wq = gemm_weight_bytes(g.k, g.n, bits, group);
  s += fmt::format("  weights      {} bytes as int{} with an fp16 scale per {} along k, against {} in {}: {}x fewer\n",
                   num(wq), bits, group, num(w), a.dtype, num(w / wq));
  s += fmt::format("  vs {:<9} the unquantized gemm moves {} bytes, lower bound {} ({}); quantized {}: {}x faster\n", a.dtype,
                   num(u.roof.bytes), secs(u.roof.t_lower_bound_s), bound_word(u.roof), secs(a.roof.t_lower_bound_s),
                   num(u.roof.t_lower_bound_s / a.roof.t_lower_bound_s));
  const std::string where = m_star ? fmt::format("for m < m* = R*e*k*n / (2*n*k - R*e*(k+n)) = {} {}", num(*m_star), terms)
                                   : fmt::format("at every m, since 2*n*k <= R*e*(k+n) {}", terms);
  s += fmt::format("  pays while   the {} gemm is memory-bound, {}: both forms do the same FLOPs at the same peak "
                   "(dequantisation not counted), so fewer weight bytes shorten the time only while bytes set it; above, "
                   "both are compute-bound and quantization saves nothing. Here m = {}: it {}.\n",
                   a.dtype, where, g.m, u.roof.compute_bound ? "does not pay" : "pays");
  const std::optional<double> m_q = gemm_compute_bound_m(g.n, g.k, e, wq, a.roof.ridge);
  s += fmt::format("  the int{} gemm itself turns compute-bound at m = {}\n", bits, m_q ? num(*m_q) : "never");
  if (bits == 4) s += dequantization_story(g, a);
  if (bits == 4 && g.m <= 16) s += decode_gemv_story(g, a, wq);
  return s;
}

std::string attention_story(const Request& req, const Analysis& a) {
  std::string s = roof_story(req, a);
  const AttentionShape sh = attention_shape(req);
  const bool backward = req.has("backward");
  const double e = parse_format(a.dtype).bytes;
  const Roofline flash = reroof(a, attention_cost(sh, e, backward, Schedule::flash));
  const Roofline naive = reroof(a, attention_cost(sh, e, backward, Schedule::naive));
  s += fmt::format("  {} pass, both schedules:\n", backward ? "backward" : "forward");
  for (const auto& [name, r] : {std::pair{"flash", flash}, std::pair{"naive", naive}})
    s += fmt::format("    {}  bytes {}, intensity {} FLOP/B, {}, lower bound {}\n", name, num(r.bytes), num(r.intensity),
                     bound_word(r), secs(r.t_lower_bound_s));
  const double scores = static_cast<double>(sh.batch) * static_cast<double>(sh.heads) * static_cast<double>(sh.seq_q) *
                        static_cast<double>(sh.seq_kv);
  s += fmt::format("  naive/flash  {}x the bytes: the naive schedule also moves {} B*H*Sq*Sk matrices of {} elements "
                   "({}), the FLOPs are the same {}: FlashAttention saves memory traffic, not FLOPs; the "
                   "flash lower bound is {}x shorter\n",
                   num(naive.bytes / flash.bytes), backward ? 7 : 4, num(scores), backward ? "P, dP and dS" : "S and P",
                   num(flash.flops), num(naive.t_lower_bound_s / flash.t_lower_bound_s));
  const double peak_flash = attention_peak_bytes(sh, e, backward, Schedule::flash);
  const double peak_naive = attention_peak_bytes(sh, e, backward, Schedule::naive);
  const double capacity = find_gpu(a.gpu).memory_bytes.value;
  s += fmt::format("  peak memory  flash {} GB, naive {} GB ({}x: {} B*H*Sq*Sk matrices of {} GB held at once){}\n",
                   num(peak_flash / 1e9), num(peak_naive / 1e9), num(peak_naive / peak_flash), backward ? 3 : 2,
                   num(scores * e / 1e9),
                   peak_naive > capacity ? fmt::format(": the naive schedule does not fit in the {}'s {} GB", a.gpu_name,
                                                       num(capacity / 1e9))
                                         : "");
  const double d = static_cast<double>(sh.head_dim);
  if (backward) {
    // What recomputing P costs against storing it: the forward's Q K^T again, or P written and read.
    const double recompute = attention_flops(sh, false) / 2, p_bytes = 2 * scores * e;
    s += fmt::format("  recompute    the backward rebuilds S = Q K^T and P = exp(S - LSE) on chip: {} more FLOPs ({:.0f}% of "
                     "its {}), {} at the {} TFLOP/s peak; keeping P from the forward instead means writing and reading {} B ({} "
                     "at {}) and holding {} GB: recomputing is {}x faster\n",
                     num(recompute), 100 * recompute / flash.flops, num(flash.flops), secs(recompute / a.peak.value),
                     num(a.peak.value / 1e12), num(p_bytes), secs(p_bytes / a.bandwidth.value), gbps(a.bandwidth.value),
                     num(scores * e / 1e9), num((p_bytes / a.bandwidth.value) / (recompute / a.peak.value)));
    // The tensor-core backward's tile (src/ops/attention/cuda/v13_bwd_flash2_mma.cu; fp16/bf16 tiles).
    const double key_blocks = std::ceil(static_cast<double>(sh.seq_kv) / 64);
    const double q_and_do = 2.0 * static_cast<double>(sh.batch * sh.heads * sh.seq_q) * d * e;
    s += fmt::format("  tiles        cuda_flash2_mma (backward): 64 keys (16 per warp) x 32 queries a step; shared memory K + V "
                     "{} KiB + 2 stages x (Q + dO) {} KiB + dS^T 4 KiB + LSE and D 0.5 KiB = {} KiB per block. A lane holds its 16 keys' dK and "
                     "dV in 2 x 16 x d / 32 = {} fp32 registers beside S^T's and dP^T's 16 each (so the rung stops at d = 128: "
                     "256 at d = 256). Q and dO are read once per 64 keys: {} x {} B = {} B from L2 for the {} B in HBM; dQ "
                     "gets one fp32 atomic add per element from each of up to {} key blocks ({} B of adds at most)\n",
                     num(2 * 64 * d * 2 / 1024), num(2 * 2 * 32 * d * 2 / 1024), num((4 * 64 * d * 2 + 64 * 32 * 2) / 1024 + 0.5),
                     num(d), num(key_blocks), num(q_and_do), num(key_blocks * q_and_do), num(q_and_do),
                     num(key_blocks), num(key_blocks * q_and_do / 2 / e * 4));
    return s;
  }
  // The tensor-core rung's tile (src/ops/attention/cuda/v03_flash2_mma.cu; fp16/bf16 tiles).
  const double keys = sh.head_dim > 128 ? 32 : 64, q_tiles = std::ceil(static_cast<double>(sh.seq_q) / 64);
  const double kv_once = 2.0 * static_cast<double>(sh.batch * sh.kv_heads * sh.seq_kv) * d * e;
  s += fmt::format("  tiles        cuda_flash2_mma: 64 queries (16 per warp) x {} keys a step; shared memory Q {} KiB + 2 stages x "
                   "(K + V) {} KiB = {} KiB per block (cp.async fills one stage while the other is multiplied). A lane holds "
                   "its 16 rows' O in 16 x d / 32 = {} fp32 registers beside S's {}: past d = 128 the key tile halves so "
                   "that both fit in 255. K and V are read once per 64 queries of a head: {} x {} B = {} B from L2 for "
                   "the {} B in HBM\n",
                   num(keys), num(64 * d * 2 / 1024), num(2 * keys * d * 2 / 1024), num((64 * d + 4 * keys * d) * 2 / 1024),
                   num(d / 2), num(keys / 2), num(q_tiles * static_cast<double>(sh.heads) / static_cast<double>(sh.kv_heads)),
                   num(kv_once), num(q_tiles * static_cast<double>(sh.heads) / static_cast<double>(sh.kv_heads) * kv_once),
                   num(kv_once));
  if (sh.head_dim == 64 || sh.head_dim == 128 || sh.head_dim == 256)  // src/ops/attention/cuda/v04_hopper_wgmma.cu
    s += fmt::format("               cuda_hopper_wgmma (sm_90a): 128 queries (two consumer warpgroups of 64) x 64 keys; Q {} KiB "
                     "+ 2 stages x (K + V) {} KiB = {} KiB by TMA; a consumer thread holds O's 64 x d / 128 = {} and S's 32 "
                     "fp32 registers (240 after setmaxnreg), P goes from registers straight into the PV wgmma\n",
                     num(128 * d * 2 / 1024), num(2 * 64 * d * 2 / 1024), num((128 * d + 4 * 64 * d) * 2 / 1024), num(d / 2));
  if (flash.compute_bound) return s;
  const double kv_bytes = 2.0 * static_cast<double>(sh.batch) * static_cast<double>(sh.kv_heads) *
                          static_cast<double>(sh.seq_kv) * static_cast<double>(sh.head_dim) * e;
  const double per_kv = 2.0 * static_cast<double>(sh.heads) * static_cast<double>(sh.seq_q) / static_cast<double>(sh.kv_heads);
  s += fmt::format("  why memory   K and V are {} of the {} bytes ({:.1f}%); each K/V element feeds 2*H*Sq/Hkv = {} FLOPs "
                   "({} query heads per kv head x {} queries), so the intensity tends to 2*H*Sq/(Hkv*e) = {} FLOP/B, "
                   "{}x below the ridge {}: the time is the K/V read, {} at {}. A larger batch does not help (each "
                   "sequence reads its own cache); more queries per kv head do: Sq ~ R*e*Hkv/(2*H) = {} reaches "
                   "the ridge\n",
                   num(kv_bytes), num(flash.bytes), 100 * kv_bytes / flash.bytes, num(per_kv), sh.heads / sh.kv_heads,
                   sh.seq_q, num(decode_intensity_limit(sh, e)), num(flash.ridge / flash.intensity), num(flash.ridge),
                   secs(flash.t_memory_s), gbps(a.bandwidth.value),
                   num(flash.ridge * e * static_cast<double>(sh.kv_heads) / (2.0 * static_cast<double>(sh.heads))));
  return s;
}

std::string decode_story(const Request& req, const Analysis& a) {
  std::string s = roof_story(req, a);
  const Roofline& r = a.roof;
  const auto dim = [&](const std::string& name, int64_t fallback) {  // the request's, else the op's default
    for (const DimSpec& x : find_op("decode").dims)
      if (x.name == name) fallback = x.default_value;
    return static_cast<double>(req.dim(name, fallback));
  };
  const double batch = dim("batch", 0), new_tokens = dim("seq_q", 0), context = dim("seq_kv", 0), heads = dim("heads", 0);
  const double kv_heads = dim("kv_heads", 0), d = dim("head_dim", 0), dv = req.dims.count("head_dim_v") ? dim("head_dim_v", 0) : d;
  const double e = parse_format(a.dtype).bytes, kv = batch * context * kv_heads * (d + dv) * e;
  const double limit = 2 * new_tokens * heads / kv_heads / e;
  s += fmt::format("  why memory   the cache's K and V are {} of the {} bytes ({:.1f}%); each element feeds 2 s_q h/h_kv = {} "
                   "FLOPs (the group's query heads and new tokens share it), so the intensity is at most {} FLOP/B, {}x below "
                   "the ridge: the time is the cache read, {} at {}\n",
                   num(kv), num(r.bytes), 100 * kv / r.bytes, num(2 * new_tokens * heads / kv_heads), num(limit),
                   num(r.ridge / limit), secs(r.t_memory_s), gbps(a.bandwidth.value));
  const double sms = find_gpu(a.gpu).sm_count.value, blocks = batch * kv_heads;
  // cuda_split_kv's choice (v21_decode_split_kv.cu): two blocks per SM, 128 keys at least, whole 32-key tiles.
  const double wanted = std::max(1.0, std::min(std::ceil(2 * sms / blocks), std::floor(context / 128)));
  const double keys = std::ceil(std::ceil(context / wanted) / 32) * 32, splits = std::ceil(context / keys);
  const double merge = 2 * splits * batch * new_tokens * heads * (dv + 1) * 4;
  s += fmt::format("  split-KV     one block per (sequence, kv head) is {} blocks for {} SMs{}; cuda_split_kv cuts the {} keys "
                   "into {} ranges of {} ({} blocks), and merging their fp32 outputs by their LSE moves {} B more ({:.2f}% of "
                   "the cache read)\n",
                   num(blocks), num(sms), blocks < sms ? fmt::format(": {:.0f}% of the SMs have loads in flight", 100 * blocks / sms) : "",
                   num(context), num(splits), num(keys), num(blocks * splits), num(merge), 100 * merge / kv);
  return s;
}

std::string collective_story(const Request&, const Analysis& a) {
  const Collective c = *parse_collective(a.op);
  const double bytes = a.extra.at("message_bytes").get<double>(), factor = a.extra.at("bus_factor").get<double>();
  const Roofline& r = a.roof;
  std::string s;
  s += fmt::format("  message      {} bytes per rank ({} GiB), nccl-tests' size{}\n", num(bytes), num(bytes / (1 << 30)),
                   c == Collective::allgather ? " (allgather: the gathered output)" : "");
  s += fmt::format("  link         {} {} ({})\n", gbps(a.bandwidth.value), link_name(a), a.bandwidth.source);
  s += fmt::format("  bus factor   {} = {}: in a ring each rank sends and receives {} bytes over its busiest link\n",
                   c == Collective::allreduce ? "2(n-1)/n" : "(n-1)/n", num(factor), num(r.bytes));
  s += fmt::format("  lower bound  {} = {} B / {}: link-bound (no FLOPs counted)\n", secs(r.t_lower_bound_s), num(r.bytes),
                   gbps(a.bandwidth.value));
  s += fmt::format("  algbw        bytes / time = {}: the rate the application sees\n", gbps(a.extra.at("algbw").get<double>()));
  s += fmt::format("  busbw        algbw * {} = {}: equals the link bandwidth at the bound, so nccl-tests reports it to "
                   "compare runs at any rank count with the link's peak\n",
                   num(factor), gbps(a.extra.at("busbw").get<double>()));
  return s;
}

std::string explain(const Request& req, const nlohmann::json* results) {
  const Analysis a = analyze(req);
  std::string s = fmt::format("{} {} {} on {} ({}), {}\n", a.op, a.shape, a.dtype, a.gpu_name, a.gpu,
                              a.measured ? "measured ceilings where known" : "datasheet ceilings");
  const AnalyticOp& op = find_analytic_op(a.op);
  s += fmt::format("  what         {}\n", op.summary);
  s += op.story(req, a);
  s += fmt::format("  counting     {}\n", a.counting);
  if (results) {
    try {
      s += place_results(a, *results);
    } catch (const nlohmann::json::exception& e) {
      bad_input(fmt::format("results: {}", e.what()));
    }
  }
  return s;
}

}  // namespace kl::model
