// The text of `kernelab explain`: the short exact answer, every number computed from the cost
// models and the GPU's ceilings, each ceiling with its source.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "model/analysis.h"

namespace kl::model {

// The whole story of a request. With results (a kernelab results.json: an object with "points"
// or a list of points, each with op, dtype, median_s, flops, bytes, device), the points of the
// same op and dtype are placed against this GPU's bound.
std::string explain(const Request& req, const nlohmann::json* results = nullptr);

// The roofline paragraph every op starts with: FLOPs, bytes, intensity against the ridge, the
// bound and the lower-bound time.
std::string roof_story(const Request& req, const Analysis& a);

// The op-specific stories (analysis.cpp wires them into the op table).
std::string gemm_story(const Request& req, const Analysis& a);       // quantization pays below m*
std::string attention_story(const Request& req, const Analysis& a);  // flash vs naive; why decode is memory-bound
std::string decode_story(const Request& req, const Analysis& a);     // the cache read; why split-KV
std::string collective_story(const Request& req, const Analysis& a); // algbw vs busbw

}  // namespace kl::model
