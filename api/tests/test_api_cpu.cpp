// The library entry point (klab/klab.hpp) without a GPU, linked to libklab as a consumer links
// it: the shared library holds every kernel (the registry is full), the CPU path is the
// reference, and bad input is a klab::Error saying what is allowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"
#include "klab/klab.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

TEST(LibraryCpu, TheSharedLibraryRegistersEveryKernelFile) {
    std::vector<std::string> files;
    std::stringstream stems(KLAB_KERNEL_STEMS);
    for (std::string stem; std::getline(stems, stem, ',');) {
        const std::size_t underscore = stem.find('_');
        ASSERT_NE(underscore, std::string::npos) << "kernels/" << stem << ".cu is not named <op>_<technique>.cu";
        stem[underscore] = '.';  // kernels/conv_halo_tiled.cu registers conv.halo_tiled
        files.push_back(stem);
    }
    std::vector<std::string> names;
    for (const VariantInfo& v : variants()) {
        names.push_back(v.name);
        EXPECT_FALSE(v.technique.empty()) << v.name;
        EXPECT_TRUE(v.op == "convolve" || v.op == "sobel" || v.op == "integral") << v.name << ": " << v.op;
    }
    std::sort(files.begin(), files.end());
    ASSERT_FALSE(files.empty());
    EXPECT_EQ(names, files);
}

TEST(LibraryCpu, FilterOnCpuIsTheReference) {
    const ImageU8 image = synth::generate(synth::Pattern::natural, 61, 37, 3);
    FilterOptions options;
    options.border = "mirror";
    options.threads = 2;
    EXPECT_TRUE(same_pixels(filter_on_cpu(image, "gaussian:5", options),
                            reference::convolve(image, masks::gaussian(5), Border{BorderMode::mirror}, 1)));
    EXPECT_TRUE(same_pixels(filter_on_cpu(image, "sobel", options), reference::sobel(image, Border{BorderMode::mirror}, 1)));
    // A planar image keeps its layout.
    const ImageU8 planar = reference::to_layout(image, Layout::soa);
    const ImageU8 planar_out = filter_on_cpu(planar, "box:3");
    EXPECT_EQ(planar_out.layout(), Layout::soa);
    EXPECT_TRUE(same_pixels(reference::to_layout(planar_out, Layout::aos), filter_on_cpu(image, "box:3")));
}

TEST(LibraryCpu, IntegralOnCpuIsTheReferenceAndRefusesNarrowSums) {
    const ImageU8 image = synth::generate(synth::Pattern::noise, 40, 30, 4);
    EXPECT_TRUE(same_pixels(integral_on_cpu<std::uint32_t>(image), reference::integral<std::uint32_t>(image)));
    EXPECT_TRUE(same_pixels(integral_on_cpu<std::uint64_t>(image), reference::integral<std::uint64_t>(image)));
    // The u32 -> u64 switch of the numeric contract: 255*W*H < 2^32.
    EXPECT_FALSE(integral_needs_u64(4104, 4104));
    EXPECT_TRUE(integral_needs_u64(4105, 4104));
    test::expect_error([] { integral_needs_u64(0, 5); }, "allowed");
}

TEST(LibraryCpu, BadInputSaysWhatIsAllowed) {
    const ImageU8 image = synth::generate(synth::Pattern::gradient, 16, 9, 3);
    test::expect_error([&] { filter_on_cpu(image, "gaussian:4"); }, "gaussian size 4");
    test::expect_error([&] { filter_on_cpu(image, "integral"); }, "klab::integral_on_cpu()");
    FilterOptions options;
    options.border = "mirrored";
    test::expect_error([&] { filter_on_cpu(image, "box:3", options); }, "mirror");
}

TEST(LibraryCpu, TheGpuPathWithoutADeviceSaysSo) {
    if (gpu_available()) GTEST_SKIP() << "a CUDA device is present (tests/test_api_gpu.cpp covers the GPU path)";
    const ImageU8 image = synth::generate(synth::Pattern::gradient, 16, 9, 1);
    ImageU8 out;
    test::expect_error([&] { filter(image, out, "box:3"); }, "klab::filter_on_cpu()");
    test::expect_error([&] { choose_variant(image.shape(), "box:3"); }, "needs a CUDA device");
    EXPECT_TRUE(out.empty()) << "nothing is written when a check fails";
}

}  // namespace
}  // namespace klab
