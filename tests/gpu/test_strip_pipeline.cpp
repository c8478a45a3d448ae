// The strip pipeline (harness/strip_pipeline.hpp) equals the one-shot path bit for bit, and the
// one-shot path equals the CPU reference: every border mode, strips shorter than the mask radius,
// one strip, more strips than rows, AoS and SoA, convolution and Sobel; a small device-memory
// budget sends an image through many strips; a budget too small for one strip is a clear error.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

class StripPipeline : public test::GpuTest {};

const std::vector<Border> kBorders = {{BorderMode::replicate, 0}, {BorderMode::mirror, 0}, {BorderMode::reflect, 0},
                                      {BorderMode::wrap, 0},      {BorderMode::constant, 7}};

// The reference's answer for `problem` on the AoS image `input` (layout does not change values).
ImageU8 reference_of(const Problem& problem, const ImageU8& input) {
    return problem.op == Operation::convolve ? reference::convolve(input, *problem.mask, problem.border, 0)
                                             : reference::sobel(input, problem.border, 0);
}

// Strips the pipeline makes of `height` rows when asked for `strips`.
int expected_strips(int height, int strips) {
    const int rows = std::max(1, (height + strips - 1) / strips);
    return (height + rows - 1) / rows;
}

// One shot against the reference, then every strip split against the one shot, byte for byte.
void check_problem(const Variant& variant, const Problem& problem, std::uint32_t seed) {
    const ImageU8 input = test::random_image({problem.shape.width, problem.shape.height, problem.shape.channels, Layout::aos}, seed);
    const LaunchShape shape = variant.default_shape(problem);
    ImageU8 one_shot;
    run_one_shot(variant, problem, shape, input, one_shot);
    const ImageU8 expected = reference_of(problem, input);
    const Verification v = problem.op == Operation::convolve
                               ? verify_convolution(input, *problem.mask, problem.border, expected, one_shot,
                                                    variant.coefficient_error(problem))
                               : verify_exact(expected, one_shot);
    ASSERT_TRUE(v.ok()) << variant.name() << " one shot, " << to_string(problem) << ": " << v.summary();

    const int height = problem.shape.height;
    // Strips of one row (shorter than any radius here), two rows, a third of the image, one
    // strip, more strips than rows; one strip in flight (every step waits for the last) and three.
    for (int strips : {height, (height + 1) / 2, 3, 1, height + 5}) {
        for (int in_flight : {1, 3}) {
            PipelineOptions options;
            options.strips = strips;
            options.in_flight = in_flight;
            ImageU8 pipelined;
            const PipelineRun run = run_pipelined(variant, problem, shape, input, pipelined, options);
            EXPECT_EQ(run.strips, expected_strips(height, strips)) << run.summary();
            EXPECT_TRUE(same_pixels(pipelined, one_shot))
                << variant.name() << ", " << to_string(problem) << ", " << run.summary() << ": differs from the one-shot result";
        }
    }
}

TEST_F(StripPipeline, EqualsOneShotForEveryBorderStripCountAndLayout) {
    std::uint32_t seed = 11;
    for (const char* name : {"conv.separable_fused", "conv.halo_tiled", "conv.separable_2pass"}) {
        const Variant& variant = Registry::instance().get(name);
        for (const Border& border : kBorders) {
            for (const Layout layout : {Layout::aos, Layout::soa}) {
                // A 9x9 mask (radius 4) and a 3 wide, 7 tall one (vertical radius 3), both separable.
                const Mask tall = parse_mask("1 2 1\n2 4 2\n3 6 3\n4 8 4\n3 6 3\n2 4 2\n1 2 1\ndivisor: 64", "3x7 test mask");
                for (const Mask& mask : {masks::gaussian(9), tall}) {
                    const Problem problem = convolve_problem({97, 23, 3, layout}, mask, border);
                    if (!variant.supports(problem)) continue;
                    SCOPED_TRACE(std::string(name) + " " + to_string(problem));
                    check_problem(variant, problem, seed++);
                }
            }
        }
    }
}

TEST_F(StripPipeline, SobelEqualsOneShotForEveryBorder) {
    std::uint32_t seed = 101;
    for (const Variant* variant : Registry::instance().for_op(Operation::sobel)) {
        for (const Border& border : kBorders) {
            for (const int channels : {1, 3}) {
                Problem problem;
                problem.op = Operation::sobel;
                problem.shape = ImageShape{61, 17, channels, Layout::aos};
                problem.border = border;
                SCOPED_TRACE(variant->name() + " " + to_string(problem));
                check_problem(*variant, problem, seed++);
            }
        }
    }
}

TEST_F(StripPipeline, ASmallBudgetSendsALargeImageThroughManyStrips) {
    const Variant& variant = Registry::instance().get("conv.separable_fused");
    const Problem problem = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(9), Border{BorderMode::wrap, 0});
    const ImageU8 input = test::random_image({1920, 1080, 3, Layout::aos}, 5);
    const LaunchShape shape = variant.default_shape(problem);
    ImageU8 one_shot;
    run_one_shot(variant, problem, shape, input, one_shot);
    PipelineOptions options;
    options.device_budget_bytes = 2u << 20;  // 2 MiB: strips of a few dozen rows, 3 in flight
    ImageU8 pipelined;
    const PipelineRun run = run_pipelined(variant, problem, shape, input, pipelined, options);
    EXPECT_GT(run.strips, 20) << run.summary();
    EXPECT_TRUE(same_pixels(pipelined, one_shot)) << run.summary();
    // The same through the environment variable, as klab apply reads it (unset again whatever
    // happens, so that no later test inherits the small budget).
    struct BudgetVariable {
        BudgetVariable() { EXPECT_EQ(setenv("KLAB_DEVICE_MEMORY_BUDGET", "2M", 1), 0); }
        ~BudgetVariable() { unsetenv("KLAB_DEVICE_MEMORY_BUDGET"); }
    };
    ImageU8 from_environment;
    PipelineRun env_run;
    {
        const BudgetVariable budget;
        EXPECT_EQ(device_memory_budget(), 2u << 20);
        env_run = run_pipelined(variant, problem, shape, input, from_environment, PipelineOptions{});
    }
    EXPECT_EQ(env_run.strips, run.strips);
    EXPECT_TRUE(same_pixels(from_environment, one_shot));
}

TEST_F(StripPipeline, ABudgetTooSmallForOneStripIsAClearError) {
    const Variant& variant = Registry::instance().get("conv.halo_tiled");
    const Problem problem = convolve_problem({1920, 64, 3, Layout::aos}, masks::gaussian(5), Border{});
    const ImageU8 input = test::random_image({1920, 64, 3, Layout::aos}, 9);
    PipelineOptions options;
    options.device_budget_bytes = 1000;
    ImageU8 output;
    try {
        run_pipelined(variant, problem, variant.default_shape(problem), input, output, options);
        FAIL() << "a 1000-byte budget was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
    }
    // Too many rows per strip for the budget, asked for explicitly: one strip of the 64 rows (and
    // 4 halo rows) needs about 0.84 MB in and out.
    options.device_budget_bytes = 512u << 10;
    options.strips = 1;
    EXPECT_THROW(run_pipelined(variant, problem, variant.default_shape(problem), input, output, options), Error);
}

}  // namespace
}  // namespace klab
