// Compiling and running a program on the simulator. Paths to the header, the runtime
// archive and the compiler are fixed when kernelab is built (sim.cmake).
#include "sim/run/driver.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kernelab/cache_dir.h"
#include "kernelab/error.h"
#include "sim/run/rewrite.h"

namespace fs = std::filesystem;

namespace kl::sim {
namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string identity(const fs::path& p) {  // changes when the file does
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  const auto time = fs::last_write_time(p, ec).time_since_epoch().count();
  return p.string() + ":" + std::to_string(size) + ":" + std::to_string(time);
}

// Runs argv; with `output`, collects stdout and stderr into it. Returns the wait status.
int spawn(const std::vector<std::string>& argv, std::string* output, bool stdout_to_stderr = false) {
  int fds[2] = {-1, -1};
  if (output && pipe(fds) != 0) runtime_failure("cannot create a pipe");
  const pid_t pid = fork();
  if (pid < 0) runtime_failure("cannot fork");
  if (pid == 0) {
    signal(SIGINT, SIG_DFL), signal(SIGQUIT, SIG_DFL);  // we ignore them while we wait; the child must not
    if (output) dup2(fds[1], 1), dup2(fds[1], 2), close(fds[0]), close(fds[1]);
    if (stdout_to_stderr) dup2(2, 1);
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    std::fprintf(stderr, "kernelab sim: cannot run %s: %s\n", a[0], std::strerror(errno));
    _exit(127);
  }
  if (output) {
    close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) output->append(buf, std::size_t(n));
    close(fds[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// One build of a cache entry at a time: a second process building the same program (ctest runs
// tests side by side) waits for the first and then finds its build fresh. Without a lock file
// (a read-only cache) builds go ahead unlocked, each into its own names.
class BuildLock {
 public:
  explicit BuildLock(const fs::path& dir) : fd_(open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~BuildLock() {
    if (fd_ >= 0) close(fd_);
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  int fd_;
};

// Whether the cached binary is newer than every file its depfile lists.
bool fresh(const fs::path& binary, const fs::path& depfile) {
  std::error_code ec;
  if (!fs::exists(binary, ec) || !fs::exists(depfile, ec)) return false;
  const auto built = fs::last_write_time(binary, ec);
  std::string deps = read_file(depfile), item;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    const char c = deps[i];
    if (c == '\\' && i + 1 < deps.size() && (deps[i + 1] == '\n' || deps[i + 1] == ' ')) {
      if (deps[i + 1] == ' ') item += ' ';
      ++i;
      continue;
    }
    if (c != ' ' && c != '\n') {
      item += c;
      continue;
    }
    if (!item.empty() && item.back() != ':' && fs::exists(item, ec) && fs::last_write_time(item, ec) > built) return false;
    item.clear();
  }
  return true;
}

// Instrumented at compile time only: the hooks are the simulator's (runtime/tsan_hooks.cpp), not libtsan.
const std::vector<std::string> kProfileFlags = {"-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-fno-tree-vectorize",
                                                "-fno-tree-sra", "-fsanitize-coverage=trace-pc", "-fno-reorder-blocks",
                                                "-fno-reorder-blocks-and-partition", "-DKERNELAB_SIM_PROFILE=1"};

std::vector<std::string> compile_flags(const RunRequest& r, const fs::path& source) {
  const std::string dir = KERNELAB_SIM_DIR;
  // -fstack-clash-protection: a frame larger than the guard page below a fiber's stack
  // touches each page on the way down, so an overflow faults instead of hitting a neighbour.
  // -fno-strict-aliasing: CUDA programs read memory through other types (float4 over floats);
  // -Wno-psabi: GCC's note on passing 128-byte-aligned structs (CUtensorMap kernel parameters).
  std::vector<std::string> f = {"-std=" + r.std, "-O1", "-fno-strict-aliasing", "-Wno-psabi", "-pthread", "-fstack-clash-protection",
                                "-include", dir + "/cuda_sim.h",
                                "-I", dir + "/shadow", "-I", fs::path(dir).parent_path().string(),
                                "-I", KERNELAB_SIM_GENERATED, "-I", KERNELAB_SIM_CUDA_INCLUDE, "-I", KERNELAB_SIM_CCCL_INCLUDE,
                                "-iquote", source.parent_path().string()};
  if (r.debug_info) f.push_back("-g");
  for (const std::string& d : r.include_dirs) f.insert(f.end(), {"-I", fs::absolute(d).string()});
  f.push_back("-DKERNELAB_SIM_CUDA_ARCH=" + std::to_string(r.cuda_arch));
  for (const std::string& d : r.defines) f.push_back("-D" + d);
  f.insert(f.end(), r.host_flags.begin(), r.host_flags.end());
  if (r.memcheck) f.insert(f.end(), {"-fsanitize=address", "-fno-omit-frame-pointer", "-DKERNELAB_SIM_MEMCHECK=1"});
  // A misaligned typed access in a kernel faults, as on a GPU (runtime/ubsan_hooks.cpp; not with the profiler's instrumentation).
  if (!r.profile) f.push_back("-fsanitize=alignment");
  if (r.profile) f.insert(f.end(), kProfileFlags.begin(), kProfileFlags.end());
  return f;
}

std::string undefined_api_hint(const std::string& log) {
  std::string hint;
  for (const char* api : {"undefined reference to `cu", "undefined reference to `nvrtc"}) {  // runtime, driver, cuBLAS, NVRTC
    for (std::size_t p = 0; (p = log.find(api, p)) != std::string::npos;) {
      const std::size_t s = p + 24, e = log.find_first_of("'(", s);
      const std::string name = log.substr(s, e - s);
      if (hint.find(name) == std::string::npos) hint += (hint.empty() ? "" : ", ") + name;
      p = e;
    }
  }
  return hint.empty() ? "" : "kernelab sim: the simulator does not implement " + hint + "\n";
}

std::string signal_name(int sig) {
  const char* d = strsignal(sig);
  return std::to_string(sig) + (d ? std::string(" (") + d + ")" : "");
}

// The program's own headers (quote includes found beside the including file or in a -I
// directory) may hold kernels and launches too. Each is rewritten into a copy under the
// cache, at a path fixed by the original's, and the #include that named it now names the
// copy (lines keep their numbers; a #line in the copy names the original). A copy is only
// written when its text changes, so that a cached build's dependencies stay older than it.
class Rewriter {
 public:
  Rewriter(const fs::path& cache, std::vector<std::string> include_dirs)
      : cache_(cache / "headers"), dirs_(std::move(include_dirs)) {}

  // `shown` is the name messages use for the file.
  std::string rewrite(const fs::path& file, const std::string& shown) {
    std::string text = read_file(file);
    const auto includes = quote_includes(text);
    for (auto it = includes.rbegin(); it != includes.rend(); ++it) {  // back to front: offsets stay valid
      const fs::path found = resolve(file.parent_path(), it->name);
      if (found.empty() || busy_.count(found.string())) continue;  // not ours, or a cycle: left as it was
      text.replace(it->offset, it->length, copy_of(found));
    }
    return rewrite_cuda(text, shown);
  }
  std::string all_text() const { return all_; }  // every copy's text, for the cache key

 private:
  fs::path resolve(const fs::path& dir, const std::string& name) const {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec)) return fs::weakly_canonical(dir / name, ec);
    for (const std::string& d : dirs_)
      if (fs::is_regular_file(fs::path(d) / name, ec)) return fs::weakly_canonical(fs::path(d) / name, ec);
    return {};
  }
  std::string copy_of(const fs::path& original) {
    char dir[17];
    std::snprintf(dir, sizeof dir, "%016llx", static_cast<unsigned long long>(fnv1a(original.string())));
    const fs::path copy = cache_ / dir / original.filename();
    if (!done_.count(copy.string())) {
      busy_.insert(original.string());
      std::error_code ec;
      const fs::path rel = fs::relative(original, ec);  // messages: the path from here, if it is short
      const bool inside = !ec && !rel.empty() && *rel.begin() != "..";
      const std::string text = rewrite(original, inside ? rel.string() : original.string());
      busy_.erase(original.string());
      done_.insert(copy.string());
      all_ += copy.string() + '\0' + text + '\0';
      fs::create_directories(copy.parent_path(), ec);
      if (read_file(copy) != text) {
        const fs::path tmp = copy.string() + "." + std::to_string(getpid());
        std::ofstream(tmp, std::ios::binary) << text;
        fs::rename(tmp, copy, ec);
      }
    }
    return copy.string();
  }
  fs::path cache_;
  std::vector<std::string> dirs_;
  std::set<std::string> busy_, done_;
  std::string all_;
};

}  // namespace

std::string cache_dir() { return kl::cache_dir("KERNELAB_SIM_CACHE", "sim"); }

Build build_program(const RunRequest& r) {
  std::vector<std::string> shown = {r.file};  // messages name the files as the user wrote them
  shown.insert(shown.end(), r.more_sources.begin(), r.more_sources.end());
  std::error_code ec;
  std::vector<std::string> include_dirs;
  for (const std::string& d : r.include_dirs) include_dirs.push_back(fs::absolute(d).string());
  Rewriter rewriter(cache_dir(), include_dirs);
  std::vector<std::string> rewritten;
  std::vector<std::vector<std::string>> flags;
  std::string key_text;
  for (const std::string& file : shown) {
    const fs::path source = fs::absolute(file);
    if (!fs::is_regular_file(source, ec)) bad_input("sim run: cannot read " + file);
    rewritten.push_back(rewriter.rewrite(source, file));
    flags.push_back(compile_flags(r, source));
    key_text += rewritten.back() + '\0';
    for (const std::string& f : flags.back()) key_text += f + '\0';
  }
  key_text += rewriter.all_text() + KERNELAB_SIM_CXX + '\0' + identity(KERNELAB_SIM_LIBRARY);
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a(key_text)));
  const fs::path dir = fs::path(cache_dir()) / key, binary = dir / "program", depfile = dir / "program.d";
  Build b{binary.string()};
  fs::create_directories(dir, ec);
  const BuildLock lock(dir);
  if (!r.no_cache && fresh(binary, depfile)) {
    b.cached = true;
    if (r.verbose) std::fprintf(stderr, "kernelab sim: cached build %s\n", binary.c_str());
    return b;
  }
  // Names of this process's own, renamed into place at the end: concurrent runs may race.
  const std::string pid = std::to_string(getpid());
  const fs::path tmp_bin = dir / ("program." + pid), tmp_dep = dir / ("program." + pid + ".d");
  // Each source compiled on its own, then linked; the profile build links without
  // -fsanitize=thread (which would bring libtsan), the memcheck build with AddressSanitizer.
  std::vector<std::vector<std::string>> steps;
  std::vector<fs::path> temporaries;
  std::vector<std::string> link = {KERNELAB_SIM_CXX, "-pthread"};
  if (r.memcheck) link.push_back("-fsanitize=address");
  link.insert(link.end(), r.host_flags.begin(), r.host_flags.end());
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const std::string n = std::to_string(i) + "." + pid;
    const fs::path cpp = dir / ("source" + n + ".cpp"), object = dir / ("source" + n + ".o"),
                   dep = dir / ("source" + n + ".d");
    std::ofstream(cpp, std::ios::binary) << rewritten[i];
    std::vector<std::string> cmd = {KERNELAB_SIM_CXX};
    cmd.insert(cmd.end(), flags[i].begin(), flags[i].end());
    cmd.insert(cmd.end(), {"-MMD", "-MF", dep.string(), "-x", "c++", "-c", cpp.string(), "-o", object.string()});
    steps.push_back(cmd);
    link.push_back(object.string());
    temporaries.insert(temporaries.end(), {cpp, object, dep});
  }
  link.insert(link.end(), {"-o", tmp_bin.string(), KERNELAB_SIM_LIBRARY, KERNELAB_SIM_LINK_LIBS, "-ldl"});
  steps.push_back(link);
  const auto t0 = std::chrono::steady_clock::now();
  std::string log;
  int status = 0;
  for (const auto& cmd : steps) {
    if (r.verbose) {
      std::string line = "kernelab sim: compiling:";
      for (const std::string& c : cmd) line += " " + c;
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    status = spawn(cmd, &log);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) break;
  }
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {  // one dependency file for fresh(): the sources' together
    std::ofstream deps(tmp_dep, std::ios::binary);
    for (std::size_t i = 0; i < shown.size(); ++i) deps << read_file(temporaries[3 * i + 2]) << '\n';
  }
  for (const fs::path& t : temporaries) fs::remove(t, ec);
  if (!log.empty()) std::fputs(log.c_str(), stderr);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fs::remove(tmp_bin, ec), fs::remove(tmp_dep, ec);
    std::fputs(undefined_api_hint(log).c_str(), stderr);
    bad_input("sim run: " + r.file + " does not compile for the simulator (the compiler's messages are above)");
  }
  fs::rename(tmp_dep, depfile, ec);
  fs::rename(tmp_bin, binary, ec);
  if (ec) runtime_failure("sim run: cannot store the build in " + dir.string() + ": " + ec.message());
  if (r.verbose) std::fprintf(stderr, "kernelab sim: compiled in %.1f s\n", b.seconds);
  return b;
}

