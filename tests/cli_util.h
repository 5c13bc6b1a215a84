// What the tests that run the kernelab binary share: a scratch folder for the test process, a file
// read whole, and `kernelab <args>` through the shell with stdout and stderr kept apart.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kl::test {

struct CliResult {
  int code = -1;  // the exit status; 128 + the signal's number when one ended it; 124 after the timeout
  std::string out, err;
};

// A folder of this test process's own, removed when it exits.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir{[] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kernelab-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    return std::filesystem::path(tmpl);
  }()};
  return dir.path;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `env timeout 600 kernelab <args>` (a hang fails the test, not the suite).
inline CliResult run_kernelab(const std::string& args, const std::string& env = "") {
  const std::filesystem::path err = scratch_dir() / "stderr.txt";
  const std::string cmd = env + " timeout 600 '" + KERNELAB_BINARY + "' " + args + " 2>'" + err.string() + "'";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.err = slurp(err);
  return r;
}

}  // namespace kl::test
