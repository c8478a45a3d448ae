// Variants (harness/variant.hpp): device buffers and masks, launch shapes and tuning spaces, and
// the registry kernels register into. prepare() and its checks are in harness/launch_plan.cpp.
#include "harness/variant.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"

namespace klab {

// ---------------------------------------------------------------------------------------------
// Buffers and masks

const char* to_string(ElementType type) {
    switch (type) {
        case ElementType::u8: return "u8";
        case ElementType::u32: return "u32";
        case ElementType::u64: return "u64";
    }
    return "?";
}

template <class T>
ImageView<T> DeviceBuffer::view() const {
    if (type != element_type_of<std::remove_const_t<T>>()) {
        throw Error(fmt::format("a {} buffer read as {}", to_string(type), to_string(element_type_of<std::remove_const_t<T>>())),
                    "the buffer's own element type");
    }
    return {static_cast<T*>(data), shape, pitch_bytes};
}
template ImageView<std::uint8_t> DeviceBuffer::view() const;
template ImageView<const std::uint8_t> DeviceBuffer::view() const;
template ImageView<std::uint32_t> DeviceBuffer::view() const;
template ImageView<std::uint64_t> DeviceBuffer::view() const;

DeviceMask::DeviceMask(const Mask& mask) : width_(mask.width()), height_(mask.height()) {
    const std::size_t bytes = mask.coefficients().size() * sizeof(float);
    void* memory = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&memory, bytes));
    data_ = static_cast<float*>(memory);
    cudaError_t status = cudaMemcpy(data_, mask.coefficients().data(), bytes, cudaMemcpyHostToDevice);
    // A copy from pageable memory may return before its DMA lands (CUDA runtime API, "API
    // synchronization behavior"), and kernels on non-blocking streams (the strip pipeline's, the
    // benchmarks') do not wait for the legacy stream: wait here, once per mask.
    if (status == cudaSuccess) status = cudaStreamSynchronize(nullptr);
    if (status != cudaSuccess) {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(data_));
        KLAB_CUDA_CHECK(status);
    }
}

DeviceMask::~DeviceMask() {
    if (data_ != nullptr) KLAB_CUDA_CHECK_NOTHROW(cudaFree(data_));
}

// ---------------------------------------------------------------------------------------------
// Launch shapes and tuning spaces

int LaunchShape::parameter(std::string_view name) const {
    for (const auto& [key, value] : parameters) {
        if (key == name) return value;
    }
    throw Error(fmt::format("launch shape {} has no parameter {}", to_string(*this), name),
                "the parameters the variant's tuning space declares");
}

std::string to_string(const LaunchShape& shape) {
    std::string text = fmt::format("{}x{}", shape.block_x, shape.block_y);
    for (const auto& [key, value] : shape.parameters) text += fmt::format(" {}={}", key, value);
    return text;
}

LaunchShape parse_block_shape(std::string_view text) {
    const auto fail = [&] {
        return Error(fmt::format("block shape \"{}\"", printable(text)), "XxY with 1 <= X, Y <= 1024, e.g. 32x8");
    };
    const std::size_t sep = text.find('x');
    if (sep == std::string_view::npos) throw fail();
    const auto parse_side = [&](std::string_view part) {
        int value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (ec != std::errc() || end != part.data() + part.size() || value < 1 || value > 1024) throw fail();
        return value;
    };
    LaunchShape shape;
    shape.block_x = parse_side(text.substr(0, sep));
    shape.block_y = parse_side(text.substr(sep + 1));
    return shape;
}

TuningSpace block_tuning_space(LaunchShape default_shape) {
    TuningSpace space;
    space.block_x = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
    space.block_y = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    space.default_shape = std::move(default_shape);
    return space;
}

