#include "bench/benchmarks.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "autotune/device_compare.hpp"
#include "autotune/occupancy.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/search_space.hpp"
#include "autotune/timing.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "bench/bench_json.hpp"
#include "bench/fma_rate.hpp"
#include "bench/npp_baselines.hpp"
#include "bench/study.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/synth.hpp"
#include "harness/verify.hpp"
#include "harness/version.hpp"

namespace klab::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
    Study study = Study::full;
    std::string results = "results";  // where the tuning cache is read
    bool min_time_given = false;      // --benchmark_min_time on the command line
    double ffma_per_second = 0;       // measured once per run on the GPU (bench/fma_rate.hpp)
};

// Each repetition runs for at least this much event time unless --benchmark_min_time says
// otherwise: with the L2 flushed before every sample, enough for tens of samples of an 8K filter.
constexpr double kMinTimeSeconds = 0.02;
constexpr double kSmokeMinTimeSeconds = 0.001;
// The sequential CPU reference is timed on an image of at most this many pixels (720p) and
// scaled by pixel count: at 8K with a 9x9 mask it would take tens of seconds per problem.
constexpr int kCpuReferenceWidth = 1280;
constexpr int kCpuReferenceHeight = 720;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// ---------------------------------------------------------------------------------------------
// The sequential CPU reference's time for a problem (the seeds' speedup column), measured once
// per operation, mask, channels, layout and border, on an image of at most 720p, scaled by pixels.

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

// ---------------------------------------------------------------------------------------------
// Device memory of one problem, shared by its rows (they run one after another): the input, the
// output, and, for the rows that verify, the CPU reference on the host and on the device.

struct Workspace {
    Problem problem;
    int generation = 0;  // rows remember which workspace their plans point into
    ImageU8 input_host;  // in the problem's layout
    DeviceImage<std::uint8_t> input;
    std::unique_ptr<DeviceMask> mask;
    reference::IntegralType integral = reference::IntegralType::u32;
    DeviceImage<std::uint8_t> out8;  // convolve, sobel
    DeviceImage<std::uint32_t> out32;
    DeviceImage<std::uint64_t> out64;
    // The reference, computed on first need (copy and NPP rows do not verify).
    bool have_reference = false;
    ImageU8 reference8;
    HostImage<std::uint32_t> reference32;
    HostImage<std::uint64_t> reference64;
    DeviceImage<std::uint8_t> reference8_device;

    Workspace(const Problem& p, int gen) : problem(p), generation(gen) {
        input_host = synth::generate(synth::Pattern::natural, p.shape.width, p.shape.height, p.shape.channels, 1, 0);
        if (p.shape.layout != Layout::aos) input_host = reference::to_layout(input_host, p.shape.layout);
        input = DeviceImage<std::uint8_t>(input_host);
        if (p.mask) mask = std::make_unique<DeviceMask>(*p.mask);
        const ImageShape out_shape = output_shape(p);
        if (p.op == Operation::integral) {
            integral = reference::integral_type(p.shape.width, p.shape.height);
            if (integral == reference::IntegralType::u64) {
                out64 = DeviceImage<std::uint64_t>(out_shape);
            } else {
                out32 = DeviceImage<std::uint32_t>(out_shape);
            }
        } else {
            out8 = DeviceImage<std::uint8_t>(out_shape);
        }
    }

    DeviceBuffers buffers() {
        DeviceBuffers b;
        b.input = device_buffer(input);
        if (problem.op != Operation::integral) {
            b.output = device_buffer(out8);
        } else if (integral == reference::IntegralType::u64) {
            b.output = device_buffer(out64);
        } else {
            b.output = device_buffer(out32);
        }
        if (mask) b.mask = mask->view();
        return b;
    }

    void compute_reference() {
        if (have_reference) return;
        std::fprintf(stderr, "klab-bench: CPU reference of %s (all threads) to verify against...\n", to_string(problem).c_str());
        switch (problem.op) {
            case Operation::convolve: reference8 = reference::convolve(input_host, *problem.mask, problem.border, 0); break;
            case Operation::sobel: reference8 = reference::sobel(input_host, problem.border, 0); break;
            case Operation::integral:
                if (integral == reference::IntegralType::u64) {
                    reference64 = reference::integral<std::uint64_t>(input_host, 0);
                } else {
                    reference32 = reference::integral<std::uint32_t>(input_host, 0);
                }
                break;
        }
        if (problem.op != Operation::integral) reference8_device = DeviceImage<std::uint8_t>(reference8);
        have_reference = true;
    }

