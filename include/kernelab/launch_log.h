// Which kernels a variant actually launched. KL_LAUNCH (ops/gpu_rung.h) records every kernel it
// launches, in both builds; while a LaunchLog is alive on this thread it keeps them, so the
// harness can refuse a launch its configuration does not declare and `check --json` can show
// the launched kernels.
#pragma once
#include <vector>

namespace kl {

void record_launch(const void* kernel);

class LaunchLog {
 public:
  LaunchLog();
  ~LaunchLog();
  LaunchLog(const LaunchLog&) = delete;
  LaunchLog& operator=(const LaunchLog&) = delete;
  const std::vector<const void*>& kernels() const { return kernels_; }

 private:
  friend void record_launch(const void* kernel);
  std::vector<const void*> kernels_;
  LaunchLog* outer_;
};

}  // namespace kl
