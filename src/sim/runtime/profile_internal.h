// The profiler's calls from the launch and the scheduler (profile.cpp). Not part of the public API.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kl::sim::detail {

struct Launch;
struct Worker;

// At the start of a launch: whether a profile runs (the launch then runs serially, and its
// block count may shrink to the profile's sample).
bool profiled_launch(Launch& launch);
void profile_block_start(Worker& w);
void profile_barrier(Worker& w, unsigned warps_at_barrier);  // every thread of the block waits at a barrier
void profile_block_end(Worker& w);
// A plain load or store of instrumented code (the __tsan_* hooks).
void profile_access(const void* address, std::size_t bytes, bool store, std::uintptr_t site);
// A basic block entered (-fsanitize-coverage=trace-pc): its address and the frame it runs in.
void profile_block(std::uintptr_t pc, std::uintptr_t frame);

}  // namespace kl::sim::detail
