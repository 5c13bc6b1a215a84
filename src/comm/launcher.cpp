#include "comm/launcher.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "kernelab/error.h"

namespace kl::comm {

namespace {

const char* launcher_size_env() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = getenv(name)) return v;
  return nullptr;
}

std::vector<std::string> own_arguments() {  // argv as the kernel keeps it
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t pos = 0; pos < all.size();) {
    const std::size_t end = all.find('\0', pos);
    args.push_back(all.substr(pos, end - pos));
    pos = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

}  // namespace

int launcher_world_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = getenv(name)) return std::atoi(v);
  return -1;
}

std::string launcher_job_id() {
  for (const char* name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"})
    if (const char* v = getenv(name); v && *v) return v;
  const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
  return job && *job ? fmt::format("{}.{}", job, step ? step : "0") : "";
}

bool under_mpi_launcher() { return launcher_size_env() != nullptr; }

int launcher_world_size() {
  const char* v = launcher_size_env();
  return v ? std::atoi(v) : 0;
}

void relaunch_under_mpirun(int ranks) {
  char exe[4096] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) runtime_failure("cannot read /proc/self/exe to start mpirun");
  // After a rank dies mpirun sends SIGCONT, SIGTERM a timeout later and SIGKILL one more later (1 s
  // by default): on a crowded host too little for every survivor to reach the collective the dead
  // rank never entered and dump its flight recorder (a CI run lost rank 0's dump so).
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks), "--mca", "odls_base_sigkill_timeout", "3"};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (ranks > int(std::thread::hardware_concurrency()))
    args.insert(args.end(), {"--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"});
  args.push_back(exe);
  const std::vector<std::string> own = own_arguments();
  args.insert(args.end(), own.begin() + (own.empty() ? 0 : 1), own.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp("mpirun", argv.data());
  runtime_failure(fmt::format("cannot start mpirun ({}): install OpenMPI (apt-get install openmpi-bin libopenmpi-dev)",
                              std::strerror(errno)));
}

}  // namespace kl::comm
