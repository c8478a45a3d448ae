// The library entry point on the GPU, linked to libklab as a consumer links it: device images
// (AoS, SoA, pitched, a window into a larger image) filtered without copies and verified against
// the CPU reference by the verification rule, host images through the strip pipeline, integral
// images in u32 and u64, the caller's stream honoured, and refusals that name what is allowed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <cuda_runtime_api.h>

#include "harness/device_image.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"
#include "harness/variant.hpp"
#include "klab/klab.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

using LibraryGpu = test::GpuTest;

FilterOptions verified(const char* border = "replicate", const char* variant = "auto") {
    FilterOptions options;
    options.border = border;
    options.variant = variant;
    options.verify = true;
    options.results = "no-such-results-folder";  // the defaults, whatever the machine has tuned
    return options;
}

TEST_F(LibraryGpu, DeviceImagesInEveryLayoutAndPitchAreVerified) {
    for (const Layout layout : {Layout::aos, Layout::soa}) {
        for (const int channels : {1, 3, 4}) {
            for (const std::size_t pitch : {std::size_t{0}, std::size_t{2053}}) {
                const ImageU8 host = reference::to_layout(synth::generate(synth::Pattern::natural, 509, 287, channels), layout);
                DeviceImage<std::uint8_t> input(host.shape(), pitch);
                input.upload(host);
                DeviceImage<std::uint8_t> output(host.shape(), pitch);
                for (const char* filter : {"gaussian:5", "sharpen", "box:9"}) {
                    SCOPED_TRACE(::testing::Message() << to_string(host.shape()) << " pitch " << pitch << " " << filter);
                    const FilterReport report = klab::filter(input.view(), output.view(), filter, verified("mirror"));
                    EXPECT_EQ(report.verification.rfind("ok", 0), 0u) << report.verification;
                    EXPECT_FALSE(report.variant.empty());
                }
            }
        }
    }
}

TEST_F(LibraryGpu, EveryVariantThroughTheLibraryIsVerified) {
    const ImageU8 host = synth::generate(synth::Pattern::natural, 300, 200, 3);
    DeviceImage<std::uint8_t> input(host);
    DeviceImage<std::uint8_t> output(host.shape());
    DeviceImage<std::uint8_t> gray(ImageShape{300, 200, 1, Layout::aos});
    for (const VariantInfo& v : variants()) {
        SCOPED_TRACE(v.name);
        if (v.op == "convolve") {
            const bool box_only = v.name == "conv.box_integral" || v.name == "conv.box_running_sums" ||
                                 v.name == "conv.box_sliding_sums" || v.name == "conv.box_warp_scan" ||
                                 v.name == "conv.box_warp_ring" || v.name == "conv.box_pixel_lanes";
            const char* filter = box_only ? "box:7" : "gaussian:3";  // every other convolution variant takes 3x3
            EXPECT_EQ(klab::filter(input.view(), output.view(), filter, verified("reflect", v.name.c_str())).variant, v.name);
        } else if (v.op == "sobel") {
            EXPECT_EQ(klab::filter(input.view(), gray.view(), "sobel", verified("wrap", v.name.c_str())).variant, v.name);
        }
    }
}

TEST_F(LibraryGpu, AWindowIntoALargerImageIsFilteredInPlace) {
    // 100x60 pixels at (7, 5) of a 200x90 RGB image: a pointer in the middle of a row, the big
    // image's pitch; the output likewise, in a second image. Nothing outside the window changes.
    const ImageU8 big = synth::generate(synth::Pattern::noise, 200, 90, 3);
    DeviceImage<std::uint8_t> input(big);
    DeviceImage<std::uint8_t> output(big.shape());
    KLAB_CUDA_CHECK(cudaMemset2D(output.view().data, output.pitch_bytes(), 0x5a, 200 * 3, 90));
    const ImageShape window{100, 60, 3, Layout::aos};
    const ImageView<const std::uint8_t> in(input.view().row(5) + 7 * 3, window, input.pitch_bytes());
    const ImageView<std::uint8_t> out(output.view().row(5) + 7 * 3, window, output.pitch_bytes());
    klab::filter(in, out, "gaussian:3", verified());
    const ImageU8 result = output.download();
    for (int y = 0; y < 90; ++y) {
        for (int x = 0; x < 200; ++x) {
            if (x >= 7 && x < 107 && y >= 5 && y < 65) continue;
            ASSERT_EQ(result.at(x, y, 0), 0x5a) << "x=" << x << " y=" << y;
        }
    }
}

