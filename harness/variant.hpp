#pragma once
// The variant interface and the registry: the one seam between harness/ and kernels/
// (docs/architecture.md). Each kernels/<op>_<technique>.cu defines one class derived from Variant
// and registers it with KLAB_REGISTER_VARIANT at the bottom of the file. Tests, the tuner, the
// benchmarks and the CLI find variants only through the registry.
//
// Running a variant is two steps, both in the harness:
//   prepare(variant, problem, buffers, shape)  checks everything that can be checked before a
//       launch (problem, buffers, supports(), the shape, every kernel's geometry against the
//       device's limits, once configure_kernels() has set the kernels' attributes) and returns a
//       LaunchPlan, or throws klab::Error saying what is wrong;
//   launch(plan, stream)                        enqueues the plan's kernels; cheap, for timed loops.
// run() does both. A variant's own launch code only ever sees a checked plan.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "harness/device_image.hpp"
#include "harness/problem.hpp"

namespace klab {

// ---------------------------------------------------------------------------------------------
// What a variant can do: ok, or a reason a user can read ("masks up to 15x15").
class Support {
public:
    static Support yes() { return Support(); }
    static Support no(std::string reason) { return Support(std::move(reason)); }
    explicit operator bool() const { return reason_.empty(); }
    const std::string& reason() const { return reason_; }

private:
    Support() = default;
    explicit Support(std::string reason) : reason_(reason.empty() ? "unsupported" : std::move(reason)) {}
    std::string reason_;
};

// ---------------------------------------------------------------------------------------------
// Device memory handed to a variant. Type-erased so that every op (u8 -> u8, u8 -> u32/u64)
// goes through the same interface; view<T>() checks the element type.
enum class ElementType : std::uint8_t { u8, u32, u64 };
const char* to_string(ElementType type);

template <class T>
constexpr ElementType element_type_of();
template <>
constexpr ElementType element_type_of<std::uint8_t>() { return ElementType::u8; }
template <>
constexpr ElementType element_type_of<std::uint32_t>() { return ElementType::u32; }
template <>
constexpr ElementType element_type_of<std::uint64_t>() { return ElementType::u64; }

struct DeviceBuffer {
    void* data = nullptr;
    ImageShape shape;
    std::size_t pitch_bytes = 0;
    std::size_t capacity_bytes = 0;  // bytes allocated from `data` on; checked against the shape
    ElementType type = ElementType::u8;

    template <class T>
    ImageView<T> view() const;  // throws klab::Error unless T matches `type`
};

template <class T>
DeviceBuffer device_buffer(DeviceImage<T>& image) {
    return {image.view().data, image.shape(), image.pitch_bytes(), image.capacity_bytes(), element_type_of<T>()};
}

// A mask in device memory: width*height floats, row-major, as Mask::coefficients().
struct DeviceMaskView {
    const float* data = nullptr;
    int width = 0;
    int height = 0;
};

// Owns a mask's coefficients in device memory, uploaded once, outside any timed loop. (A variant
// may still copy them within its launch, as conv.constant does into __constant__ memory: that
// copy is part of its cost.)
class DeviceMask {
public:
    explicit DeviceMask(const Mask& mask);
    ~DeviceMask();
    DeviceMask(const DeviceMask&) = delete;
    DeviceMask& operator=(const DeviceMask&) = delete;
    DeviceMaskView view() const { return {data_, width_, height_}; }

private:
    float* data_ = nullptr;
    int width_ = 0;
    int height_ = 0;
};

struct DeviceBuffers {
    DeviceBuffer input;
    DeviceBuffer output;
    DeviceMaskView mask;  // Operation::convolve only
};

// ---------------------------------------------------------------------------------------------
// A launch shape: the block always, plus any parameters the variant declares (e.g. outputs per
// thread). Parameters are kept in declaration order, which is name order (tuning records keep them
// by name; tests/cpu/test_registry.cpp checks every variant).
struct LaunchShape {
    int block_x = 32;
    int block_y = 8;
    std::vector<std::pair<std::string, int>> parameters;

