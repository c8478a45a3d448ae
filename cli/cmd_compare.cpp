// klab compare: placeholder while it is being written.
#include "cli/commands.hpp"

namespace klab::cli {

void add_compare_command(CLI::App& app) { app.add_subcommand("compare", "(not written yet)"); }

}  // namespace klab::cli
