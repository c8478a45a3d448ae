// The run-time lookup ladder of the tuning cache: exact, nearest size, same compute capability,
// the variant's default; and the restamp of records tuned before the code hash.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "autotune/tuning_record_json.hpp"
#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------------------------
// Lookup levels, with SpaceVariant (blocks narrower than 8 refused) named as the records say.

class LookupVariant : public SpaceVariant {
public:
    std::string name() const override { return "conv.test"; }
};

TEST(Lookup, ExactThenNearestSizeThenSameComputeCapabilityThenDefault) {
    TuningCache cache;
    cache.merge(record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4));
    cache.merge(record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2));
    cache.merge(record(h100(), "conv.test", "720p/5x5/c3/aos", 16, 16));
    cache.merge(record(h200(), "conv.test", "HD/7x7/c3/aos", 64, 2, "old-hash"));  // another source
    cache.merge(record(h200(), "conv.test", "HD/9x9/c3/aos", 4, 64));              // a shape the variant refuses
    cache.merge(record(h200(), "conv.other", "HD/11x11/c3/aos", 64, 4));
    const LookupVariant v;
    const auto problem = [](int w, int h, int k) {
        return convolve_problem({w, h, 3, Layout::aos}, masks::gaussian(k), Border{BorderMode::replicate, 0});
    };
    const auto check = [&](const Problem& p, const GpuIdentity& gpu, LookupLevel level, const std::string& shape) {
        const Lookup l = lookup(cache, v, {"hash", ""}, p, gpu);
        EXPECT_EQ(l.level, level) << to_string(p) << ": " << l.explanation;
        EXPECT_EQ(to_string(l.shape), shape) << to_string(p) << ": " << l.explanation;
        return l;
    };
    const Lookup exact = check(problem(1920, 1080, 3), h200(), LookupLevel::exact, "64x4 outputs=1");
    EXPECT_NE(exact.explanation.find("exact problem class on this GPU"), std::string::npos) << exact.explanation;
    ASSERT_NE(exact.record, nullptr);
    check(problem(1280, 720, 3), h200(), LookupLevel::nearest_size, "64x4 outputs=1");      // 720p: HD is nearest
    check(problem(3840, 2160, 3), h200(), LookupLevel::nearest_size, "128x2 outputs=1");    // 4K: HD and 8K tie, larger wins
    check(problem(7000, 4000, 3), h200(), LookupLevel::exact, "128x2 outputs=1");           // in the 8K bucket
    check(problem(1280, 720, 5), h200(), LookupLevel::same_compute_capability, "16x16 outputs=1");  // only the H100 has 5x5
    check(problem(1920, 1080, 3), h200(14000), LookupLevel::same_compute_capability, "64x4 outputs=1");  // another driver
    GpuIdentity ada{"NVIDIA L4", 8, 9, 58, 13000, 13000};
    check(problem(1920, 1080, 3), ada, LookupLevel::variant_default, "32x8 outputs=1");
    const Lookup stale = check(problem(1920, 1080, 7), h200(), LookupLevel::variant_default, "32x8 outputs=1");
    EXPECT_NE(stale.explanation.find("another source"), std::string::npos) << stale.explanation;
    check(problem(1920, 1080, 9), h200(), LookupLevel::variant_default, "32x8 outputs=1");  // 4x64 refused
    check(problem(1920, 1080, 11), h200(), LookupLevel::variant_default, "32x8 outputs=1");  // another variant's
    const Problem rgba = convolve_problem({1920, 1080, 4, Layout::aos}, masks::gaussian(3), Border{});
    check(rgba, h200(), LookupLevel::variant_default, "32x8 outputs=1");  // channels differ
}

TEST(Lookup, AtTheComputeCapabilityLevelTheSameModelComesFirst) {
    TuningCache cache;
    cache.merge(record(h100(), "conv.test", "HD/3x3/c3/aos", 64, 4));   // another model, exact class
    cache.merge(record(h200(), "conv.test", "4K/3x3/c3/aos", 16, 16));  // this model, older driver, nearest size
    const LookupVariant v;
    const Problem p = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const Lookup l = lookup(cache, v, {"hash", ""}, p, h200(14000));
    EXPECT_EQ(l.level, LookupLevel::same_compute_capability);
    EXPECT_EQ(to_string(l.shape), "16x16 outputs=1") << l.explanation;
}

