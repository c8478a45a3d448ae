// klab-cache-writer RESULTS_DIR NAME COUNT: stores COUNT tuning records (variants NAME.0, NAME.1,
// ...) into RESULTS_DIR/nvidia-h200/autotune.json, one autotune::store() each, as `klab tune`
// stores after each job. It prints "storing NAME.i" before each store and "stored NAME.i" after,
// and like `klab tune` it stops between stores after SIGINT, SIGTERM or SIGHUP and ends with that
// signal (harness/interrupt.hpp). The fault tests (tests/cpu/test_faults.cpp) run it twice at once
// and interrupt it: `klab tune` itself needs a GPU to produce records.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/problem_class.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/interrupt.hpp"

namespace {

using namespace klab::autotune;

TuningRecord record_named(const std::string& variant) {
    MeasuredCandidate candidate;
    candidate.shape = klab::LaunchShape{32, 8, {}};
    candidate.us = {10.0, 11.0, 12.0};
    candidate.samples = 10;
    candidate.occupancy = {8, 2048, 1.0, ""};
    candidate.kernels = {KernelRecord{"kernel", {32, 0, 0, 1024}, 0}};
    TuningRecord r;
    r.gpu = GpuIdentity{"NVIDIA H200", 9, 0, 132, 13000, 13000};
    r.variant = variant;
    r.source_hash = "0123456789abcdef";
    r.problem_class = parse_problem_class("HD/3x3/c3/aos");
    r.problem = "convolve 1920x1080x3 aos, gauss3 (3x3), replicate";
    r.top = {candidate};
    r.best_relaxed = candidate;
    r.kernels_seen = candidate.kernels;
    r.candidates_measured = 1;
    r.tuned_at = "2000-01-01T00:00:00Z";
    r.klab_version = "klab-cache-writer";
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: klab-cache-writer RESULTS_DIR NAME COUNT\n");
        return 2;
    }
    klab::install_interrupt_handlers();
    const std::string results = argv[1];
    const std::string name = argv[2];
    const int count = std::stoi(argv[3]);
    try {
        const klab::GracefulStop graceful;
        for (int i = 0; i < count; ++i) {
            klab::throw_if_interrupted(fmt::format("{} record(s) stored", i));
            const std::string variant = fmt::format("{}.{}", name, i);
            fmt::print("storing {}\n", variant);
            std::fflush(stdout);
            std::vector<std::string> warnings;
            store(results, {record_named(variant)}, warnings);
            for (const std::string& w : warnings) fmt::print(stderr, "klab-cache-writer: warning: {}\n", w);
            fmt::print("stored {}\n", variant);
            std::fflush(stdout);
        }
    } catch (const klab::Interrupted& e) {
        fmt::print(stderr, "klab-cache-writer: {}\n", e.what());
        klab::exit_with_signal(e.signal());
    } catch (const std::exception& e) {
        fmt::print(stderr, "klab-cache-writer: {}\n", e.what());
        return 2;
    }
    return 0;
}
