#pragma once
// Each `klab` sub-command lives in its own cli/cmd_<name>.cpp and adds itself to the app here.
#include <CLI/CLI.hpp>

namespace klab::cli {

void add_info_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_apply_command(CLI::App& app);
void add_gen_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_compare_command(CLI::App& app);

}  // namespace klab::cli