TEST(Lookup, ARefusedBestShapeFallsBackToTheRecordsNextOne) {
    TuningCache cache;
    TuningRecord r = record(h200(), "conv.test", "HD/3x3/c3/aos", 4, 64);  // refused: narrower than 8
    r.top[1].shape = LaunchShape{8, 32, {{"outputs", 1}}};
    cache.merge(r);
    TuningRecord stale = record(h200(), "conv.test", "HD/3x3/c3/aos", 32, 4, "old-hash");
    stale.requested_min_occupancy = 0.5;  // kept beside the first (another rule)
    cache.merge(stale);
    ASSERT_EQ(cache.records().size(), 2u);
    const LookupVariant v;
    const Problem p = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const Lookup l = lookup(cache, v, {"hash", ""}, p, h200());
    EXPECT_EQ(l.level, LookupLevel::exact);
    EXPECT_EQ(to_string(l.shape), "8x32 outputs=1") << l.explanation;
    EXPECT_NE(l.explanation.find("minimum occupancy 100%"), std::string::npos) << l.explanation;
    // The stale record of this class is named, and only it.
    EXPECT_NE(l.explanation.find("1 record(s) of this class were tuned with another source"), std::string::npos) << l.explanation;
}

// A record is current when it carries the hash of the variant's code (what the tuner writes) or,
// where the build gives one, the hash of its files' whole text (records tuned before comment-only
// lines were left out of the hash); any other hash is another source's.
TEST(Lookup, ARecordOfTheCodeHashOrOfTheFullTextHashIsCurrent) {
    TuningCache cache;
    cache.merge(record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4, "full-text"));
    cache.merge(record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2, "code"));
    cache.merge(record(h200(), "conv.test", "HD/5x5/c3/aos", 16, 16, "older"));
    cache.merge(record(h200(), "conv.test", "HD/7x7/c3/aos", 8, 32, ""));
    const LookupVariant v;
    const auto shape_for = [&](const SourceHashes& source, int w, int h, int k) {
        const Problem p = convolve_problem({w, h, 3, Layout::aos}, masks::gaussian(k), Border{});
        const Lookup l = lookup(cache, v, source, p, h200());
        return to_string(l.shape) + " from " + to_string(l.level);
    };
    const SourceHashes both{"code", "full-text"};
    EXPECT_EQ(shape_for(both, 1920, 1080, 3), "64x4 outputs=1 from exact problem class on this GPU");
    EXPECT_EQ(shape_for(both, 7680, 4320, 3), "128x2 outputs=1 from exact problem class on this GPU");
    EXPECT_EQ(shape_for(both, 1920, 1080, 5), "32x8 outputs=1 from the variant's default shape");  // another source
    // Without a full-text hash only the code hash is current, and an empty recorded hash never is.
    const SourceHashes code_only{"code", ""};
    EXPECT_EQ(shape_for(code_only, 1920, 1080, 3), "128x2 outputs=1 from same GPU, nearest size");
    EXPECT_EQ(shape_for(code_only, 1920, 1080, 7), "32x8 outputs=1 from the variant's default shape");
    EXPECT_TRUE(both.current("code"));
    EXPECT_TRUE(both.current("full-text"));
    EXPECT_FALSE(both.current("older"));
    EXPECT_FALSE(code_only.current(""));
}

// Records of this GPU that carry a variant's full-text hash were tuned on its sources as they are
// now: klab tune --missing-only restamps them with the code hash, and nothing else in them.
// Records of the code hash, of an older source, of another GPU or of a variant the build lacks
// stay as they are.
TEST(Restamp, OnlyThisGpusRecordsOfTheFullTextHashTakeTheCodeHash) {
    TuningCache cache;
    TuningRecord full_text = record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4, "full-text");
    full_text.tuned_at = "2026-11-20T10:00:00Z";
    full_text.klab_version = "abc1234";
    cache.merge(full_text);
    cache.merge(record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2, "code"));
    cache.merge(record(h200(), "conv.test", "HD/5x5/c3/aos", 16, 16, "older"));
    cache.merge(record(h100(), "conv.test", "HD/7x7/c3/aos", 8, 32, "full-text"));
    cache.merge(record(h200(), "conv.gone", "HD/9x9/c3/aos", 8, 32, "full-text"));
    cache.merge(record(h200(), "conv.no_full_text", "HD/3x3/c3/aos", 8, 32, ""));  // no full-text hash to match
    cache.merge(record(h200(), "conv.same", "HD/3x3/c3/aos", 8, 32, "same"));  // code and full text hash alike
    const auto hashes_of = [](const std::string& name) -> std::optional<SourceHashes> {
        if (name == "conv.test") return SourceHashes{"code", "full-text"};
        if (name == "conv.no_full_text") return SourceHashes{"code", ""};
        if (name == "conv.same") return SourceHashes{"same", "same"};
        return std::nullopt;
    };
    const std::vector<TuningRecord> restamped = restamped_with_code_hash(cache, h200(), hashes_of);
    ASSERT_EQ(restamped.size(), 1u);
    TuningRecord expected = full_text;
    expected.source_hash = "code";
    EXPECT_EQ(record_json(restamped[0]), record_json(expected));  // the whole record, field by field
    // Another driver is another GPU identity.
    EXPECT_TRUE(restamped_with_code_hash(cache, h200(14000), hashes_of).empty());

    // Merged, the restamped record replaces the old one and stays current once the text changes
    // (the file's side: Cache.RestampingRewritesOnlyThisGpusRecordsOfTheFullTextHash).
    cache.merge(restamped[0]);
    const Problem hd = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const LookupVariant v;
    const Lookup after_a_comment_edit = lookup(cache, v, {"code", "edited-full-text"}, hd, h200());
    EXPECT_EQ(after_a_comment_edit.level, LookupLevel::exact) << after_a_comment_edit.explanation;
    EXPECT_TRUE(restamped_with_code_hash(cache, h200(), hashes_of).empty());
}

