// The communication volume of parallel training: for a transformer and a TP x PP x DP (ZeRO) x SP x
// EP layout, the collectives of one optimizer step on one GPU, the bytes each moves, the link that
// carries it and its time at that link's bandwidth. Counting (Megatron-LM, Narayanan et al. 2021;
// Korthikanti et al. 2022; ZeRO, Rajbhandari et al. 2020):
//   TP: per layer 2 all-reduces of b·s·h elements forward and 2 backward (attention and MLP outputs);
//       with SP each becomes a reduce-scatter plus an all-gather of the same b·s·h (same bytes).
//   PP: per micro-batch a stage sends its activations b·s·h forward and receives gradients b·s·h back.
//   DP: the gradients of this GPU's parameter shard (P/(t·p), P = 12·L·h² + V·h), all-reduced once per step
//       (ZeRO 1, 2: a reduce-scatter plus an all-gather, the same bytes; ZeRO 3: the parameters
//       all-gathered forward and again backward, gradients reduce-scattered: 1.5x).
//   MoE (E experts, every layer): a layer holds attention 4h², a router h·E and E expert FFNs of 8h²
//       each, P = L·(4h² + h·E + 8h²·E) + V·h. The dense part, L·(4h² + h·E) + V·h, reduces as above
//       over the dp ranks; an EP rank holds E/ep experts per layer, so its expert shard
//       L·8h²·(E/ep)/(t·p) reduces only over the dp/ep ranks that hold the same experts
//       (expert data parallel, "EDP"; the same ZeRO stage).
//   EP: per MoE layer an all-to-all dispatches b·s·h·k elements and one combines them, forward and backward.
// Bytes on the link use nccl-tests' bus factors (2(n-1)/n all-reduce, (n-1)/n the others; point to point 1).
// Not counted: activation recomputation, the embeddings' own collectives, optimizer traffic.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kl::model {

struct ParallelConfig {
  int64_t hidden = 4096, layers = 32, heads = 32, seq = 4096, micro_batch = 1, micro_batches = 1, vocab = 0;
  std::string dtype = "bf16";
  int64_t tp = 1, pp = 1, dp = 1, zero = 0;
  bool sp = false;
  int64_t experts = 0, top_k = 2, ep = 1;
  std::string gpu = "h100-sxm";
  int64_t gpus_per_node = 8;
  double inter_node_gbs = 50;             // per GPU per direction
  std::optional<double> measured_busbw_gbs;  // a bus bandwidth measured by `comm bench`, when there is one
};

struct CollectiveLine {
  std::string parallelism, collective, when;
  int64_t group = 0;         // ranks in the group
  int64_t calls = 0;         // per step
  double bytes_per_call = 0; // the size nccl-tests would report
  double link_bytes = 0;     // per GPU per step, on its busiest link: calls * bytes * bus factor
  std::string link, link_source;
  double link_bw = 0;        // bytes/s per direction
  double time_s = 0, measured_time_s = 0;
  std::string overlap;       // what it can hide behind
};

struct ParallelPlan {
  std::vector<CollectiveLine> lines;
  double params = 0, link_bytes = 0, time_s = 0;
  std::string text;
  nlohmann::json json;
};

ParallelPlan explain_parallel(const ParallelConfig& c);  // BadInput naming the inconsistent value

}  // namespace kl::model
