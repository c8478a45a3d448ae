// klab list: the registered kernel variants and what each supports.
#include <fmt/format.h>

#include "cli/commands.hpp"

namespace klab::cli {

void add_list_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("list", "List the registered kernel variants and what each supports");
    cmd->callback([] {
        // The variant registry arrives with the first GPU variants; until then there is nothing to list.
        fmt::print("no variants are registered in this build (each kernels/<op>_<technique>.cu registers one; "
                   "see README.md, \"Adding a variant\")\n");
    });
}

}  // namespace klab::cli
