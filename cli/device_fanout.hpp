#pragma once
// `klab run --device all` and `klab tune --device all`: one klab process per device, all at once,
// each started with the same command line but `--device N` (so every option passes through
// unchanged, and each process has one CUDA device, as with `--device N` by hand). Their output
// lines are printed as they come, prefixed with "[gpu N slug] "; then one summary line each.
//
// Which devices work (per GPU model, that is per slug, the results/<slug>/ folder):
// - klab run: one study per model, on its lowest-index device; the model's other devices stay
//   idle. A study's repetitions must come from one device (the gate compares their spread), and
//   results/<slug>/bench.json holds one study. docs/multi-gpu.md says why in full.
// - klab tune: every device; devices of one model share that model's classes (`--class-share K/N`),
//   since a record of one is a record of the other (the same GPU identity), and write one cache
//   under its lock (autotune/tuning_cache.hpp).
#include <string>
#include <utility>
#include <vector>

#include "harness/device_info.hpp"

namespace klab::cli {

// The command line klab was started with; main() records it for the child processes.
void set_command_line(int argc, char** argv);
const std::vector<std::string>& command_line();

// `args` with option `name` (e.g. "--device") set to `value`: its value replaced where it is given
// ("--device all" or "--device=all"), else `name value` appended at the end.
std::vector<std::string> with_option(std::vector<std::string> args, const std::string& name, const std::string& value);

// One device's part of a `--device all` run: share K of N of its model's classes (tune), 1 of 1 for a study.
struct DeviceShare {
    DeviceInfo device;
    std::string slug;
    int share = 1;
    int shares = 1;
};

struct StudyPlan {
    std::vector<DeviceShare> studies;  // one per GPU model, its lowest-index device
    std::vector<std::string> idle;     // a line for each device left idle, saying why
};

// `devices` as query_devices() lists them (in index order).
StudyPlan plan_studies(const std::vector<DeviceInfo>& devices);
std::vector<DeviceShare> plan_tuning(const std::vector<DeviceInfo>& devices);

// "1/2" -> share 1 of 2; throws klab::Error unless 1 <= K <= N.
std::pair<int, int> parse_class_share(const std::string& text);

struct ChildProcess {
    std::string label;              // the prefix of its output lines, e.g. "gpu 1 nvidia-h200"
    std::vector<std::string> argv;  // argv[0] is the program's path
};

struct ChildResult {
    int exit_code = -1;        // -1: it could not be started, or did not exit normally (a signal)
    std::string how;           // "exit 0", "killed by signal 9", "could not be started: ..."
    double seconds = 0.0;
};

// Starts every child at once (stdout and stderr into one pipe each), prints their lines on stdout
// as they come, each prefixed with "[label] ", and waits for all of them. Each child runs in a
// process group of its own and receives every SIGINT, SIGTERM and SIGHUP klab does
// (harness/interrupt.hpp): a terminal's Ctrl-C reaches it once, through klab.
std::vector<ChildResult> run_children(const std::vector<ChildProcess>& children);

// This executable's path (/proc/self/exe), for starting klab again.
std::string own_executable();

struct DeviceJob {
    DeviceShare share;
    std::vector<std::pair<std::string, std::string>> options;  // set on its command line besides --device N
    std::string result;  // what it leaves when it succeeds, for the summary ("results in results/nvidia-h200")
};

// `klab ... --device all`: one child per job, `program` (this executable: own_executable()) started
// with klab's command line, `--device N` and the job's options; then a summary line per job.
// Returns one line per job that failed ("gpu 1 nvidia-l4: exit 2"), empty when all succeeded.
// After a signal (passed on to the children, which stop as klab tune and klab run do) it prints
// the summary, then throws klab::Interrupted.
std::vector<std::string> run_per_device(const std::vector<DeviceJob>& jobs, const std::string& program);

}  // namespace klab::cli
