#include "autotune/gpu_model.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"

namespace klab::autotune {

namespace {

// Compute capability 8.0 and 9.0 SMs hold 2048 threads, 8.9 (Ada) 1536; every one of them
// 64 K registers. Shared memory per SM: 164 KiB (8.0), 100 KiB (8.9), 228 KiB (9.0), of which a
// block may opt into all but the 1 KiB the driver reserves.
GpuModel model(std::string name, int major, int minor, int sms, int threads_per_sm, std::size_t shared_per_sm_kib) {
    GpuModel m;
    m.name = std::move(name);
    m.cc_major = major;
    m.cc_minor = minor;
    m.sm_count = sms;
    m.max_threads_per_sm = threads_per_sm;
    m.shared_per_sm = shared_per_sm_kib * 1024;
    m.shared_per_block_optin = m.shared_per_sm - m.reserved_shared_per_block;
    return m;
}

std::string squeeze(std::string_view text) {  // "RTX 4090" -> "rtx4090"
    std::string out;
    for (char ch : text) {
        if (std::isalnum(static_cast<unsigned char>(ch))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return out;
}

}  // namespace

const std::vector<GpuModel>& known_gpu_models() {
    static const std::vector<GpuModel> models = {
        model("NVIDIA A100-SXM4-80GB", 8, 0, 108, 2048, 164),
        model("NVIDIA L4", 8, 9, 58, 1536, 100),
        model("NVIDIA H100 80GB HBM3", 9, 0, 132, 2048, 228),
        model("NVIDIA H200", 9, 0, 132, 2048, 228),
        model("NVIDIA GeForce RTX 4090", 8, 9, 128, 1536, 100),
    };
    return models;
}

std::optional<GpuModel> find_gpu_model(std::string_view name) {
    const std::string wanted = squeeze(name);
    if (wanted.empty()) return std::nullopt;
    for (const GpuModel& m : known_gpu_models()) {
        if (squeeze(m.name) == wanted) return m;
    }
    // Short names: "H100" for "NVIDIA H100 80GB HBM3", "RTX 4090" or "4090" for the GeForce.
    static const std::vector<std::pair<std::string, std::string>> aliases = {
        {"a100", "NVIDIA A100-SXM4-80GB"}, {"l4", "NVIDIA L4"}, {"h100", "NVIDIA H100 80GB HBM3"},
        {"h200", "NVIDIA H200"}, {"rtx4090", "NVIDIA GeForce RTX 4090"}, {"4090", "NVIDIA GeForce RTX 4090"}};
    for (const auto& [alias, full] : aliases) {
        if (alias != wanted) continue;
        for (const GpuModel& m : known_gpu_models()) {
            if (m.name == full) return m;
        }
    }
    return std::nullopt;
}

std::string known_gpu_model_names() { return "A100, L4, H100, H200, RTX 4090"; }

GpuModel current_gpu_model() {
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    // cudaGetDeviceProperties is slow (it reads every attribute): once per device and process.
    static std::mutex mutex;
    static std::map<int, GpuModel> known;
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(device); it != known.end()) return it->second;
    cudaDeviceProp p{};
    KLAB_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    GpuModel m;
    m.name = p.name;
    m.cc_major = p.major;
    m.cc_minor = p.minor;
    m.sm_count = p.multiProcessorCount;
    m.max_threads_per_block = p.maxThreadsPerBlock;
    m.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    m.registers_per_block = p.regsPerBlock;
    m.registers_per_sm = p.regsPerMultiprocessor;
    m.warp_size = p.warpSize;
    m.shared_per_block = p.sharedMemPerBlock;
    m.shared_per_sm = p.sharedMemPerMultiprocessor;
    m.shared_per_block_optin = p.sharedMemPerBlockOptin;
    m.reserved_shared_per_block = p.reservedSharedMemPerBlock;
    known.emplace(device, m);
    return m;
}

std::string gpu_slug(std::string_view gpu_name) {
    std::string slug;
    for (char ch : gpu_name) {
        if (std::isalnum(static_cast<unsigned char>(ch))) {
            slug += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        } else if (!slug.empty() && slug.back() != '-') {
            slug += '-';
        }
    }
    while (!slug.empty() && slug.back() == '-') slug.pop_back();
    if (slug.empty()) throw Error(fmt::format("a GPU name without letters or digits (\"{}\")", printable(gpu_name)), "a GPU name such as \"NVIDIA H200\"");
    return slug;
}

}  // namespace klab::autotune
