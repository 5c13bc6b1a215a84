// Pieces the subcommands share: the shape options of every op, backend selection, tables.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernelab/device.h"
#include "kernelab/harness.h"
#include "kernelab/op.h"

namespace kl::cli {

// How many command-line arguments follow the first `--` (main sets it): `sim run a.cu b.cpp --
// x` tells the program's sources from its arguments by it.
extern int args_after_separator;

// The union of all ops' dimension and option flags on one subcommand; problem() keeps the
// ones given and refuses those the chosen op does not have.
class ProblemFlags {
 public:
  void attach(CLI::App& app);
  Problem problem(const Op& op) const;  // BadInput for a flag the op lacks
  DType dtype(const Op& op) const;      // --dtype, else the op's first dtype
  std::map<std::string, int64_t> given_dims(const Op& op) const;
  std::map<std::string, std::string> given_opts(const Op& op) const;
  std::map<std::string, DType> given_tensor_dtypes() const;  // --tensor-dtype NAME=DTYPE,...
  bool any_given(const Op& op) const;  // a shape, option or dtype flag was given
  std::string dtype_flag;
  std::vector<std::string> tensor_dtype_flags;

 private:
  std::map<std::string, int64_t> dims_;
  std::map<std::string, std::string> opts_;
  CLI::App* app_ = nullptr;
};

std::string flag_name(const std::string& name);  // "a_layout" -> "--a-layout"

// Backends to run: --backend B, else every backend this build knows.
std::vector<Backend> wanted_backends(const std::string& flag);

// Variants of op on backend b that the user asked for (--variant, comma separated); BadInput
// naming an unknown variant.
std::vector<const Variant*> chosen_variants(const Op& op, const std::vector<std::string>& names);
// The configs of v to run: those named (--config, comma separated; BadInput naming one v lacks,
// unless another chosen variant has it), else all of them, or only the first when `first_only`.
std::vector<const Config*> chosen_configs(const Variant& v, const std::vector<std::string>& names, bool first_only);
// BadInput for a --config name that none of the variants has.
void check_config_names(const Op& op, const std::vector<const Variant*>& variants, const std::vector<std::string>& names);

// --rung FILE.cu (check, bench, sweep, sim profile): the file's rungs built for the simulator, its
// profiling build and the GPU, as asked (sim/run/driver.h), loaded into this process and added to
// the ladder of the op they declare. Returns that op and the rungs' names; BadInput when `op_name`
// is given and the file declares another op.
struct LoadedRungs {
  const Op* op = nullptr;
  std::vector<std::string> names;
};
struct RungBuilds {
  bool sim = false, sim_profile = false, gpu = false;
};
LoadedRungs load_rung_file(const std::string& file, const std::string& op_name, RungBuilds builds);

std::string format_seconds(double s);
std::string format_ratio(const std::optional<double>& r);

// Prints rows as an aligned text table.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

void add_check(CLI::App& app);
void add_list(CLI::App& app);
void add_bench(CLI::App& app);
void add_sweep(CLI::App& app);
void add_report(CLI::App& app);
void add_probe(CLI::App& app);
void add_specs(CLI::App& app);
void add_occupancy(CLI::App& app);
void add_roofline(CLI::App& app);
void add_explain(CLI::App& app);
void add_sim(CLI::App& app);
void add_trace(CLI::App& app);
void add_quant(CLI::App& app);
void add_comm(CLI::App& app);
void add_fuse(CLI::App& app);

}  // namespace kl::cli