    // Fills the output with the reference's complement, so that a pixel the variant never
    // writes differs from the reference.
    void poison_output() {
        if (problem.op != Operation::integral) {
            out8.upload(complement(reference8));
        } else if (integral == reference::IntegralType::u64) {
            out64.upload(complement(reference64));
        } else {
            out32.upload(complement(reference32));
        }
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
    }

    // The output of the run just made against the reference (DESIGN.md's numeric contract).
    Verification verify_output(const Variant& variant) {
        if (problem.op == Operation::integral) {
            return integral == reference::IntegralType::u64 ? verify_exact(reference64, out64.download())
                                                            : verify_exact(reference32, out32.download());
        }
        // The device compares bytes first; only where they differ does the host apply the rule.
        if (autotune::count_differences(device_buffer(out8), device_buffer(reference8_device)) == 0) {
            Verification v;
            v.compared = reference8.shape().pixels() * static_cast<std::size_t>(reference8.channels());
            return v;
        }
        if (problem.op == Operation::sobel) return verify_exact(reference8, out8.download());
        return verify_convolution(input_host, *problem.mask, problem.border, reference8, out8.download(),
                                  variant.coefficient_error(problem));
    }
};

// Two device buffers of `bytes` each, for the copy rows and the copy floor.
class CopyPair {
public:
    explicit CopyPair(std::size_t bytes) : bytes_(bytes) {
        KLAB_CUDA_CHECK(cudaMalloc(&source_, bytes));
        KLAB_CUDA_CHECK(cudaMalloc(&destination_, bytes));
        KLAB_CUDA_CHECK(cudaMemset(source_, 0x5A, bytes));
    }
    ~CopyPair() {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(source_));
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(destination_));
    }
    CopyPair(const CopyPair&) = delete;
    CopyPair& operator=(const CopyPair&) = delete;
    void enqueue(cudaStream_t stream) const {
        KLAB_CUDA_CHECK(cudaMemcpyAsync(destination_, source_, bytes_, cudaMemcpyDeviceToDevice, stream));
    }

private:
    void* source_ = nullptr;
    void* destination_ = nullptr;
    std::size_t bytes_;
};

// What a row keeps between Google Benchmark's calls of it (it calls a benchmark several times:
// to choose the iteration count, then once per repetition).
struct RowState {
    int generation = -1;
    std::string error;  // set: the row fails with this message every time
    std::string label;
    std::function<void(cudaStream_t)> work;
    Traffic traffic;
    double pixels = 0;
    std::optional<LaunchShape> shape;
    double occupancy_pct = 0;
    double cpu_us = 0;
    // Owned resources the work points into.
    std::optional<LaunchPlan> plan;
    std::unique_ptr<NppBaseline> npp;
    std::unique_ptr<CopyPair> copy;
};

// The process's GPU state: one stream, the L2 flusher, the tuning cache, the current workspace.
class Session {
public:
    explicit Session(const std::string& results_dir) : gpu_(autotune::current_gpu_identity()) {
        flusher_ = std::make_unique<autotune::L2Flusher>();
        std::vector<std::string> warnings;
        cache_ = autotune::TuningCache::load_directory(results_dir, warnings);
        for (const std::string& w : warnings) std::fprintf(stderr, "klab-bench: warning: %s\n", w.c_str());
    }
    cudaStream_t stream() const { return stream_.get(); }
    autotune::L2Flusher& flusher() { return *flusher_; }

    Workspace& workspace(const Problem& problem) {
        if (!workspace_ || to_string(workspace_->problem) != to_string(problem)) {
            workspace_.reset();  // free the previous problem's memory first
            // The rows of earlier problems are done (Google Benchmark runs a benchmark's calls
            // back to back): their plans, NPP buffers and copy buffers go now, not at the end of
            // the run, so that the study's device memory stays that of one problem. A row called
            // again is set up again; a failed row keeps its error.
            for (auto& [name, row] : rows_) {
                if (row.error.empty()) row = RowState{};
            }
            workspace_ = std::make_unique<Workspace>(problem, ++generation_);
        }
        return *workspace_;
    }

