// prepare(), launch() and run() of harness/variant.hpp: every check before a launch (the buffers
// against the problem, the shape's parameters, each kernel against the device's limits), then the
// launch of the plan.
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"

namespace klab {

// ---------------------------------------------------------------------------------------------
// prepare(): every check before a launch

namespace {

std::size_t element_bytes(ElementType type) {
    switch (type) {
        case ElementType::u8: return 1;
        case ElementType::u32: return 4;
        case ElementType::u64: return 8;
    }
    return 1;
}

// The limits of one device that a launch must respect, queried once per device.
struct DeviceLimits {
    std::string name;
    int max_threads_per_block = 0;
    int max_block[3] = {};
    int max_grid[3] = {};
    std::size_t shared_per_block = 0;        // without opt-in (48 KiB)
    std::size_t shared_per_block_optin = 0;  // the most a kernel may opt in to
};

const DeviceLimits& current_device_limits() {
    static std::mutex mutex;
    static std::map<int, DeviceLimits> cache;
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(device);
    if (found != cache.end()) return found->second;
    cudaDeviceProp prop{};
    KLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    DeviceLimits limits;
    limits.name = prop.name;
    limits.max_threads_per_block = prop.maxThreadsPerBlock;
    for (int i = 0; i < 3; ++i) {
        limits.max_block[i] = prop.maxThreadsDim[i];
        limits.max_grid[i] = prop.maxGridSize[i];
    }
    limits.shared_per_block = prop.sharedMemPerBlock;
    limits.shared_per_block_optin = prop.sharedMemPerBlockOptin;
    return cache.emplace(device, limits).first->second;
}

ElementType expected_output_type(const Problem& problem) {
    if (problem.op != Operation::integral) return ElementType::u8;
    return reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u32
               ? ElementType::u32
               : ElementType::u64;
}

// Addresses as integers: pointers into different allocations may not be compared with <.
struct ByteRange {
    std::uintptr_t begin;
    std::uintptr_t end;
};

// Throws unless `pointer` is device memory of the current device (a host pointer would fault in
// the kernel and poison the CUDA context).
void require_device_memory(const void* pointer, const std::string& what, const std::string& needed) {
    cudaPointerAttributes attributes{};
    KLAB_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    if (attributes.type != cudaMemoryTypeDevice || attributes.device != device) {
        throw Error(fmt::format("{} is not device memory of the current device {}", what, device), needed);
    }
}

// Checks one image buffer against what the problem needs; returns the bytes it spans.
ByteRange check_buffer(const std::string& who, const char* role, const DeviceBuffer& buffer,
                       const ImageShape& shape, ElementType type) {
    const std::string needed = fmt::format("device memory for a {} {} image", to_string(shape), to_string(type));
    if (buffer.data == nullptr) throw Error(fmt::format("{}: the {} buffer is null", who, role), needed);
    if (buffer.type != type) {
        throw Error(fmt::format("{}: the {} buffer holds {} elements", who, role, to_string(buffer.type)), needed);
    }
    if (buffer.shape != shape) {
        throw Error(fmt::format("{}: the {} buffer is a {} image", who, role, to_string(buffer.shape)), needed);
    }
    const std::size_t row_bytes = static_cast<std::size_t>(shape.row_elements()) * element_bytes(type);
    if (buffer.pitch_bytes < row_bytes || buffer.pitch_bytes % element_bytes(type) != 0) {
        throw Error(fmt::format("{}: the {} buffer's pitch is {} bytes", who, role, buffer.pitch_bytes),
                    fmt::format("at least the {} bytes of a row, a multiple of {}", row_bytes, element_bytes(type)));
    }
    // (rows - 1) * pitch + row <= capacity, tested without overflow for any declared pitch.
    const std::size_t rows_before_last = static_cast<std::size_t>(shape.rows() - 1);
    const bool fits = buffer.capacity_bytes >= row_bytes &&
                      (rows_before_last == 0 || buffer.pitch_bytes <= (buffer.capacity_bytes - row_bytes) / rows_before_last);
    const std::size_t span = fits ? rows_before_last * buffer.pitch_bytes + row_bytes : 0;
    if (!fits) {
        throw Error(fmt::format("{}: the {} buffer holds {} bytes, less than {} rows of pitch {} span", who, role,
                                buffer.capacity_bytes, shape.rows(), buffer.pitch_bytes),
                    fmt::format("a buffer of at least (rows - 1) * pitch + {} bytes", row_bytes));
    }
    require_device_memory(buffer.data, fmt::format("{}: the {} buffer", who, role), needed);
    const auto begin = reinterpret_cast<std::uintptr_t>(buffer.data);
    return {begin, begin + span};
}

void check_buffers(const std::string& who, const Problem& problem, const DeviceBuffers& buffers) {
    const ByteRange in = check_buffer(who, "input", buffers.input, problem.shape, ElementType::u8);
    const ByteRange out = check_buffer(who, "output", buffers.output, output_shape(problem), expected_output_type(problem));
    if (in.begin < out.end && out.begin < in.end) {
        throw Error(fmt::format("{}: the input and output buffers overlap", who), "distinct input and output images");
    }
    if (problem.op != Operation::convolve) return;
    const Mask& mask = *problem.mask;
    if (buffers.mask.data == nullptr) {
        throw Error(fmt::format("{}: the device mask is null", who),
                    fmt::format("the {}x{} mask in device memory (klab::DeviceMask)", mask.width(), mask.height()));
    }
    if (buffers.mask.width != mask.width() || buffers.mask.height != mask.height()) {
        throw Error(fmt::format("{}: the device mask is {}x{}, the problem's {}x{}", who, buffers.mask.width,
                                buffers.mask.height, mask.width(), mask.height()),
                    "the problem's own mask in device memory (klab::DeviceMask)");
    }
    require_device_memory(buffers.mask.data, fmt::format("{}: the mask", who),
                          "the problem's own mask in device memory (klab::DeviceMask)");
    const auto mask_begin = reinterpret_cast<std::uintptr_t>(buffers.mask.data);
    const std::uintptr_t mask_end = mask_begin + mask.coefficients().size() * sizeof(float);
    if (mask_begin < out.end && out.begin < mask_end) {
        throw Error(fmt::format("{}: the mask and the output buffer overlap", who), "a mask apart from the output");
    }
}

void check_parameters(const std::string& who, const TuningSpace& space, const LaunchShape& shape) {
    if (const auto mismatch = parameter_mismatch(space, shape)) {
        throw Error(fmt::format("{}: {}", who, mismatch->problem), mismatch->allowed);
    }
}

void check_kernel(const std::string& who, const KernelLaunch& k, const DeviceLimits& limits) {
    const std::string what = fmt::format("{}: kernel {}", who, k.kernel_name);
    if (k.kernel == nullptr) throw Error(what + " has no function pointer", "a __global__ function");
    const unsigned long long threads = static_cast<unsigned long long>(k.block.x) * k.block.y * k.block.z;
    const unsigned block[3] = {k.block.x, k.block.y, k.block.z};
    const unsigned grid[3] = {k.grid.x, k.grid.y, k.grid.z};
    const std::string block_text = fmt::format("{}x{}x{}", k.block.x, k.block.y, k.block.z);
    const std::string block_limits =
        fmt::format("at most {} threads per block on {} (sides up to {}x{}x{})", limits.max_threads_per_block,
                    limits.name, limits.max_block[0], limits.max_block[1], limits.max_block[2]);
    if (threads == 0 || threads > static_cast<unsigned long long>(limits.max_threads_per_block)) {
        throw Error(fmt::format("{}: block {} has {} threads", what, block_text, threads), block_limits);
    }
    for (int i = 0; i < 3; ++i) {
        if (block[i] > static_cast<unsigned>(limits.max_block[i])) {
            throw Error(fmt::format("{}: block {} exceeds the side limit", what, block_text), block_limits);
        }
        if (grid[i] == 0 || grid[i] > static_cast<unsigned>(limits.max_grid[i])) {
            throw Error(fmt::format("{}: grid {}x{}x{} is out of range", what, k.grid.x, k.grid.y, k.grid.z),
                        fmt::format("grid sides from 1 to {}x{}x{} on {}", limits.max_grid[0], limits.max_grid[1],
                                    limits.max_grid[2], limits.name));
        }
    }
    cudaFuncAttributes attributes{};
    KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, k.kernel));
    if (threads > static_cast<unsigned long long>(attributes.maxThreadsPerBlock)) {
        throw Error(fmt::format("{}: block {} has {} threads, but the kernel's {} registers per thread allow {}", what,
                                block_text, threads, attributes.numRegs, attributes.maxThreadsPerBlock),
                    fmt::format("at most {} threads per block for this kernel", attributes.maxThreadsPerBlock));
    }
    const std::size_t shared = attributes.sharedSizeBytes + k.dynamic_shared_bytes;
    if (shared > limits.shared_per_block_optin) {
        throw Error(fmt::format("{}: block {} needs {} bytes of shared memory", what, block_text, shared),
                    fmt::format("at most {} bytes per block on {}", limits.shared_per_block_optin, limits.name));
    }
    allow_dynamic_shared_memory(k.kernel, k.dynamic_shared_bytes);
}

}  // namespace