std::string build_rung_library(const std::string& file, RungBuild kind) {
  std::error_code ec;
  const fs::path source = fs::absolute(file);
  if (!fs::is_regular_file(source, ec)) bad_input("--rung: cannot read " + file);
  const std::string dir = KERNELAB_SIM_DIR, src = KERNELAB_SOURCE_DIR;
  // The flags of the built-in rungs' builds (cmake/ops.cmake), position-independent.
  std::string compiler = KERNELAB_SIM_CXX;
  std::vector<std::string> flags, link_flags = {"-shared", "-fopenmp"};
  if (kind == RungBuild::cuda) {
#ifdef KERNELAB_NVCC
    compiler = KERNELAB_NVCC;
    flags = {"-std=c++20", "-O3", "-DNDEBUG", "-Xcompiler", "-fPIC", "-I", src + "/include", "-I", src + "/src"};
    for (std::string_view g = KERNELAB_RUNG_GENCODE; !g.empty();) {
      const std::size_t space = std::min(g.find(' '), g.size());
      flags.emplace_back(g.substr(0, space));
      g.remove_prefix(std::min(space + 1, g.size()));
    }
    link_flags = {"-shared", "-cudart", "shared"};  // kernelab's runtime: one context, its kernels registered there
#else
    bad_input("--rung " + file + ": this kernelab was built without nvcc, so it cannot build the file for the GPU");
#endif
  } else {
    flags = {"-std=gnu++20", "-O2", "-DNDEBUG", "-fPIC", "-fopenmp", "-fno-strict-aliasing", "-Wall", "-Wextra",
             "-Wno-psabi", "-include", dir + "/cuda_sim.h", "-I", src + "/include", "-I", src + "/src",
             "-I", dir + "/shadow", "-I", KERNELAB_SIM_GENERATED, "-I", KERNELAB_SIM_CUDA_INCLUDE,
             "-I", KERNELAB_SIM_CCCL_INCLUDE};
    if (kind == RungBuild::sim_profile) {
      flags.insert(flags.end(), kProfileFlags.begin(), kProfileFlags.end());
      flags.push_back("-Wno-tsan");
    } else {
      flags.push_back("-fsanitize=alignment");
    }
  }
  // Included, so the compiler's messages name the user's file and lines.
  const std::string wrapper = "#define KL_RUNG_ID user\n#include \"" + source.string() + "\"\n";
  std::string key_text = wrapper + read_file(source) + compiler + '\0' + identity("/proc/self/exe");
  for (const std::string& f : flags) key_text += f + '\0';
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a(key_text)));
  const fs::path out = fs::path(cache_dir()) / (std::string("rung-") + key), library = out / "rung.so", depfile = out / "rung.d";
  fs::create_directories(out, ec);
  const BuildLock lock(out);
  if (fresh(library, depfile)) return library.string();
  const std::string pid = std::to_string(getpid());
  const fs::path cpp = out / ("rung." + pid + ".cpp"), object = out / ("rung." + pid + ".o"), tmp_dep = out / ("rung." + pid + ".d"),
                 tmp_lib = out / ("rung." + pid + ".so");
  std::ofstream(cpp, std::ios::binary) << wrapper;
  std::vector<std::string> compile = {compiler};
  compile.insert(compile.end(), flags.begin(), flags.end());
  compile.insert(compile.end(), {"-MMD", "-MF", tmp_dep.string(), "-x", kind == RungBuild::cuda ? "cu" : "c++", "-c", cpp.string(),
                                 "-o", object.string()});
  // Linked without the sanitizer runtimes: their hooks are this kernelab's (src/sim/runtime).
  std::vector<std::string> link = {compiler};
  link.insert(link.end(), link_flags.begin(), link_flags.end());
  link.insert(link.end(), {"-o", tmp_lib.string(), object.string()});
  std::string log;
  int status = spawn(compile, &log);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) status = spawn(link, &log);
  fs::remove(cpp, ec), fs::remove(object, ec);
  if (!log.empty()) std::fputs(log.c_str(), stderr);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fs::remove(tmp_dep, ec), fs::remove(tmp_lib, ec);
    bad_input("--rung " + file + ": does not compile for " + (kind == RungBuild::cuda ? "the GPU" : "the simulator") +
              " (the compiler's messages are above)");
  }
  fs::rename(tmp_dep, depfile, ec);
  fs::rename(tmp_lib, library, ec);
  if (ec) runtime_failure("--rung: cannot store the build in " + out.string() + ": " + ec.message());
  return library.string();
}

