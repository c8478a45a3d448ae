#pragma once
// Each `klab` sub-command lives in its own cli/cmd_<name>.cpp and adds itself to the app here.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "autotune/problem_class.hpp"

namespace klab::cli {

void add_info_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_apply_command(CLI::App& app);
void add_gen_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_compare_command(CLI::App& app);

// Timings from a build that synchronises after every launch or carries device debug code (the
// debug preset) would be stored as if they were real: `klab tune` and `klab run` refuse them.
void require_timing_build(const std::string& command);

// klab tune --missing-only on these classes (klab run's first step); throws klab::Error when a
// job fails, after tuning the others.
void tune_missing_classes(const std::vector<autotune::ProblemClass>& classes, const std::string& results);

}  // namespace klab::cli
