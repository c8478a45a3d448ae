// The multithreaded CPU path equals the sequential reference exactly.
#include <gtest/gtest.h>

#include <atomic>

#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

TEST(Parallel, ChunksCoverEveryIndexOnceAndErrorsPropagate) {
    for (int threads : {1, 2, 3, 8, 64}) {
        std::vector<std::atomic<int>> hits(37);
        parallel_for(37, threads, [&](int begin, int end) {
            for (int i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
        });
        for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
    test::expect_error([] { parallel_for(10, 4, [](int, int) { throw Error("boom"); }); }, "boom");
    test::expect_error([] { resolve_threads(-1); }, "thread count -1");
    test::expect_error([] { resolve_threads(kMaxThreads + 1); }, "or 1 to 1024");
    EXPECT_GE(resolve_threads(0), 1);
}

TEST(Parallel, EveryOperationIsBitIdenticalToTheSequentialPath) {
    const Mask masks_to_try[] = {masks::gaussian(9), masks::box(5), masks::unsharp(5, 1.0, 1.0), masks::laplacian()};
    const BorderMode modes[] = {BorderMode::constant, BorderMode::replicate, BorderMode::mirror, BorderMode::reflect,
                                BorderMode::wrap};
    for (int channels : {1, 3, 4})
        for (Layout layout : {Layout::aos, Layout::soa}) {
            const ImageU8 in = test::random_image({127, 65, channels, layout}, 7 * channels);
            for (const Mask& m : masks_to_try)
                for (BorderMode mode : modes) {
                    const ImageU8 sequential = reference::convolve(in, m, {mode, 13}, 1);
                    for (int threads : {2, 3, 7})
                        EXPECT_TRUE(same_pixels(reference::convolve(in, m, {mode, 13}, threads), sequential))
                            << m.name() << " " << threads;
                }
            const auto integral = reference::integral<std::uint32_t>(in, 1);
            EXPECT_TRUE(same_pixels(reference::integral<std::uint32_t>(in, 5), integral));
            const ImageU8 sobel = reference::sobel(in, {BorderMode::mirror, 0}, 1);
            EXPECT_TRUE(same_pixels(reference::sobel(in, {BorderMode::mirror, 0}, 4), sobel));
            EXPECT_TRUE(same_pixels(reference::grayscale(in, 3), reference::grayscale(in, 1)));
        }
}

}  // namespace
}  // namespace klab