void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes) {
    cudaFuncAttributes attributes{};
    KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    if (bytes > static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes)) {
        KLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    }
}

LaunchPlan prepare(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers,
                   const LaunchShape& shape) {
    const std::string who = variant.name();
    validate(problem);
    if (variant.op() != problem.op) {
        throw Error(fmt::format("{} computes {}, not {}", who, to_string(variant.op()), to_string(problem.op)),
                    fmt::format("a {} problem", to_string(variant.op())));
    }
    if (const Support support = variant.supports(problem); !support) {
        throw Error(fmt::format("{} does not support {}: {}", who, to_string(problem), support.reason()),
                    "the problems `klab list` shows for it");
    }
    check_buffers(who, problem, buffers);
    const DeviceLimits& limits = current_device_limits();
    // The block is checked before the variant's own code sees it (check_shape, kernels).
    if (shape.block_x < 1 || shape.block_y < 1 || shape.block_x > limits.max_block[0] ||
        shape.block_y > limits.max_block[1] ||
        static_cast<long long>(shape.block_x) * shape.block_y > limits.max_threads_per_block) {
        throw Error(fmt::format("{}: block {} has {} threads", who, to_string(shape),
                                static_cast<long long>(shape.block_x) * shape.block_y),
                    fmt::format("block sides of at least 1 and at most {} threads per block on {} (sides up to {}x{})",
                                limits.max_threads_per_block, limits.name, limits.max_block[0], limits.max_block[1]));
    }
    check_parameters(who, variant.tuning_space(), shape);
    if (const Support support = variant.check_shape(problem, shape); !support) {
        throw Error(fmt::format("{}: block {} for {}: {}", who, to_string(shape), to_string(problem), support.reason()),
                    "a shape the variant accepts");
    }
    LaunchPlan plan{&variant, problem, buffers, shape, variant.kernels(problem, shape), 0, nullptr, 0};
    KLAB_CUDA_CHECK(cudaGetDevice(&plan.device));
    variant.configure_kernels(problem);  // before the checks: a carveout changes what a kernel may use
    for (const KernelLaunch& k : plan.kernels) check_kernel(who, k, limits);
    plan.scratch_bytes = variant.scratch_bytes(problem, shape);
    if (plan.scratch_bytes > 0) {
        void* memory = nullptr;
        const cudaError_t status = cudaMalloc(&memory, plan.scratch_bytes);
        if (status != cudaSuccess) {
            (void)cudaGetLastError();  // an allocation failure does not stick; clear it
            throw Error(fmt::format("{} needs {} bytes of scratch device memory for {}: {} ({})", who, plan.scratch_bytes,
                                    to_string(problem), cudaGetErrorName(status), cudaGetErrorString(status)),
                        "a problem whose buffers and scratch fit in the device's free memory");
        }
        plan.scratch = std::shared_ptr<void>(memory, [](void* p) { KLAB_CUDA_CHECK_NOTHROW(cudaFree(p)); });
    }
    return plan;
}

void launch(const LaunchPlan& plan, cudaStream_t stream) {
    if (plan.variant == nullptr) throw Error("launch of an empty plan", "a plan made by klab::prepare()");
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    if (device != plan.device) {
        throw Error(fmt::format("launch on device {} of a plan prepared for device {}", device, plan.device),
                    "the device the plan was prepared on (its buffers and limits belong to it)");
    }
    plan.variant->enqueue(plan, stream);
}

void run(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers, const LaunchShape& shape,
         cudaStream_t stream) {
    launch(prepare(variant, problem, buffers, shape), stream);
}

}  // namespace klab