    // A device-to-device copy of `bytes`, timed like the rows (L2 flushed, events): the floor
    // any kernel moving 2 x `bytes` is measured against. Mean of at least 50 samples.
    double copy_floor_us(std::size_t bytes) {
        auto it = copy_floors_.find(bytes);
        if (it == copy_floors_.end()) {
            const CopyPair pair(bytes);
            autotune::TimingOptions options;
            options.min_samples = 50;
            options.budget_seconds = 0.1;
            options.target_spread = 0.0;  // always the full sample count
            const autotune::Timing t =
                autotune::measure([&pair](cudaStream_t s) { pair.enqueue(s); }, *flusher_, stream_.get(), options);
            // The mean, as Google Benchmark reports each repetition of the rows it is compared with.
            double sum = 0;
            for (double us : t.samples_us) sum += us;
            it = copy_floors_.emplace(bytes, sum / static_cast<double>(t.samples_us.size())).first;
        }
        return it->second;
    }

    // Where the row's shape comes from: forced, the tuning cache (re-verified), or the default. Every
    // operation is tuned (convolutions, Sobel, integral images: autotune/problem_class.hpp).
    std::pair<LaunchShape, std::string> shape_for(const BenchCase& c) {
        if (c.forced_shape) return {*c.forced_shape, fmt::format("{} forced (block-shape study)", to_string(*c.forced_shape))};
        const autotune::Lookup found =
            autotune::lookup(cache_, *c.variant, autotune::source_hash(*c.variant), c.problem, gpu_);
        if (found.level == autotune::LookupLevel::variant_default) {
            if (found.explanation.find("another source") != std::string::npos) {
                std::fprintf(stderr, "klab-bench: %s: %s\n", c.name().c_str(), found.explanation.c_str());
            }
            return {found.shape, fmt::format("{} default (no tuning record)", to_string(found.shape))};
        }
        const Verification check = autotune::verify_shape_once(*c.variant, c.problem, found.shape);
        if (!check.ok()) {
            std::fprintf(stderr, "klab-bench: %s: the cached block %s fails verification (%s); using the default\n",
                         c.name().c_str(), to_string(found.shape).c_str(), check.summary().c_str());
            const LaunchShape fallback = c.variant->default_shape(c.problem);
            return {fallback, fmt::format("{} default (the cached shape failed verification)", to_string(fallback))};
        }
        return {found.shape, fmt::format("{} tuned ({}: {})", to_string(found.shape), to_string(found.level),
                                         autotune::to_string(found.record->problem_class))};
    }

    std::map<std::string, RowState>& rows() { return rows_; }

private:
    autotune::GpuIdentity gpu_;
    CudaStream stream_;  // declared first, so destroyed last: after the work that ran on it
    std::unique_ptr<autotune::L2Flusher> flusher_;
    autotune::TuningCache cache_;
    std::unique_ptr<Workspace> workspace_;
    int generation_ = 0;
    std::map<std::size_t, double> copy_floors_;
    std::map<std::string, RowState> rows_;
};

// Sets a counter only when it is finite and not zero: Google Benchmark writes NaN and infinity as
// bare words, which no JSON reader accepts, and its coefficient-of-variation row of a counter that
// is 0 in every repetition is 0/0 (the upload row's bytes written made bench.json unreadable).
void set_counter(benchmark::State& state, const char* name, double value) {
    if (std::isfinite(value) && value != 0.0) state.counters[name] = value;
}

// Rows that ended in an error (a failed verification, a refused problem, a CUDA error), for the
// exit code: Google Benchmark itself exits 0 after error rows.
std::map<std::string, std::string>& failed_rows() {
    static std::map<std::string, std::string> failed;
    return failed;
}

void fail_row(benchmark::State& state, const std::string& name, const std::string& message) {
    failed_rows().emplace(name, message);
    state.SkipWithError(message.c_str());
}

Settings& settings() {
    static Settings s;
    return s;
}

// Created by the first GPU row; destroyed at the end of bench_main(), while CUDA is still up.
std::unique_ptr<Session>& session_slot() {
    static std::unique_ptr<Session> slot;
    return slot;
}

Session& session() {
    if (!session_slot()) session_slot() = std::make_unique<Session>(settings().results);
    return *session_slot();
}

