#pragma once
// How a variant enqueues the kernels of a checked LaunchPlan: with exactly the grid, block and
// dynamic shared memory that prepare() checked, and the arguments converted to the kernel's
// parameter types at compile time (cudaLaunchKernel itself would take any bytes).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/variant.hpp"

namespace klab {

namespace detail {
template <class T>
struct exactly {
    using type = T;
};
}  // namespace detail

// Launches `kernel` as described by `launch` (one of plan.kernels) on `stream` and checks the
// launch. Throws klab::Error when `kernel` is not the function the plan was checked for.
template <class... Params>
void enqueue_kernel(const KernelLaunch& launch, cudaStream_t stream, void (*kernel)(Params...),
                    typename detail::exactly<Params>::type... args) {
    if (reinterpret_cast<const void*>(kernel) != launch.kernel) {
        throw Error(fmt::format("enqueue of a kernel other than the planned {}", launch.kernel_name),
                    "the kernel that Variant::kernels() put in the plan");
    }
    void* arguments[] = {static_cast<void*>(&args)..., nullptr};
    KLAB_CUDA_CHECK(cudaLaunchKernel(launch.kernel, launch.grid, launch.block, arguments,
                                     launch.dynamic_shared_bytes, stream));
    KLAB_CUDA_CHECK_LAUNCH(stream);
}

}  // namespace klab

namespace klab {

// The instance of a kernel template for 1, 3 or 4 channels, e.g.
//   by_channels(shape.channels, &conv_kernel<1>, &conv_kernel<3>, &conv_kernel<4>).
template <class Kernel>
Kernel by_channels(int channels, Kernel one, Kernel three, Kernel four) {
    switch (channels) {
        case 1: return one;
        case 3: return three;
        case 4: return four;
        default: throw Error(fmt::format("{} channels", channels), "1, 3 or 4 channels");
    }
}

}  // namespace klab

namespace klab {

// A KernelLaunch for a typed __global__ function.
template <class... Params>
KernelLaunch make_launch(void (*kernel)(Params...), std::string kernel_name, dim3 grid, dim3 block,
                         std::size_t dynamic_shared_bytes = 0) {
    return KernelLaunch{reinterpret_cast<const void*>(kernel), std::move(kernel_name), grid, block,
                        dynamic_shared_bytes};
}

// The block of a launch shape, and the grid that gives every pixel of `shape` one thread.
inline dim3 block_of(const LaunchShape& shape) {
    return dim3(static_cast<unsigned>(shape.block_x), static_cast<unsigned>(shape.block_y));
}
inline dim3 covering_grid(const ImageShape& image, const LaunchShape& shape) {
    return dim3(grid_side(image.width, shape.block_x), grid_side(image.height, shape.block_y));
}

}  // namespace klab
