// kernelab: one binary, one subcommand per job. Exit codes: 0 success, 1 runtime failure or a
// failed check, 2 bad input (the message names the bad value).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/common.h"
#include "kernelab/error.h"
#include "ops/cpu_isa.h"

int main(int argc, char** argv) {
  CLI::App app{"kernelab: GPU operators as ladders of kernels, checked, timed and explained"};
  app.require_subcommand(1);
  kl::cli::add_list(app);
  kl::cli::add_check(app);
  kl::cli::add_bench(app);
  kl::cli::add_sweep(app);
  kl::cli::add_report(app);
  kl::cli::add_probe(app);
  kl::cli::add_specs(app);
  kl::cli::add_occupancy(app);
  kl::cli::add_roofline(app);
  kl::cli::add_explain(app);
  kl::cli::add_sim(app);
  kl::cli::add_trace(app);
  kl::cli::add_quant(app);
  kl::cli::add_comm(app);
  kl::cli::add_fuse(app);
  // `sim run -std=c++20 -Xcompiler -fopenmp prog.cu` as nvcc takes it: before any `--`.
  std::vector<std::string> args(argv, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      kl::cli::args_after_separator = int(args.size() - i - 1);
      break;
    }
    if (args[i].rfind("-std=", 0) == 0) args[i].insert(0, "-");
    // nvcc's -Xcompiler FLAGS (or -Xcompiler=FLAGS): CLI11 would read "-fopenmp" as options.
    if (args[i] == "-Xcompiler" && i + 1 < args.size()) args[i] = "--Xcompiler=" + args[i + 1], args.erase(args.begin() + long(i) + 1);
    else if (args[i].rfind("-Xcompiler=", 0) == 0) args[i].insert(0, "-");
  }
  std::vector<char*> args_c;
  for (std::string& a : args) args_c.push_back(a.data());
  try {
    kl::cpu::isa();  // a KERNELAB_CPU_ISA this CPU cannot run is refused before any work
    app.parse(int(args_c.size()), args_c.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a subcommand's own non-zero exit (a failed check)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "kernelab: %s\n", e.what());
    return 2;
  } catch (const kl::BadInput& e) {
    std::fprintf(stderr, "kernelab: %s\n", e.what());
    return 2;
  } catch (const kl::RuntimeFailure& e) {
    std::fprintf(stderr, "kernelab: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kernelab: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernelab: %s\n", e.what());
    return 1;
  }
  return 0;
}
