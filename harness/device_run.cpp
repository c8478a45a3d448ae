#include "harness/device_run.hpp"

#include <fmt/format.h>

#include "harness/cuda_event.hpp"
#include "harness/device_layout.hpp"
#include "harness/error.hpp"

namespace klab {

namespace {

DeviceImage<std::uint8_t> in_layout(DeviceImage<std::uint8_t> image, Layout layout) {
    if (image.shape().layout == layout) return image;
    return to_layout(image, layout);
}

// GPU time of the plan's kernels: a warm-up launch first (it pays for loading the module), then
// events on the default stream right around one launch.
float timed_launch(const LaunchPlan& plan) {
    launch(plan);
    KLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const CudaEvent start;
    const CudaEvent stop;
    KLAB_CUDA_CHECK(cudaEventRecord(start.get()));
    launch(plan);
    KLAB_CUDA_CHECK(cudaEventRecord(stop.get()));
    KLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float milliseconds = 0.0f;
    KLAB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
    return milliseconds;
}

}  // namespace

DeviceRun run_on_device(const Variant& variant, const Problem& problem, const ImageU8& input, const LaunchShape& shape) {
    ImageShape aos = problem.shape;
    aos.layout = Layout::aos;
    if (input.shape() != aos || problem.op != Operation::convolve) {
        throw Error(fmt::format("run_on_device with a {} image for {}", to_string(input.shape()), to_string(problem)),
                    "an AoS image of the problem's size and channels, a convolve problem");
    }
    DeviceImage<std::uint8_t> in = in_layout(DeviceImage<std::uint8_t>(input), problem.shape.layout);
    DeviceImage<std::uint8_t> out(problem.shape);
    const DeviceMask mask(*problem.mask);
    const LaunchPlan plan = prepare(variant, problem, {device_buffer(in), device_buffer(out), mask.view()}, shape);
    const float milliseconds = timed_launch(plan);
    return {in_layout(std::move(out), Layout::aos).download(), milliseconds};
}

}  // namespace klab