// A record written before the variant's tuning space changed (a parameter added, renamed or its
// values narrowed) may hold shapes that prepare() would refuse: the lookup passes over them as over
// shapes check_shape refuses, to the record's next shape, else to the next level.
TEST(Lookup, ShapesWhoseParametersTheSpaceDoesNotDeclareArePassedOver) {
    TuningCache cache;
    TuningRecord hd = record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4);
    hd.top[0].shape = LaunchShape{64, 4, {{"rows", 1}}};     // a parameter the space does not declare
    hd.top[1].shape = LaunchShape{64, 8, {{"outputs", 2}}};  // usable
    cache.merge(hd);
    TuningRecord k8 = record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2);
    k8.top[0].shape = LaunchShape{128, 2, {}};                // no parameter at all
    k8.top[1].shape = LaunchShape{128, 4, {{"outputs", 3}}};  // a value the space does not list
    cache.merge(k8);
    const LookupVariant v;
    const auto shape_for = [&](int w, int h) {
        const Problem p = convolve_problem({w, h, 3, Layout::aos}, masks::gaussian(3), Border{});
        const Lookup l = lookup(cache, v, {"hash", ""}, p, h200());
        EXPECT_FALSE(parameter_mismatch(v.tuning_space(), l.shape)) << l.explanation;
        return to_string(l.shape) + " from " + to_string(l.level);
    };
    EXPECT_EQ(shape_for(1920, 1080), "64x8 outputs=2 from exact problem class on this GPU");
    // No usable shape in the 8K record: the nearest size with one (HD) instead.
    EXPECT_EQ(shape_for(7680, 4320), "64x8 outputs=2 from same GPU, nearest size");
}

class SobelLookupVariant : public SpaceVariant {
public:
    std::string name() const override { return "sobel.test"; }
    Operation op() const override { return Operation::sobel; }
    Support supports(const Problem&) const override { return Support::yes(); }
};

// Sobel and integral records go through the same ladder as convolutions', beside them in one cache,
// and a record of one operation is never taken for another's problem.
TEST(Lookup, SobelAndIntegralRecordsFollowTheSameLadder) {
    TuningCache cache;
    cache.merge(record(h200(), "sobel.test", "sobel/8K/c1/aos", 128, 2));
    cache.merge(record(h200(), "sobel.test", "sobel/HD/c3/aos", 64, 4));
    cache.merge(record(h200(), "sobel.test", "HD/3x3/c1/aos", 16, 16));  // a convolution class of the same name: never used
    const SobelLookupVariant v;
    const auto check = [&](ImageShape shape, LookupLevel level, const std::string& expected) {
        const Lookup l = lookup(cache, v, {"hash", ""}, op_problem(Operation::sobel, shape), h200());
        EXPECT_EQ(l.level, level) << l.explanation;
        EXPECT_EQ(to_string(l.shape), expected) << l.explanation;
    };
    check({7680, 4320, 1, Layout::aos}, LookupLevel::exact, "128x2 outputs=1");
    check({3840, 2160, 1, Layout::aos}, LookupLevel::nearest_size, "128x2 outputs=1");  // 4K: the gray records are 8K only
    check({1920, 1080, 3, Layout::aos}, LookupLevel::exact, "64x4 outputs=1");
    check({1920, 1080, 1, Layout::soa}, LookupLevel::variant_default, "32x8 outputs=1");  // no gray SoA record
}

}  // namespace
}  // namespace klab::autotune
