// klab-bench's GPU rows (bench/runner.hpp): klab variants, NPP calls and device-to-device copies
// on device-resident data. A variant's row is verified once against the CPU reference on its own
// problem (a wrong result is an error row, never a time); then every iteration flushes the L2
// cache and times one launch with CUDA events, and the row's counters set its time against the
// copy floor and the roofline (bench/README.md).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "autotune/occupancy.hpp"
#include "autotune/search_space.hpp"
#include "autotune/timing.hpp"
#include "autotune/tuner.hpp"
#include "bench/fma_rate.hpp"
#include "bench/gpu_session.hpp"
#include "bench/runner.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/error.hpp"

namespace klab::bench::runner {

namespace {

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

}  // namespace

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
    // the GPU's measured FFMA rate; none for the integer operations, nor for a copy, which computes
    // nothing of the problem it is named after).
    const double fma_floor_us = settings().ffma_per_second > 0 && c.kind != RowKind::copy
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

}  // namespace klab::bench::runner
