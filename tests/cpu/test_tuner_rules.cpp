// The tuner's rules: statistics of the samples, the ranking and its ties, the cost of the
// occupancy rule and the minimum occupancy applied.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------------------------

TEST(Statistics, QuartilesInterpolateLikeNumpy) {
    const Quartiles q = quartiles({4.0, 1.0, 3.0, 2.0});
    EXPECT_DOUBLE_EQ(q.q1, 1.75);
    EXPECT_DOUBLE_EQ(q.median, 2.5);
    EXPECT_DOUBLE_EQ(q.q3, 3.25);
    EXPECT_DOUBLE_EQ(q.relative_spread(), 1.5 / 2.5);
    EXPECT_DOUBLE_EQ(quantile({7.0}, 0.5), 7.0);
    EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0, 5.0}, 0.5), 3.0);
    test::expect_error([] { quantile({}, 0.5); }, "no samples");
}

TEST(Ranking, TiesWithinOnePercentPreferTheDefaultThenFewerThreadsThenNarrower) {
    const std::vector<MeasuredCandidate> m = {measured(64, 8, 100.5), measured(32, 4, 100.9), measured(16, 8, 100.0),
                                              measured(32, 8, 100.8), measured(8, 8, 99.0 * 1.5)};
    // Fastest 100.0; all but the last within 1%. Default 32x8 first; then 128 threads (16x8 before
    // 32x4: narrower), then 512.
    const std::vector<std::size_t> order = rank_candidates(m, LaunchShape{32, 8, {}}, 0.01);
    EXPECT_EQ(order, (std::vector<std::size_t>{3, 2, 1, 0, 4}));
    // Without the default among them: fewer threads first.
    EXPECT_EQ(rank_candidates(m, LaunchShape{4, 4, {}}, 0.01), (std::vector<std::size_t>{2, 1, 3, 0, 4}));
    // With no tolerance and no floor, by median alone.
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.0, 0.0), (std::vector<std::size_t>{2, 0, 3, 1, 4}));
}

// At a few microseconds, 1% is below the CUDA events' documented 0.5 us resolution: a gap up to
// twice that is a tie where the quartiles overlap (the samples do not resolve it).
TEST(Ranking, ShortKernelsTieWithinTwiceTheEventResolutionWhereTheQuartilesOverlap) {
    std::vector<MeasuredCandidate> m = {measured(64, 4, 10.0), measured(32, 8, 10.9), measured(16, 4, 11.1)};
    m[0].us = {9.5, 10.0, 11.0};  // samples in steps of the resolution
    m[1].us = {10.5, 10.9, 11.0};
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.01), (std::vector<std::size_t>{1, 0, 2}));
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.01, 0.0), (std::vector<std::size_t>{0, 1, 2}));
}

// Beyond 1%, a gap that the quartiles resolve is no tie, however small against the floor: on the
// H200, 26.43 us (quartiles 26.34 ... 26.56) against 27.33 us (27.07 ... 27.58), 1700 samples each.
TEST(Ranking, AGapBeyondTheToleranceThatTheQuartilesResolveIsNoTie) {
    std::vector<MeasuredCandidate> m = {measured(32, 2, 27.33, 1.0, {{"rows", 14}}), measured(32, 2, 26.43, 1.0, {{"rows", 22}})};
    m[0].us = {27.07, 27.33, 27.58};
    m[1].us = {26.34, 26.43, 26.56};
    const LaunchShape default_shape{64, 4, {{"rows", 16}}};
    EXPECT_EQ(rank_candidates(m, default_shape, 0.01), (std::vector<std::size_t>{1, 0}));
    // Were their quartiles to overlap, the tie-break would take the one enumerated first.
    m[0].us.q1 = 26.5;
    EXPECT_EQ(rank_candidates(m, default_shape, 0.01), (std::vector<std::size_t>{0, 1}));
}

// After the finalists' interleaved pass, the figures of that pass decide: a candidate left out of
// it (slower in the first pass) follows them even where its first-pass median is lower, and never
// ties with them.
TEST(Ranking, ReMeasuredFinalistsComeBeforeCandidatesOfTheFirstPassOnly) {
    std::vector<MeasuredCandidate> m = {measured(32, 2, 26.0), measured(64, 2, 26.8), measured(32, 4, 27.0), measured(64, 4, 26.9)};
    m[1].remeasured = true;
    m[2].remeasured = true;
    // 64x2 (26.8) and 32x4 (27.0) are within 1%: a tie, the narrower block first. 32x2 and the
    // default 64x4 were not re-measured: they follow by median, the default not first.
    EXPECT_EQ(rank_candidates(m, LaunchShape{64, 4, {}}, 0.01), (std::vector<std::size_t>{2, 1, 0, 3}));
    // Without a second pass, every candidate's figure counts.
    for (MeasuredCandidate& c : m) c.remeasured = false;
    EXPECT_EQ(rank_candidates(m, LaunchShape{64, 4, {}}, 0.01), (std::vector<std::size_t>{0, 1, 3, 2}));
}

TEST(RuleCost, IsTheFastestAtTheMinimumOverTheFastestOverall) {
    const std::vector<MeasuredCandidate> at_minimum = {measured(32, 8, 104.0), measured(64, 4, 110.0)};
    const std::vector<MeasuredCandidate> below = {measured(128, 4, 100.0, 0.75), measured(8, 8, 120.0, 0.5)};
    EXPECT_NEAR(*rule_cost(at_minimum, below, true), 0.04, 1e-12);
    // Nothing faster below the minimum: it costs nothing, whatever the tie-break picked.
    EXPECT_EQ(*rule_cost(at_minimum, {measured(8, 8, 120.0, 0.5)}, true), 0.0);
    EXPECT_EQ(*rule_cost(at_minimum, {}, true), 0.0);
    // Where finalists were re-measured, only their figures count (one pass against another).
    std::vector<MeasuredCandidate> at_min = {measured(32, 8, 104.0), measured(64, 4, 101.0)};
    std::vector<MeasuredCandidate> below_min = {measured(128, 4, 100.0, 0.75), measured(8, 8, 95.0, 0.5)};
    at_min[0].remeasured = below_min[0].remeasured = true;
    EXPECT_NEAR(*rule_cost(at_min, below_min, true), 0.04, 1e-12);
    // No wider set to compare with, or nothing at the minimum: no figure.
    EXPECT_FALSE(rule_cost(at_minimum, below, false));
    EXPECT_FALSE(rule_cost({}, below, true));
}

TEST(AppliedMinimum, IsTheRequestedOneOrTheHighestReached) {
    const SpaceVariant variant;
    const auto forty = [](const std::string&) { return std::optional<KernelResources>(resources(40)); };
    // Every shape at 40 registers: at most 75% on an H200.
    const SearchSpace space = search_space(variant, hd_problem(), 0.5, offline_oracle(model("H200"), forty));
    EXPECT_EQ(applied_min_occupancy(space, 1.0), 0.75);
    EXPECT_EQ(applied_min_occupancy(space, 0.6), 0.6);
    const SearchSpace none = search_space(variant, hd_problem(), 0.9, offline_oracle(model("H200"), forty));
    test::expect_error([&] { applied_min_occupancy(none, 1.0); }, "no candidate reaches 90% occupancy");
}

}  // namespace
}  // namespace klab::autotune
