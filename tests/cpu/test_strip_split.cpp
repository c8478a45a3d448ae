// How the strip pipeline cuts an image (harness/strip_pipeline.hpp, plan_strip_split), on the CPU:
// with an explicit device-memory budget the split needs no device.
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

StripSplit split(int width, int height, int strips, int in_flight, std::size_t budget, const char* variant = "conv.halo_tiled") {
    const Variant& v = Registry::instance().get(variant);
    const Problem problem = convolve_problem({width, height, 3, Layout::aos}, masks::gaussian(5), Border{});
    PipelineOptions options;
    options.strips = strips;
    options.in_flight = in_flight;
    options.device_budget_bytes = budget;
    return plan_strip_split(v, problem, v.default_shape(problem), options);
}

constexpr std::size_t kGiB = std::size_t{1} << 30;

int sum(const std::vector<int>& rows) { return std::accumulate(rows.begin(), rows.end(), 0); }

TEST(StripSplit, AutomaticTakesTwentyFourStripsNoneUnderTwoMebibytes) {
    // 8K RGB: rows of 23,040 bytes; 4320 / 24 = 180 rows (4.1 MB) per strip.
    const StripSplit big = split(7680, 4320, 0, 3, 8 * kGiB);
    EXPECT_EQ(big.strip_rows, 180);
    EXPECT_EQ(big.strips, 24);
    EXPECT_EQ(big.rows, std::vector<int>(24, 180));
    EXPECT_EQ(big.in_flight, 3);
    // 1000 x 700 RGB (2.1 MB in all): strips of at least 2 MiB leave one strip, one slot.
    const StripSplit small = split(1000, 700, 0, 3, 8 * kGiB);
    EXPECT_EQ(small.rows, std::vector<int>{700});
    EXPECT_EQ(small.in_flight, 1);
    // 3000 x 700 RGB (6.3 MB): 2 MiB strips of 234 rows, the last taking what is left.
    const StripSplit three = split(3000, 700, 0, 3, 8 * kGiB);
    EXPECT_EQ(three.rows, (std::vector<int>{234, 234, 232}));
    EXPECT_EQ(sum(three.rows), 700);
}

TEST(StripSplit, AskedForStripsAreSplitEvenlyAndNeverBelowOneRow) {
    EXPECT_EQ(split(1000, 700, 7, 3, kGiB).strips, 7);
    EXPECT_EQ(split(1000, 700, 7, 3, kGiB).rows, std::vector<int>(7, 100));
    EXPECT_EQ(split(1000, 700, 3, 3, kGiB).rows, (std::vector<int>{234, 234, 232}));
    const StripSplit many = split(1000, 700, 1000, 5, kGiB);  // more strips than rows
    EXPECT_EQ(many.strip_rows, 1);
    EXPECT_EQ(many.strips, 700);
    EXPECT_EQ(many.in_flight, 5);
    const StripSplit one = split(1000, 700, 1, 3, kGiB);
    EXPECT_EQ(one.strips, 1);
    EXPECT_EQ(one.in_flight, 1);
}

TEST(StripSplit, TheBudgetSetsTheStripHeight) {
    // 1 MiB for 3 in flight: a slot (strip input and output, halo rows included) of about 340 KiB.
    const StripSplit tight = split(1000, 700, 0, 3, std::size_t{1} << 20);
    EXPECT_GT(tight.strips, 6);
    EXPECT_LT(tight.strip_rows, 100);
    // Too small for a strip of one row, or for the strips asked for: clear errors.
    try {
        split(1000, 700, 0, 3, 1000);
        FAIL() << "a 1000-byte budget was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
    }
    EXPECT_THROW(split(1000, 700, 1, 3, std::size_t{1} << 20), Error);
    // One strip needs one slot, whatever in_flight says: 5 MiB holds the whole image once (about
    // 4.3 MB in and out), not three times.
    EXPECT_EQ(split(1000, 700, 1, 3, std::size_t{5} << 20).rows, std::vector<int>{700});
    EXPECT_EQ(split(1000, 700, 0, 3, std::size_t{5} << 20).rows, std::vector<int>{700});  // automatic: the same
    EXPECT_THROW(split(1000, 700, 0, 0, kGiB), Error);   // in flight 1..16
    EXPECT_THROW(split(1000, 700, 0, 17, kGiB), Error);
    EXPECT_THROW(split(1000, 700, -1, 3, kGiB), Error);  // strips >= 0
}

TEST(StripSplit, AVariantsScratchCountsAgainstTheBudget) {
    // conv.separable_2pass keeps an fp32 intermediate per strip: the same budget holds shorter strips.
    const StripSplit plain = split(1000, 700, 0, 3, std::size_t{4} << 20, "conv.halo_tiled");
    const StripSplit scratch = split(1000, 700, 0, 3, std::size_t{4} << 20, "conv.separable_2pass");
    EXPECT_LT(scratch.strip_rows, plain.strip_rows);
}

}  // namespace
}  // namespace klab
