// klab report: placeholder while it is being written.
#include "cli/commands.hpp"

namespace klab::cli {

void add_report_command(CLI::App& app) { app.add_subcommand("report", "(not written yet)"); }

}  // namespace klab::cli