TEST_F(LibraryGpu, HostImagesGoThroughTheGpu) {
    const ImageU8 image = synth::generate(synth::Pattern::natural, 640, 480, 4);
    ImageU8 out;
    const FilterReport report = klab::filter(image, out, "unsharp:5", verified("constant:7"));
    EXPECT_EQ(out.shape(), image.shape());
    EXPECT_EQ(report.verification.rfind("ok", 0), 0u);
    const ImageU8 planar = reference::to_layout(image, Layout::soa);
    ImageU8 planar_out;
    klab::filter(planar, planar_out, "box:5", verified());
    EXPECT_EQ(planar_out.layout(), Layout::soa);
    ImageU8 edges;
    klab::filter(image, edges, "sobel", verified());
    EXPECT_EQ(edges.channels(), 1);
}

TEST_F(LibraryGpu, IntegralImagesInTheirElementType) {
    const ImageU8 small = synth::generate(synth::Pattern::noise, 333, 111, 3);
    HostImage<std::uint32_t> sums32;
    klab::integral(small, sums32, verified());
    EXPECT_TRUE(same_pixels(sums32, reference::integral<std::uint32_t>(small)));
    DeviceImage<std::uint8_t> input(small);
    DeviceImage<std::uint64_t> wide(small.shape());
    test::expect_error([&] { klab::integral(input.view(), wide.view()); }, "u32");
    const ImageU8 large(4105, 4104, 1);  // 255*W*H >= 2^32 needs u64 (all zero here: only the type matters)
    HostImage<std::uint64_t> sums64;
    klab::integral(large, sums64);
    EXPECT_EQ(sums64.at(4104, 4103, 0), 0u);
}

// A host function that sleeps on the stream, then the input's upload from pinned memory: klab must
// read the input after both, on the caller's (non-blocking) stream. On the legacy default stream
// it would read the stale input at once.
void CUDART_CB sleep_on_stream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

TEST_F(LibraryGpu, TheCallersStreamIsHonoured) {
    const ImageU8 image = synth::generate(synth::Pattern::natural, 500, 400, 3);
    DeviceImage<std::uint8_t> input(image.shape());
    DeviceImage<std::uint8_t> output(image.shape());
    KLAB_CUDA_CHECK(cudaMemset2D(input.view().data, input.pitch_bytes(), 0, 500 * 3, 400));  // stale
    FilterOptions options = verified();
    options.verify = false;
    // A first call makes and keeps the device mask: no allocation (which may synchronise the
    // device) happens in the call under test.
    klab::filter(input.view(), output.view(), "box:3", options);

    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    void* pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, image.size_bytes()), cudaSuccess);
    std::memcpy(pinned, image.data(), image.size_bytes());
    ASSERT_EQ(cudaLaunchHostFunc(stream, sleep_on_stream, nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpy2DAsync(input.view().data, input.pitch_bytes(), pinned, image.pitch_bytes(), 500 * 3, 400,
                                cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    options.stream = stream;
    klab::filter(input.view(), output.view(), "box:3", options);
    EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess) << "the call returns once its work on the stream is done";
    EXPECT_TRUE(same_pixels(output.download(), filter_on_cpu(image, "box:3")));
    ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
    ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(LibraryGpu, RefusalsNameWhatIsAllowed) {
    const ImageU8 image = synth::generate(synth::Pattern::gradient, 64, 48, 3);
    DeviceImage<std::uint8_t> input(image);
    DeviceImage<std::uint8_t> output(image.shape());
    DeviceImage<std::uint8_t> small(ImageShape{32, 48, 3, Layout::aos});
    test::expect_error([&] { klab::filter(input.view(), small.view(), "box:3"); }, "the output buffer is a 32x48x3 aos image");
    test::expect_error([&] { klab::filter(input.view(), input.view(), "box:3"); }, "overlap");
    FilterOptions sobel_variant;
    sobel_variant.variant = "sobel.fused";
    test::expect_error([&] { klab::filter(input.view(), output.view(), "box:3", sobel_variant); },
                       "variant=sobel.fused computes sobel");
    FilterOptions unknown;
    unknown.variant = "conv.fast";
    test::expect_error([&] { klab::filter(input.view(), output.view(), "box:3", unknown); }, "no variant named \"conv.fast\"");
    FilterOptions far_device;
    far_device.device = 99;
    test::expect_error([&] { klab::filter(input.view(), output.view(), "box:3", far_device); }, "device=99");
    // Host memory where device memory is needed is refused before any launch.
    ImageU8 host_out(image.shape());
    const ImageView<std::uint8_t> host_view = host_out.view();
    test::expect_error([&] { klab::filter(input.view(), host_view, "box:3"); }, "not device memory");
    const FilterReport report = choose_variant(image.shape(), "gaussian:5", verified());
    EXPECT_FALSE(report.notes.empty());
}

}  // namespace
}  // namespace klab
