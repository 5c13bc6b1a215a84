// Runs `kernelab <args>` (which starts mpirun itself) under a hard `timeout`, with stdout and
// stderr apart and the wall time, for the tests that start MPI jobs.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kl::test {

struct MpiResult {
  int code = -1;  // exit status; 124 when `timeout` cut it
  std::string out, err;
  double seconds = 0;
};

// A folder of this test process's own (dumps, stderr), removed when it exits.
inline std::filesystem::path mpi_scratch(const std::string& name) {
  struct Root {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("kernelab-comm-test-" + std::to_string(getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Root root;
  const std::filesystem::path p = root.path / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline MpiResult run_mpi(const std::string& args, int limit_s = 100) {
  const std::filesystem::path err = mpi_scratch("stderr") / "stderr.txt";
  const std::string cmd = "timeout -k 5 " + std::to_string(limit_s) + " '" KERNELAB_BINARY "' " + args + " 2>'" + err.string() + "'";
  MpiResult r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.err = read_all(err);
  return r;
}

}  // namespace kl::test