    int parameter(std::string_view name) const;  // throws klab::Error when it is absent
};
std::string to_string(const LaunchShape& shape);  // "32x8" or "32x8 outputs_per_thread=2"
// Parses "XxY" (e.g. "32x8"); variant parameters are not part of the text form yet.
LaunchShape parse_block_shape(std::string_view text);

struct TunableParameter {
    std::string name;
    std::vector<int> values;
    std::string meaning;
};

// What the tuner may vary. Block sides are combined freely; the variant's check_shape() rejects
// combinations it cannot run, prepare() rejects those over the device's limits.
struct TuningSpace {
    std::vector<int> block_x;
    std::vector<int> block_y;
    std::vector<TunableParameter> parameters;
    LaunchShape default_shape;
};

// The standard block sides: x a power of two from 4 to 1024, y from 1 to 256.
TuningSpace block_tuning_space(LaunchShape default_shape = {});

// Why a launch shape's parameters do not fit a tuning space, as an Error's two parts (what is wrong,
// what is allowed); none when the shape sets exactly the declared parameters, by name in declaration
// order, each to one of its listed values. prepare() refuses such a shape, and the tuning cache's
// lookup passes over it (a record whose shapes name parameters the variant no longer declares).
struct ParameterMismatch {
    std::string problem;
    std::string allowed;
};
std::optional<ParameterMismatch> parameter_mismatch(const TuningSpace& space, const LaunchShape& shape);

// ---------------------------------------------------------------------------------------------
// One kernel launch of a plan: what the occupancy API needs (kernel pointer, block, dynamic
// shared memory) and the grid. Variants that launch several kernels list them in order.
struct KernelLaunch {
    const void* kernel = nullptr;  // the __global__ function, for cudaFuncGetAttributes and occupancy
    std::string kernel_name;       // for messages
    dim3 grid;
    dim3 block;
    std::size_t dynamic_shared_bytes = 0;
};

class Variant;

// A checked launch: build it with prepare() only (launch() trusts it), and do not edit it.
struct LaunchPlan {
    const Variant* variant = nullptr;
    Problem problem;
    DeviceBuffers buffers;
    LaunchShape shape;
    std::vector<KernelLaunch> kernels;
    int device = 0;  // the device prepare() checked against; launch() refuses another
    // Device memory of Variant::scratch_bytes() bytes (256-byte aligned), owned by the plan and
    // its copies: plans never share scratch, so plans on different streams may run at once, and
    // launching a plan allocates nothing. Null when the variant needs none.
    std::shared_ptr<void> scratch;
    std::size_t scratch_bytes = 0;

    template <class T>
    T* scratch_as() const { return static_cast<T*>(scratch.get()); }
};

class Variant {
public:
    virtual ~Variant() = default;

    // "conv.tiled_2batch": op and technique, the file kernels/conv_tiled_2batch.cu.
    virtual std::string name() const = 0;
    virtual Operation op() const = 0;
    // One line for `klab list`: the technique in a few words.
    virtual std::string technique() const = 0;

    // Whether this variant computes `problem` (already validated for its op).
    virtual Support supports(const Problem& problem) const = 0;
    virtual TuningSpace tuning_space() const = 0;
    // The shape to run `problem` with when nobody tuned it; the default is the space's default.
    virtual LaunchShape default_shape(const Problem& problem) const;
    // Whether this variant runs `problem` with `shape`; the default accepts every shape.
    virtual Support check_shape(const Problem& problem, const LaunchShape& shape) const;
    // Device memory the variant needs besides its buffers to run `problem` with `shape` (an
    // intermediate image, a summed-area table); 0, the default, for none. prepare() allocates it
    // into the plan (LaunchPlan::scratch), so a variant never allocates in enqueue().
    virtual std::size_t scratch_bytes(const Problem& problem, const LaunchShape& shape) const;
    // Convolutions only: the largest |c - m| between a coefficient c this variant effectively
    // applies and the mask's coefficient m. 0 (the default) for variants that multiply by the
    // mask's own coefficients; a separable variant multiplies row by column factors, which differ
    // from the mask by a few fp32 ulps. Verification widens its tie bound by this times the sum
    // of the pixels under the mask (harness/verify.hpp).
    virtual double coefficient_error(const Problem& problem) const;
    // The kernels `shape` launches for `problem` (called only for a supported problem and shape).
    virtual std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const = 0;
    // Sets the attributes of its kernels that running `problem` relies on (a shared-memory
    // carveout), on the current device: prepare() calls it once per plan, before it checks the
    // kernels, so that enqueue() makes no such call per launch. The default sets none.
    virtual void configure_kernels(const Problem& problem) const;
    // Enqueues plan.kernels on `stream`, each launch followed by KLAB_CUDA_CHECK_LAUNCH.
    // Called by klab::launch() only, with a plan prepare() has checked.
    virtual void enqueue(const LaunchPlan& plan, cudaStream_t stream) const = 0;
};

// Checks and plans; throws klab::Error naming the variant and what is wrong. Queries the current
// device's limits (cached) and each kernel's attributes; raises a kernel's dynamic shared memory
// limit when a plan needs more than the default 48 KiB and the device allows it; allocates the
// variant's scratch memory (an allocation failure is an error here, never in launch()).
LaunchPlan prepare(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers,
                   const LaunchShape& shape);
void launch(const LaunchPlan& plan, cudaStream_t stream = nullptr);
void run(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers, const LaunchShape& shape,
         cudaStream_t stream = nullptr);

// Raises `kernel`'s dynamic shared memory limit to `bytes` when its current limit (48 KiB minus
// its static shared memory, unless raised before) is lower: what a launch needing more must do
// first (CUDA programming guide, "Shared Memory"). prepare() and the occupancy queries use it.
void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes);