// Builds a row's state: its launch (verified first, for a klab variant), its label and counters.
void set_up_row(const BenchCase& c, RowState& row) {
    Session& s = session();
    Workspace& w = s.workspace(c.problem);
    row = RowState{};
    row.generation = w.generation;
    row.pixels = static_cast<double>(c.problem.shape.pixels());
    switch (c.kind) {
        case RowKind::variant: {
            auto [shape, label] = s.shape_for(c);
            row.plan = prepare(*c.variant, c.problem, w.buffers(), shape);
            const autotune::Candidate candidate =
                autotune::evaluate_shape(*c.variant, c.problem, shape, autotune::kAnyOccupancy, autotune::device_oracle());
            if (candidate.occupancy) row.occupancy_pct = 100.0 * candidate.occupancy->fraction;
            row.shape = shape;
            // Verified on this very problem before any timing: a wrong result is an error row.
            w.compute_reference();
            w.poison_output();
            launch(*row.plan, s.stream());
            KLAB_CUDA_CHECK(cudaStreamSynchronize(s.stream()));
            const Verification v = w.verify_output(*c.variant);
            if (!v.ok()) throw Error(fmt::format("{} differs from the CPU reference: {}", c.name(), v.summary()), "a verified result");
            const LaunchPlan* plan = &*row.plan;
            row.work = [plan](cudaStream_t stream) { launch(*plan, stream); };
            row.traffic = minimum_traffic(c.problem);
            row.label = label;
            row.cpu_us = cpu_reference_us(c.problem);
            break;
        }
        case RowKind::copy: {
            const double bytes = static_cast<double>(c.problem.shape.pixels()) * c.problem.shape.channels;
            row.copy = std::make_unique<CopyPair>(static_cast<std::size_t>(bytes));
            const CopyPair* pair = row.copy.get();
            row.work = [pair](cudaStream_t stream) { pair->enqueue(stream); };
            row.traffic = {bytes, bytes};
            row.label = "cudaMemcpyAsync device to device";
            break;
        }
        case RowKind::npp: {
            row.npp = make_npp_baseline(c.row, c.problem, w.buffers().input);
            NppBaseline* npp = row.npp.get();
            row.work = [npp](cudaStream_t stream) { npp->enqueue(stream); };
            row.traffic = npp->traffic();
            row.label = npp->call() + (c.row == "npp.gauss" ? " (NPP's own Gaussian coefficients)" : "");
            row.cpu_us = c.problem.op == Operation::sobel ? 0.0 : cpu_reference_us(c.problem);
            break;
        }
        case RowKind::cpu_sequential:
        case RowKind::cpu_parallel:
        case RowKind::end_to_end: break;  // timed by their own functions
    }
    // The GPU's clocks ramp down while the CPU works: bring them up before the first sample.
    autotune::warm_up(row.work, s.stream(), 0.05);
}

// Set once a row leaves the CUDA context unusable (a kernel fault): every later GPU row fails at
// once with this message instead of computing its reference for nothing.
std::string& context_lost() {
    static std::string message;
    return message;
}

// After a failed row: a sticky error means nothing more can run on the device in this process.
void note_if_context_lost(const std::string& row) {
    const std::string sticky = sticky_cuda_error();
    if (!sticky.empty() && context_lost().empty()) {
        context_lost() = fmt::format("the CUDA context was lost at {} ({}); no later GPU row can run in this process", row, sticky);
    }
}

void time_gpu_row(benchmark::State& state, const BenchCase& c) {
    RowState* row = nullptr;
    try {
        Session& s = session();
        row = &s.rows()[c.name()];
        const bool stale = row->generation != -1 && row->error.empty() && row->generation != s.workspace(c.problem).generation;
        if (row->generation == -1 || stale) set_up_row(c, *row);
    } catch (const Error& e) {
        note_if_context_lost(c.name());
        if (row == nullptr) throw;
        row->generation = 0;
        row->error = e.what();
    }
    if (!row->error.empty()) {
        fail_row(state, c.name(), row->error);
        return;
    }
    Session& s = session();
    const CudaEvent start;
    const CudaEvent stop;
    double total_us = 0;
    for (auto _ : state) {
        const double us = autotune::cold_sample(row->work, s.flusher(), s.stream(), start, stop);
        state.SetIterationTime(us * 1e-6);
        total_us += us;
    }
    const double mean_us = total_us / static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
    const double floor_us = s.copy_floor_us(static_cast<std::size_t>(row->traffic.total() / 2));
    set_counter(state, "bytes_read", row->traffic.bytes_read);
    set_counter(state, "bytes_written", row->traffic.bytes_written);
    set_counter(state, "bytes_per_second", row->traffic.total() / (mean_us * 1e-6));
    set_counter(state, "pixels_per_second", row->pixels / (mean_us * 1e-6));
    set_counter(state, "copy_floor_us", floor_us);
    set_counter(state, "pct_copy_floor", 100.0 * floor_us / mean_us);
    // The roofline: the larger of the copy floor and the FMA floor (the problem's least FMAs at
    // the GPU's measured FFMA rate; none for the integer operations).
    const double fma_floor_us = settings().ffma_per_second > 0
                                    ? fma_per_output_element(c.problem) * row->pixels * c.problem.shape.channels /
                                          settings().ffma_per_second * 1e6
                                    : 0.0;
    const double roofline_us = std::max(floor_us, fma_floor_us);
    set_counter(state, "fma_floor_us", fma_floor_us);
    set_counter(state, "roofline_us", roofline_us);
    set_counter(state, "pct_roofline", 100.0 * roofline_us / mean_us);
    if (row->shape) {
        set_counter(state, "block_x", row->shape->block_x);
        set_counter(state, "block_y", row->shape->block_y);
        set_counter(state, "occupancy_pct", row->occupancy_pct);
    }
    if (row->cpu_us > 0) {
        set_counter(state, "cpu_reference_us", row->cpu_us);
        set_counter(state, "speedup_vs_cpu", row->cpu_us / mean_us);
    }
    state.SetLabel(row->label);
}