std::optional<ParameterMismatch> parameter_mismatch(const TuningSpace& space, const LaunchShape& shape) {
    // The declared names, for the message (worked out only where there is one to give).
    const auto declared = [&space] {
        std::string names;
        for (const TunableParameter& p : space.parameters) names += (names.empty() ? "" : ", ") + p.name;
        return names.empty() ? std::string("none") : names;
    };
    if (shape.parameters.size() != space.parameters.size()) {
        return ParameterMismatch{fmt::format("launch shape {} gives {} parameters", to_string(shape), shape.parameters.size()),
                                 fmt::format("exactly the declared parameters: {}", declared())};
    }
    for (std::size_t i = 0; i < space.parameters.size(); ++i) {
        const TunableParameter& p = space.parameters[i];
        const auto& [key, value] = shape.parameters[i];
        if (key != p.name) {
            return ParameterMismatch{fmt::format("launch shape {} names parameter {}", to_string(shape), key),
                                     fmt::format("the declared parameters in order: {}", declared())};
        }
        if (std::find(p.values.begin(), p.values.end(), value) == p.values.end()) {
            return ParameterMismatch{fmt::format("launch shape {} sets {}={}", to_string(shape), key, value),
                                     fmt::format("{} from {{{}}} ({})", key, fmt::join(p.values, ", "), p.meaning)};
        }
    }
    return std::nullopt;
}

LaunchShape Variant::default_shape(const Problem&) const { return tuning_space().default_shape; }

Support Variant::check_shape(const Problem&, const LaunchShape&) const { return Support::yes(); }

double Variant::coefficient_error(const Problem&) const { return 0.0; }

std::size_t Variant::scratch_bytes(const Problem&, const LaunchShape&) const { return 0; }

void Variant::configure_kernels(const Problem&) const {}

// ---------------------------------------------------------------------------------------------
// Registry

Registry& Registry::instance() {
    static Registry registry;  // constructed on first use, so static registration order is safe
    return registry;
}

bool Registry::add(std::unique_ptr<Variant> variant, const char* source_file, const char* source_hash,
                   const char* full_text_hash) noexcept {
    try {
        const std::string name = variant->name();
        if (name.empty()) {
            errors_.push_back(fmt::format("{}: a variant with an empty name", source_file));
            return false;
        }
        if (const Variant* existing = find(name); existing != nullptr) {
            errors_.push_back(fmt::format("{}: variant name {} is registered twice", source_file, name));
            return false;
        }
        const auto at = std::lower_bound(entries_.begin(), entries_.end(), name,
                                         [](const RegisteredVariant& e, const std::string& n) { return e.variant->name() < n; });
        entries_.insert(at, RegisteredVariant{std::move(variant), source_file, source_hash, full_text_hash});
        return true;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "klab: registering a variant from %s failed: %s\n", source_file, e.what());
        return false;
    }
}

std::vector<const Variant*> Registry::all() const {
    std::vector<const Variant*> variants;
    for (const RegisteredVariant& e : entries_) variants.push_back(e.variant.get());
    return variants;
}

std::vector<const Variant*> Registry::for_op(Operation op) const {
    std::vector<const Variant*> variants;
    for (const RegisteredVariant& e : entries_) {
        if (e.variant->op() == op) variants.push_back(e.variant.get());
    }
    return variants;
}

const Variant* Registry::find(std::string_view name) const {
    for (const RegisteredVariant& e : entries_) {
        if (e.variant->name() == name) return e.variant.get();
    }
    return nullptr;
}

const RegisteredVariant* Registry::entry(std::string_view name) const {
    for (const RegisteredVariant& e : entries_) {
        if (e.variant->name() == name) return &e;
    }
    return nullptr;
}

const Variant& Registry::get(std::string_view name) const {
    if (const Variant* variant = find(name)) return *variant;
    std::vector<std::string> names;
    for (const RegisteredVariant& e : entries_) names.push_back(e.variant->name());
    throw Error(fmt::format("no variant named \"{}\"", name),
                names.empty() ? std::string("none is registered in this build")
                              : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace klab
