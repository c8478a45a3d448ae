#pragma once
// What klab-bench's row kinds share (bench/benchmarks.hpp runs them): the run's settings, the
// counters and error rows every kind writes, and each kind's timing function. The kinds live in
// files of their own: gpu_rows.cpp (klab variants, NPP and copy rows on device-resident data,
// timed by CUDA events; their GPU state in gpu_session.*), end_to_end_rows.cpp (host image to
// host image, timed by the host's clock) and cpu_reference_rows.cpp (the CPU reference, and its
// time for the GPU rows' speedup column). Internal to klab_bench.
#include <chrono>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "bench/study.hpp"
#include "harness/image.hpp"
#include "harness/problem.hpp"

namespace klab::bench::runner {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Settings {
    Study study = Study::full;
    std::string results = "results";  // where the tuning cache is read
    bool min_time_given = false;      // --benchmark_min_time on the command line
    double ffma_per_second = 0;       // measured once per run on the GPU (bench/fma_rate.hpp)
};
Settings& settings();

// Sets a counter only when it is finite and not zero: Google Benchmark writes NaN and infinity as
// bare words, which no JSON reader accepts, and its coefficient-of-variation row of a counter that
// is 0 in every repetition is 0/0 (the upload row's bytes written made bench.json unreadable).
void set_counter(benchmark::State& state, const char* name, double value);

// Rows that ended in an error (a failed verification, a refused problem, a CUDA error), for the
// exit code: Google Benchmark itself exits 0 after error rows.
std::map<std::string, std::string>& failed_rows();
void fail_row(benchmark::State& state, const std::string& name, const std::string& message);

// After a failed row: a sticky error means nothing more can run on the device in this process;
// every later GPU row then fails at once with that message.
void note_if_context_lost(const std::string& row);
// Runs a GPU row's timing function so that a row that throws (a CUDA error while timing, an
// allocation) ends as an error row, never as a crash that would leave a truncated JSON file.
void run_guarded(benchmark::State& state, const BenchCase& c, void (*time_row)(benchmark::State&, const BenchCase&));

// The CPU reference (cpu_reference_rows.cpp).
std::string cpu_reference_method();  // how cpu_reference_us() measures, for the JSON's context
void run_reference(const Problem& problem, const ImageU8& input, int threads);
// The sequential CPU reference's time for `problem` (the seeds' speedup column), measured once per
// operation, mask, channels, layout and border, on an image of at most 720p, scaled by pixels.
double cpu_reference_us(const Problem& problem);
void run_cpu_row(benchmark::State& state, const BenchCase& c);  // machines without a GPU

// GPU rows on device-resident data (gpu_rows.cpp), and the release of their GPU state, the
// session (gpu_session.cpp).
void time_gpu_row(benchmark::State& state, const BenchCase& c);
void release_gpu_rows();

// End-to-end rows (end_to_end_rows.cpp), and the release of their buffers.
void time_end_to_end_row(benchmark::State& state, const BenchCase& c);
void release_end_to_end_rows();

}  // namespace klab::bench::runner