// Runs a GPU row's timing function so that a row that throws (a CUDA error while timing, an
// allocation) ends as an error row, never as a crash that would leave a truncated JSON file.
void run_guarded(benchmark::State& state, const BenchCase& c, void (*time_row)(benchmark::State&, const BenchCase&)) {
    if (!context_lost().empty()) {
        fail_row(state, c.name(), context_lost());
        return;
    }
    try {
        time_row(state, c);
    } catch (const std::exception& e) {
        note_if_context_lost(c.name());
        fail_row(state, c.name(), e.what());
    }
}

// ---------------------------------------------------------------------------------------------
// End-to-end rows: host image to host image through harness/strip_pipeline.hpp, timed by the
// host's clock around the whole call (several streams run at once: no single pair of events
// brackets it). "Pinned" rows register their host images once, outside the timing, as a batch
// tool would; ".pageable" rows leave them pageable. The link rows are the floors, from pinned
// memory, filtering nothing: the image's bytes up alone (e2e.upload), down alone (e2e.download),
// and both at once, one whole-image copy each way on two streams (e2e.bidirectional: what the link
// carries both ways; the pipeline's interleaved strips have come out ahead of it on some machines).

enum class LinkCopy { none, upload, download, both };

struct EndToEnd {
    ImageU8 input;
    ImageU8 output;
    std::vector<void*> registered;  // host memory pinned for the row, unpinned with it
    std::unique_ptr<StripPipeline> pipeline;
    LinkCopy link = LinkCopy::none;
    std::unique_ptr<DeviceImage<std::uint8_t>> device_input;   // the link rows' device images
    std::unique_ptr<DeviceImage<std::uint8_t>> device_output;
    std::unique_ptr<CudaStream> up, down;
    bool pin = false;
    std::string label;
    std::string error;

    EndToEnd() = default;
    EndToEnd(const EndToEnd&) = delete;
    EndToEnd& operator=(const EndToEnd&) = delete;
    ~EndToEnd() {
        for (void* p : registered) KLAB_CUDA_CHECK_NOTHROW(cudaHostUnregister(p));
    }
    void pin_host(ImageU8& image) {
        KLAB_CUDA_CHECK(cudaHostRegister(image.data(), image.size_bytes(), cudaHostRegisterDefault));
        registered.push_back(image.data());
    }
    void copy(bool upload, cudaStream_t stream) {
        if (upload) {
            device_input->upload(input, stream);
        } else {
            device_output->download_async(output, stream);
        }
    }
    // One run of the row; returns its wall time in microseconds.
    double run() {
        const auto start = Clock::now();
        if (link == LinkCopy::none) {
            pipeline->run(input, output, pin);
        } else {
            if (link != LinkCopy::download) copy(true, up->get());
            if (link != LinkCopy::upload) copy(false, down->get());
            KLAB_CUDA_CHECK(cudaStreamSynchronize(up->get()));
            KLAB_CUDA_CHECK(cudaStreamSynchronize(down->get()));
        }
        return seconds_since(start) * 1e6;
    }
};