int run_program(const RunRequest& r, std::vector<LaunchProfile>* profile) {
  const Build b = build_program(r);
  char findings_path[] = "/tmp/kernelab-sim-findings-XXXXXX";
  const int fd = mkstemp(findings_path);
  if (fd < 0) runtime_failure("sim run: cannot create a temporary file");
  close(fd);
  std::vector<std::string> argv = {b.binary};
  argv.insert(argv.end(), r.args.begin(), r.args.end());
  // The program runs in our process group: a Ctrl-C stops it, and we report what it did.
  struct sigaction ignore{}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int), sigaction(SIGQUIT, &ignore, &old_quit);
  setenv("KERNELAB_SIM_FINDINGS", findings_path, 1);
  if (r.race_check) setenv("KERNELAB_SIM_RACE_CHECK", "1", 1);
  if (!r.device.empty()) setenv("KERNELAB_SIM_DEVICE", r.device.c_str(), 1);
  if (r.verbose) setenv("KERNELAB_SIM_NOTES", "1", 1);  // what the program relies on that CUDA allows
  char profile_path[] = "/tmp/kernelab-sim-profile-XXXXXX";
  if (r.profile) {
    const int pfd = mkstemp(profile_path);
    if (pfd < 0) runtime_failure("sim run: cannot create a temporary file");
    close(pfd);
    setenv("KERNELAB_SIM_PROFILE", profile_path, 1);
    setenv("KERNELAB_SIM_PROFILE_L2_BYTES", std::to_string(r.profile_l2_bytes).c_str(), 1);
    setenv("KERNELAB_SIM_PROFILE_BLOCKS", std::to_string(r.profile_blocks).c_str(), 1);
  }
  if (r.memcheck) {
    setenv("KERNELAB_SIM_MEMCHECK", "1", 1);
    const char* user = std::getenv("ASAN_OPTIONS");  // leaks are not GPU bugs: most programs skip cudaFree at exit
    setenv("ASAN_OPTIONS", (std::string("detect_leaks=0:") + (user ? user : "")).c_str(), 1);
  }
  std::fflush(stdout), std::fflush(stderr);
  const int status = spawn(argv, nullptr, r.program_stdout_to_stderr);
  sigaction(SIGINT, &old_int, nullptr), sigaction(SIGQUIT, &old_quit, nullptr);
  if (r.profile) {
    unsetenv("KERNELAB_SIM_PROFILE");
    std::ifstream in(profile_path);
    LaunchProfile l;
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line); ++lines)
      if (profile && parse_profile_record(line, l)) profile->push_back(l);
    unlink(profile_path);
    if (lines == 0 && !WIFEXITED(status))
      std::fprintf(stderr, "kernelab sim: %s did not exit normally, so it wrote no profile\n", r.file.c_str());
  }
  std::map<std::string, int> found;
  {
    std::ifstream in(findings_path);
    for (std::string line; std::getline(in, line);) ++found[line.substr(0, line.find('\t'))];
  }
  unlink(findings_path);
  int code = 0;
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "kernelab sim: %s was killed by signal %s\n", r.file.c_str(), signal_name(WTERMSIG(status)).c_str());
    code = 128 + WTERMSIG(status);
  } else {
    code = WEXITSTATUS(status);
  }
  if (!found.empty()) {
    std::string list;
    for (const auto& [kind, n] : found) list += (list.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    std::fprintf(stderr, "kernelab sim: %s: the simulator found problems (%s); see the messages above\n", r.file.c_str(),
                 list.c_str());
    if (code == 0) code = 1;
  }
  return code;
}

}  // namespace kl::sim
