// kernelab: one binary, one subcommand per job. Exit codes: 0 success, 1 runtime failure or a
// failed check, 2 bad input (the message names the bad value).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/common.h"
#include "kernelab/error.h"

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
  try {
    app.parse(argc, argv);
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