std::map<std::string, std::unique_ptr<EndToEnd>>& end_to_end_rows() {
    static std::map<std::string, std::unique_ptr<EndToEnd>> rows;
    return rows;
}

// "e2e.pipelined.strips12" -> 12; 0 (the automatic split) for any other row.
int strips_of_row(const std::string& row) {
    const std::string_view prefix = "e2e.pipelined.strips";
    if (row.rfind(prefix, 0) != 0) return 0;
    const std::string_view digits = std::string_view(row).substr(prefix.size());
    int strips = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), strips);
    if (error != std::errc() || end != digits.data() + digits.size() || strips < 1) {
        throw Error(fmt::format("end-to-end row '{}'", row), "e2e.pipelined.strips<N> with N a positive count");
    }
    return strips;
}

// The variant the end-to-end rows filter with: the separable one where the mask allows (the
// fastest at 8K in the study), else the halo-tiled one; its shape as the other rows find it.
std::unique_ptr<EndToEnd> make_end_to_end(const BenchCase& c) {
    auto row = std::make_unique<EndToEnd>();
    row->input = synth::generate(synth::Pattern::natural, c.problem.shape.width, c.problem.shape.height, c.problem.shape.channels, 1);
    row->output = ImageU8(output_shape(c.problem));
    const bool pageable = c.row.find(".pageable") != std::string::npos;
    row->pin = !pageable;
    if (row->pin) {
        row->pin_host(row->input);
        row->pin_host(row->output);
    }
    if (is_link_row(c.row)) {
        row->link = c.row == "e2e.upload" ? LinkCopy::upload : c.row == "e2e.download" ? LinkCopy::download : LinkCopy::both;
        row->device_input = std::make_unique<DeviceImage<std::uint8_t>>(c.problem.shape);
        row->device_output = std::make_unique<DeviceImage<std::uint8_t>>(c.problem.shape);
        KLAB_CUDA_CHECK(cudaMemset(row->device_output->view().data, 0, row->device_output->pitch_bytes() * c.problem.shape.height));
        row->up = std::make_unique<CudaStream>();
        row->down = std::make_unique<CudaStream>();
        row->label = row->link == LinkCopy::upload     ? "cudaMemcpy2DAsync of the image host to device, pinned"
                     : row->link == LinkCopy::download ? "cudaMemcpy2DAsync of the image device to host, pinned"
                                                       : "both at once on two streams: the image up and another down, pinned";
        return row;
    }
    const Variant* variant = Registry::instance().find("conv.separable_fused");
    if (variant == nullptr || !variant->supports(c.problem)) variant = &Registry::instance().get("conv.halo_tiled");
    BenchCase as_variant = c;
    as_variant.kind = RowKind::variant;
    as_variant.variant = variant;
    const LaunchShape shape = session().shape_for(as_variant).first;
    const bool pipelined = c.row.rfind("e2e.pipelined", 0) == 0;
    PipelineOptions options;
    options.strips = strips_of_row(c.row);
    row->pipeline = std::make_unique<StripPipeline>(pipelined ? StripPipeline(*variant, c.problem, shape, options)
                                                              : StripPipeline::one_shot(*variant, c.problem, shape));
    // Verified once, like every GPU row: the strip path must equal the CPU reference.
    const PipelineRun first = row->pipeline->run(row->input, row->output, row->pin);
    const ImageU8 expected = reference::convolve(row->input, *c.problem.mask, c.problem.border, 0);
    const Verification v = verify_convolution(row->input, *c.problem.mask, c.problem.border, expected, row->output,
                                              variant->coefficient_error(c.problem));
    if (!v.ok()) throw Error(fmt::format("{} differs from the CPU reference: {}", c.name(), v.summary()), "a verified result");
    row->label = fmt::format("{} {}, {}: {} strip(s), {} in flight, {} host memory", variant->name(), to_string(shape),
                             pipelined ? "strip pipeline" : "one shot", first.strips, first.in_flight, pageable ? "pageable" : "pinned");
    return row;
}

