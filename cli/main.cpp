// klab: the command-line front end. Each sub-command lives in cli/cmd_<name>.cpp.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/device_fanout.hpp"
#include "harness/error.hpp"
#include "harness/interrupt.hpp"

int main(int argc, char** argv) {
    // Ctrl-C or kill never leaves a temporary file behind; batches and tuning stop at a safe point.
    klab::install_interrupt_handlers();
    CLI::App app{"klab: a lab for image-filter CUDA kernels (verify, tune, benchmark, apply)"};
    app.require_subcommand(1);
    klab::cli::set_command_line(argc, argv);  // `--device all` starts klab again with it
    app.set_version_flag("--version", "klab 0.1.0");
    klab::cli::add_info_command(app);
    klab::cli::add_list_command(app);
    klab::cli::add_apply_command(app);
    klab::cli::add_gen_command(app);
    klab::cli::add_tune_command(app);
    klab::cli::add_run_command(app);
    klab::cli::add_report_command(app);
    klab::cli::add_compare_command(app);
    // CLI11 would only say "A subcommand is required"; name the unknown word and the commands.
    if (argc > 1) {
        const std::string first = argv[1];
        std::string known;
        bool found = false;
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
            found = found || sub->get_name() == first;
            known += (known.empty() ? "" : ", ") + sub->get_name();
        }
        if (first[0] != '-' && !found) {
            fmt::print(stderr, "klab: unknown command '{}'; allowed: {}\n", klab::printable(first), known);
            return 2;
        }
        if (first[0] == '-' && first != "-h" && first != "--help" && first != "--version") {
            fmt::print(stderr, "klab: unknown option '{}' before the command; allowed: --help, --version, or a command first: {}\n",
                       klab::printable(first), known);
            return 2;
        }
    }
    try {
        app.parse(argc, argv);  // sub-command callbacks run inside parse()
    } catch (const CLI::RuntimeError& e) {
        return e.get_exit_code();  // a command's own exit status (klab compare: 1 on a regression)
    } catch (const CLI::ParseError& e) {
        // CLI11 prints the message (or the help) and gives its own error numbers (104 to 109 and
        // more); klab exits 2 on every refused command line, as on any refused input.
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const klab::Error& e) {
        fmt::print(stderr, "klab: {}\n", e.what());
        return 2;
    } catch (const klab::Interrupted& e) {
        // Everything is unwound (threads joined, files closed): end as the signal would have.
        fmt::print(stderr, "klab: {}\n", e.what());
        klab::exit_with_signal(e.signal());
    } catch (const std::exception& e) {
        fmt::print(stderr, "klab: unexpected failure: {}\n", e.what());
        return 3;
    }
    return 0;
}
