// kernelab's cache folders (the simulator's builds, NVRTC's PTX): $OVERRIDE_ENV when set, else
// $XDG_CACHE_HOME/kernelab/LEAF, else ~/.cache/kernelab/LEAF, else a temporary folder; created.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kl {

inline std::string cache_dir(const char* override_env, const std::string& leaf) {
  namespace fs = std::filesystem;
  fs::path d;
  if (const char* c = std::getenv(override_env); c && *c) d = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) d = fs::path(x) / "kernelab" / leaf;
  else if (const char* h = std::getenv("HOME"); h && *h) d = fs::path(h) / ".cache" / "kernelab" / leaf;
  else d = fs::temp_directory_path() / ("kernelab-" + leaf);
  std::error_code ec;
  fs::create_directories(d, ec);
  return d.string();
}

}  // namespace kl