void time_end_to_end_row(benchmark::State& state, const BenchCase& c) {
    std::unique_ptr<EndToEnd>& row = end_to_end_rows()[c.name()];
    if (!row) {
        // The other end-to-end rows are done: their device buffers and pinned images go first.
        for (auto& [name, other] : end_to_end_rows()) {
            if (name != c.name() && other && other->error.empty()) other.reset();
        }
        try {
            row = make_end_to_end(c);
        } catch (const Error& e) {
            note_if_context_lost(c.name());
            row = std::make_unique<EndToEnd>();
            row->error = e.what();
        }
    }
    if (!row->error.empty()) {
        fail_row(state, c.name(), row->error);
        return;
    }
    double total_us = 0;
    for (auto _ : state) {
        const double us = row->run();
        state.SetIterationTime(us * 1e-6);
        total_us += us;
    }
    const double mean_us = total_us / static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
    const double image_bytes = static_cast<double>(row->input.width()) * row->input.height() * row->input.channels();
    const double upload_bytes = row->link == LinkCopy::download ? 0.0 : image_bytes;
    const double download_bytes = row->link == LinkCopy::upload ? 0.0
                                                                : static_cast<double>(row->output.width()) * row->output.height() *
                                                                      row->output.channels();
    set_counter(state, "bytes_read", upload_bytes);
    set_counter(state, "bytes_written", download_bytes);
    set_counter(state, "bytes_per_second", (upload_bytes + download_bytes) / (mean_us * 1e-6));
    set_counter(state, "pixels_per_second", static_cast<double>(c.problem.shape.pixels()) / (mean_us * 1e-6));
    state.SetLabel(row->label);
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

// The 100%-occupancy shapes of the block-shape study, from the tuner's search space on this GPU.
std::vector<LaunchShape> full_occupancy_shapes(const Variant& variant, const Problem& problem) {
    std::vector<LaunchShape> shapes;
    for (const autotune::Candidate* c : autotune::search_space(variant, problem, 1.0, autotune::device_oracle()).included()) {
        shapes.push_back(c->shape);
    }
    return shapes;
}

void add_context(const std::optional<DeviceInfo>& device) {
    const BuildVersion version = build_version();
    benchmark::AddCustomContext("git_commit", version.commit);
    benchmark::AddCustomContext("git_dirty", version.dirty ? "true" : "false");
    benchmark::AddCustomContext("klab_study", to_string(settings().study));
    benchmark::AddCustomContext("npp", npp_version());
    if (!device) {
        benchmark::AddCustomContext("klab_gpu_key", "none");
        benchmark::AddCustomContext("gpu_name", "none");
        return;
    }
    const autotune::GpuIdentity gpu = autotune::current_gpu_identity();
    benchmark::AddCustomContext("klab_gpu_key", fmt::format("{}, cc {}.{}, {} SMs", gpu.name, gpu.cc_major, gpu.cc_minor, gpu.sm_count));
    benchmark::AddCustomContext("gpu_name", device->name);
    benchmark::AddCustomContext("gpu_slug", gpu.slug());
    benchmark::AddCustomContext("gpu_compute_capability", fmt::format("{}.{}", device->cc_major, device->cc_minor));
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(device->sm_count));
    benchmark::AddCustomContext("gpu_sm_clock_mhz", std::to_string(device->sm_clock_khz / 1000));
    benchmark::AddCustomContext("gpu_memory_clock_mhz", std::to_string(device->memory_clock_khz / 1000));
    benchmark::AddCustomContext("gpu_memory_bus_bits", std::to_string(device->memory_bus_bits));
    benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(device->l2_cache_bytes));
    benchmark::AddCustomContext("cuda_driver", cuda_version_string(device->driver_version));
    benchmark::AddCustomContext("cuda_runtime", cuda_version_string(device->runtime_version));
    benchmark::AddCustomContext("gpu_ffma_per_second", fmt::format("{:.4g}", settings().ffma_per_second));
    benchmark::AddCustomContext("cpu_reference", cpu_reference_method());
}

void register_cases(const std::vector<BenchCase>& cases, bool gpu) {
    for (const BenchCase& c : cases) {
        benchmark::internal::Benchmark* b =
            c.kind == RowKind::end_to_end
                ? benchmark::RegisterBenchmark(c.name().c_str(), [c](benchmark::State& state) { run_guarded(state, c, time_end_to_end_row); })
            : gpu ? benchmark::RegisterBenchmark(c.name().c_str(), [c](benchmark::State& state) { run_guarded(state, c, time_gpu_row); })
                  : benchmark::RegisterBenchmark(c.name().c_str(), [c](benchmark::State& state) { run_cpu_row(state, c); });
        b->Unit(gpu ? benchmark::kMicrosecond : benchmark::kMillisecond);
        if (gpu) {
            b->UseManualTime();
        } else {
            b->UseRealTime();
        }
    }
}

}  // namespace

