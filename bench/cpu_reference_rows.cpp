// klab-bench's CPU reference (bench/runner.hpp): the sequential reference's time for the GPU rows'
// speedup column (the seeds' figure), and the CPU rows that machines without a GPU benchmark.
#include <map>
#include <vector>

#include <fmt/format.h>

#include "autotune/timing.hpp"
#include "bench/runner.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"

namespace klab::bench::runner {

namespace {

// The sequential CPU reference is timed on an image of at most this many pixels (720p) and
// scaled by pixel count: at 8K with a 9x9 mask it would take tens of seconds per problem.
constexpr int kCpuReferenceWidth = 1280;
constexpr int kCpuReferenceHeight = 720;

}  // namespace

std::string cpu_reference_method() {
    return fmt::format("sequential CPU reference (1 thread), timed on the problem itself up to {}x{} pixels, on {}x{} for "
                       "larger problems and scaled by pixel count (an integral image is timed on its u32 path there); median of up to 5 runs",
                       kCpuReferenceWidth, kCpuReferenceHeight, kCpuReferenceWidth, kCpuReferenceHeight);
}

void run_reference(const Problem& problem, const ImageU8& input, int threads) {
    switch (problem.op) {
        case Operation::convolve: benchmark::DoNotOptimize(reference::convolve(input, *problem.mask, problem.border, threads)); break;
        case Operation::sobel: benchmark::DoNotOptimize(reference::sobel(input, problem.border, threads)); break;
        case Operation::integral:
            if (reference::integral_type(input.width(), input.height()) == reference::IntegralType::u64) {
                benchmark::DoNotOptimize(reference::integral<std::uint64_t>(input, threads));
            } else {
                benchmark::DoNotOptimize(reference::integral<std::uint32_t>(input, threads));
            }
            break;
    }
}

double cpu_reference_us(const Problem& problem) {
    static std::map<std::string, double> us_per_pixel;
    Problem timed = problem;
    if (problem.shape.pixels() > static_cast<std::size_t>(kCpuReferenceWidth) * kCpuReferenceHeight) {
        timed.shape.width = kCpuReferenceWidth;
        timed.shape.height = kCpuReferenceHeight;
    }
    const std::string key = to_string(timed);
    auto it = us_per_pixel.find(key);
    if (it == us_per_pixel.end()) {
        ImageU8 input = synth::generate(synth::Pattern::natural, timed.shape.width, timed.shape.height, timed.shape.channels, 1);
        if (timed.shape.layout != Layout::aos) input = reference::to_layout(input, timed.shape.layout);
        std::vector<double> runs;
        const auto began = Clock::now();
        while (runs.size() < 5 && (runs.empty() || seconds_since(began) < 0.5)) {
            const auto start = Clock::now();
            run_reference(timed, input, 1);
            runs.push_back(seconds_since(start) * 1e6);
        }
        it = us_per_pixel.emplace(key, autotune::quantile(runs, 0.5) / static_cast<double>(timed.shape.pixels())).first;
    }
    return it->second * static_cast<double>(problem.shape.pixels());
}

void run_cpu_row(benchmark::State& state, const BenchCase& c) {
    static std::map<std::string, ImageU8> inputs;
    ImageU8& input = inputs[to_string(c.problem)];
    if (input.empty()) {
        input = synth::generate(synth::Pattern::natural, c.problem.shape.width, c.problem.shape.height, c.problem.shape.channels, 1);
    }
    const int threads = c.kind == RowKind::cpu_sequential ? 1 : resolve_threads(0);
    for (auto _ : state) run_reference(c.problem, input, threads);
    set_counter(state, "bytes_read", minimum_traffic(c.problem).bytes_read);
    set_counter(state, "bytes_written", minimum_traffic(c.problem).bytes_written);
    state.counters["pixels_per_second"] =
        benchmark::Counter(static_cast<double>(c.problem.shape.pixels()) * static_cast<double>(state.iterations()),
                           benchmark::Counter::kIsRate);
    state.SetLabel(fmt::format("reference::{} on {} thread(s)", to_string(c.problem.op), threads));
}

}  // namespace klab::bench::runner
