#pragma once
// klab as a library: filter an image with this GPU's fastest verified variant (or one you name),
// or with the CPU reference every variant is verified against. The one header a program includes;
// link klab::klab (find_package(klab CONFIG REQUIRED)). docs/library.md has a longer guide.
//
//   klab::ImageU8 image = klab::io::read_image("in.png");
//   klab::ImageU8 blurred;
//   if (klab::gpu_available()) klab::filter(image, blurred, "gaussian:5");
//   else blurred = klab::filter_on_cpu(image, "gaussian:5");
//
// Filters are the specs `klab apply --filter` takes: box:K, gaussian:K[:SIGMA], sharpen,
// laplacian, emboss, unsharp:K[:SIGMA[:AMOUNT]], random:K[:SEED] (a random KxK mask, seed 1 by
// default), mask:FILE, sobel; integral images through klab::integral(). Images are 8-bit with 1, 3
// or 4 channels, interleaved (AoS, HWC) or planar (SoA, CHW), any row pitch (harness/image.hpp).
// Every error is a klab::Error whose message says what was wrong and what is allowed; nothing is
// written to an output when a check fails.
//
// The GPU runs on the current CUDA device (FilterOptions::device picks another). `auto` is what
// `klab apply --variant auto` does: the fastest variant that passes re-verification in the tuning
// cache (results/<gpu-slug>/autotune.json, written by `klab tune`) for the problem's class, else a
// default; the choice is made once per problem and process, and FilterReport::notes says why.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "harness/error.hpp"
#include "harness/image.hpp"
#include "harness/io/image_io.hpp"

namespace klab {

struct FilterOptions {
    std::string border = "replicate";  // constant[:V] (V 0..255), replicate, mirror (reflect-101), reflect, wrap
    std::string variant = "auto";      // a registered variant's name (klab::variants()), or auto
    // Device images: klab's kernels are enqueued on this stream, after what the caller enqueued
    // there, and the call returns once they have finished (their temporaries are freed then).
    cudaStream_t stream = nullptr;
    int device = -1;                   // the CUDA device to run on; -1: the current one
    // The tuning cache's folder (<results>/<gpu-slug>/autotune.json); empty: the environment
    // variable KLAB_RESULTS, else "results" (relative to the working directory, as `klab apply`).
    std::string results;
    bool verify = false;  // GPU: also compare with the CPU reference; a difference throws VerificationFailed
    int threads = 0;      // CPU reference (and verify): threads, 0 = one per hardware thread
};

// What a GPU call ran and why.
struct FilterReport {
    std::string variant;             // "conv.separable_fused"
    std::string shape;               // the launch shape, "32x8"
    std::vector<std::string> notes;  // the choice explained ("auto: ...", "launch shape: ...", "warning: ...")
    std::string verification;        // with FilterOptions::verify: the verdict ("ok: 6220800 values equal")
};

// Thrown by FilterOptions::verify when the GPU's result breaks the verification rule
// (harness/verify.hpp). A device output then holds the GPU's result; a host output is left as it
// was (the check comes before it is assigned).
class VerificationFailed : public Error {
public:
    using Error::Error;
};

struct VariantInfo {
    std::string name;       // "conv.halo_tiled"
    std::string op;         // "convolve", "sobel", "integral"
    std::string technique;  // one line
};

// The registered variants, sorted by name (the kernels are linked into the library: all of them).
std::vector<VariantInfo> variants();
// True when a usable CUDA device is present.
bool gpu_available();
// An integral image of this size needs 64-bit sums (255*W*H >= 2^32), else 32-bit ones suffice.
bool integral_needs_u64(int width, int height);

// ---------------------------------------------------------------------------------------------
// Host images in, host images out. On the GPU through klab's strip pipeline (upload, filter and
// download overlap; integral images in one piece); `output` gets the input's layout, tightly
// packed, 1 channel for sobel.
FilterReport filter(const ImageU8& input, ImageU8& output, const std::string& filter, const FilterOptions& options = {});
template <class T>  // std::uint32_t or std::uint64_t, as integral_needs_u64() says
FilterReport integral(const ImageU8& input, HostImage<T>& output, const FilterOptions& options = {});

// The same on the CPU reference (options.border and options.threads count).
ImageU8 filter_on_cpu(const ImageU8& input, const std::string& filter, const FilterOptions& options = {});
template <class T>
HostImage<T> integral_on_cpu(const ImageU8& input, const FilterOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Device images (device memory of the device the call runs on), without copies: `output` has the
// input's shape and layout (1 channel, AoS, for sobel), any pitch, and must not overlap the input.
FilterReport filter(ImageView<const std::uint8_t> input, ImageView<std::uint8_t> output, const std::string& filter,
                    const FilterOptions& options = {});
FilterReport integral(ImageView<const std::uint8_t> input, ImageView<std::uint32_t> output, const FilterOptions& options = {});
FilterReport integral(ImageView<const std::uint8_t> input, ImageView<std::uint64_t> output, const FilterOptions& options = {});

// The variant and launch shape a GPU call would take for an input of `shape` (notes included),
// without running it.
FilterReport choose_variant(const ImageShape& shape, const std::string& filter, const FilterOptions& options = {});

}  // namespace klab