int bench_main(int argc, char** argv) {
    // klab's flags first (CLI11, everything else left for Google Benchmark).
    CLI::App app{"klab-bench: the seeds' performance study (Google Benchmark; its --benchmark_* flags apply too)"};
    app.allow_extras();
    app.set_help_flag();  // --help goes to Google Benchmark, after klab's flags are listed
    std::string study = "full";
    app.add_option("--klab_study", study, "full (the seeds' study), quick (HD and 8K) or smoke (tiny images)")
        ->capture_default_str();
    app.add_option("--klab_results", settings().results, "Results directory holding <gpu-slug>/autotune.json")->capture_default_str();
    std::string device_option;  // klab's --device N (harness/device_select.hpp); empty: the current device
    app.add_option("--device", device_option, "CUDA device index, as `klab info` lists them (default: the first CUDA shows)");
    try {
        app.parse(argc, argv);
        settings().study = parse_study(study);
        if (!device_option.empty()) (void)select_one_device(parse_device_request(device_option), "klab-bench");
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const Error& e) {
        std::fprintf(stderr, "klab-bench: %s\n", e.what());
        return 2;
    }
    std::vector<std::string> rest = app.remaining();
    std::vector<char*> args{argv[0]};
    for (std::string& r : rest) {
        if (r == "--help" || r == "-h") std::fputs(app.help().c_str(), stdout);
        if (r.rfind("--benchmark_min_time", 0) == 0) settings().min_time_given = true;
        args.push_back(r.data());
    }
    // The default minimum time per repetition, as a flag: a per-benchmark MinTime() would be
    // appended to every benchmark's name. Google Benchmark 1.8 wants a unit suffix, 1.7 a number.
    std::string min_time = fmt::format("--benchmark_min_time={}", settings().study == Study::smoke ? kSmokeMinTimeSeconds : kMinTimeSeconds);
#ifdef KLAB_BENCHMARK_MIN_TIME_SUFFIX
    min_time += "s";
#endif
    if (!settings().min_time_given) args.push_back(min_time.data());
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

    try {
        const DeviceQuery query = query_devices();
        std::optional<DeviceInfo> device;
        if (!query.devices.empty()) device = current_device(query);
        if (device) {
            // Before the context is written: the roofline's second floor, measured once per run.
            settings().ffma_per_second = measure_ffma_per_second(nullptr);
            std::fprintf(stderr, "klab-bench: FMA floor: %.1f T FFMA/s measured on %s\n", settings().ffma_per_second / 1e12,
                         device->name.c_str());
        }
        add_context(device);
        if (device) {
#if defined(KLAB_SYNC_AFTER_LAUNCH) || defined(KLAB_DEVICE_DEBUG)
            std::fprintf(stderr, "klab-bench: WARNING: a debug build (synchronised launches, -G device code): these times are "
                                 "not the kernels'; use the release preset\n");
#endif
            std::fprintf(stderr, "klab-bench: %s study on %s; NPP %s; tuning cache from %s\n", to_string(settings().study),
                         device->name.c_str(), npp_version().c_str(), settings().results.c_str());
            register_cases(gpu_study(settings().study, npp_built(), &full_occupancy_shapes), true);
        } else {
            std::fprintf(stderr, "klab-bench: no GPU found (%s): benchmarking the CPU reference only\n",
                         query.no_device_reason.c_str());
            register_cases(cpu_study(settings().study), false);
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "klab-bench: %s\n", e.what());
        return 2;
    }
    std::size_t ran = 0;
    {
        // The rows' device memory goes before CUDA shuts down, whatever happens in the run.
        struct ReleaseDeviceMemory {
            ~ReleaseDeviceMemory() {
                end_to_end_rows().clear();
                session_slot().reset();
            }
        } release;
        ran = benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
    }
    if (ran == 0) {
        std::fprintf(stderr, "klab-bench: no benchmark ran (does --benchmark_filter match any name? --benchmark_list_tests "
                             "lists them)\n");
        return 2;
    }
    if (!failed_rows().empty()) {
        std::fprintf(stderr, "klab-bench: %zu row(s) failed:\n", failed_rows().size());
        for (const auto& [name, message] : failed_rows()) std::fprintf(stderr, "  %s: %s\n", name.c_str(), message.c_str());
        return 1;
    }
    return 0;
}

}  // namespace klab::bench
