#pragma once
// The GPU state of a klab-bench run, shared by its GPU rows (bench/gpu_rows.cpp) and end-to-end
// rows: one stream, the L2 flusher, the tuning cache, the copy floors, and the device memory of
// the one problem whose rows run now. Internal to klab_bench.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "autotune/timing.hpp"
#include "autotune/tuning_cache.hpp"
#include "bench/npp_baselines.hpp"
#include "bench/study.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/device_image.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab::bench::runner {

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

    Workspace(const Problem& p, int gen);
    DeviceBuffers buffers();
    void compute_reference();
    // Fills the output with the reference's complement, so that a pixel the variant never
    // writes differs from the reference.
    void poison_output();
    // The output of the run just made against the reference (docs/numeric-contract.md).
    Verification verify_output(const Variant& variant);
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
    explicit Session(const std::string& results_dir);
    cudaStream_t stream() const { return stream_.get(); }
    autotune::L2Flusher& flusher() { return *flusher_; }

    // The workspace of `problem`, made now (freeing the previous one) when it is another problem.
    Workspace& workspace(const Problem& problem);

    // A device-to-device copy of `bytes`, timed like the rows (L2 flushed, events): the floor
    // any kernel moving 2 x `bytes` is measured against. Mean of at least 50 samples.
    double copy_floor_us(std::size_t bytes);

    // Where the row's shape comes from: forced, the tuning cache (re-verified), or the default. Every
    // operation is tuned (convolutions, Sobel, integral images: autotune/problem_class.hpp).
    std::pair<LaunchShape, std::string> shape_for(const BenchCase& c);

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

// The run's session, created by the first GPU row; release_gpu_rows() (bench/runner.hpp) destroys
// it at the end of bench_main(), while CUDA is still up.
Session& session();

}  // namespace klab::bench::runner