// Grid side covering `n` elements with blocks of `block` elements.
inline unsigned grid_side(int n, int block) { return static_cast<unsigned>((n + block - 1) / block); }

// ---------------------------------------------------------------------------------------------
// The registry, filled during static initialisation by KLAB_REGISTER_VARIANT (which must not
// touch the device). Variants are listed sorted by name.
struct RegisteredVariant {
    std::unique_ptr<Variant> variant;
    std::string source_file;  // __FILE__ of the registration, for the one-variant-per-file test
    // SHA-256 (first 16 hex digits) of the variant's code as built, from kernels/CMakeLists.txt: its
    // .cu file and the headers it depends on, without their comment-only and blank lines. Tuning
    // records are valid only for the code they were tuned with. "unknown" without one.
    std::string source_hash;
    // The same over the files' whole text, comments included: the hash that records tuned before
    // 2026-11-30 carry (autotune::SourceHashes accepts either). Empty without one.
    std::string full_text_hash;
};

class Registry {
public:
    static Registry& instance();

    std::vector<const Variant*> all() const;
    std::vector<const Variant*> for_op(Operation op) const;
    const Variant* find(std::string_view name) const;  // nullptr when absent
    const Variant& get(std::string_view name) const;   // throws klab::Error listing the names
    const RegisteredVariant* entry(std::string_view name) const;  // nullptr when absent
    const std::vector<RegisteredVariant>& entries() const { return entries_; }
    // Registrations that were refused (a duplicate name, an empty name), for tests and `klab list`.
    const std::vector<std::string>& errors() const { return errors_; }

    bool add(std::unique_ptr<Variant> variant, const char* source_file, const char* source_hash = "unknown",
             const char* full_text_hash = "") noexcept;

private:
    std::vector<RegisteredVariant> entries_;  // sorted by name
    std::vector<std::string> errors_;
};

}  // namespace klab

// The build defines KLAB_VARIANT_SOURCE_HASH and KLAB_VARIANT_FULL_TEXT_HASH for each kernels/*.cu
// file (kernels/CMakeLists.txt).
#ifndef KLAB_VARIANT_SOURCE_HASH
#define KLAB_VARIANT_SOURCE_HASH "unknown"
#endif
#ifndef KLAB_VARIANT_FULL_TEXT_HASH
#define KLAB_VARIANT_FULL_TEXT_HASH ""
#endif

// Registers `VariantClass` (default-constructible) from a kernels/*.cu file.
#define KLAB_REGISTER_VARIANT(VariantClass)                                                             \
    namespace {                                                                                     \
    [[maybe_unused]] const bool klab_registered_variant = ::klab::Registry::instance().add(         \
        std::make_unique<VariantClass>(), __FILE__, KLAB_VARIANT_SOURCE_HASH,                       \
        KLAB_VARIANT_FULL_TEXT_HASH);                                                               \
    }
