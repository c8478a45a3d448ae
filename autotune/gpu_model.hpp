#pragma once
// The per-GPU limits that decide theoretical occupancy, for the GPU this process runs on and, as
// data, for GPU models we do not have, so that a tuning space can be computed on a CPU machine
// and planned ahead for another GPU (autotune/occupancy.hpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace klab::autotune {

struct GpuModel {
    std::string name;  // as cudaGetDeviceProperties reports it, e.g. "NVIDIA H200"
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    int max_threads_per_block = 1024;
    int max_threads_per_sm = 2048;
    int registers_per_block = 65536;
    int registers_per_sm = 65536;
    int warp_size = 32;
    std::size_t shared_per_block = 48 * 1024;  // without opting in
    std::size_t shared_per_sm = 0;
    std::size_t shared_per_block_optin = 0;
    std::size_t reserved_shared_per_block = 1024;  // the driver's share of each block's shared memory
};

// A100, L4, H100, H200 and RTX 4090 (`known_gpu_models()`), from the CUDA C++ Programming Guide's
// table of technical specifications per compute capability and NVIDIA's product pages (SM counts).
const std::vector<GpuModel>& known_gpu_models();
// By exact name ("NVIDIA H200") or a short alias ("H200", "a100", "rtx4090"); nullopt if unknown.
std::optional<GpuModel> find_gpu_model(std::string_view name);
// "A100, L4, H100, H200, RTX 4090" for error messages.
std::string known_gpu_model_names();

// The current CUDA device's model, from cudaGetDeviceProperties. Throws klab::Error without one.
GpuModel current_gpu_model();

// "nvidia-h200" from "NVIDIA H200": lower case, runs of other characters as one '-'. The folder
// name under results/.
std::string gpu_slug(std::string_view gpu_name);

}  // namespace klab::autotune
