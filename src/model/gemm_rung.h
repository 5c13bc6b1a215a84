// `kernelab explain gemm --rung NAME`: one CUDA gemm rung modelled on a GPU from its declared
// tiling (op.h Tiling) and its built resources (registers, shared memory: ops/static_facts.h).
// Every figure is computed; the times are modelled lower bounds, never measurements.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "model/analysis.h"

namespace kl::model {

struct RungExplanation {
  std::string text;
  nlohmann::json json;
};

// BadInput for an unknown rung or config, a peer (its tiles are the library's), or a rung that
// does not take the problem (with its reason).
RungExplanation explain_gemm_rung(const Request& req, const std::string& rung, const std::string& config);

}  // namespace kl::model
