// `klab compare OLD NEW` on synthetic Google Benchmark JSON (compare_bench_json.hpp): the verdicts
// (same, faster, slower, ambiguous, added, removed, error), the exit codes (0, 1 for a regression, 2
// for refused input), the Mann-Whitney p-values against hand-enumerated ones and the notes for too
// few repetitions. Run through the CLI, as CI runs it; --json gives the rows.
// test_compare_evidence.cpp runs it on real H200 data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cpu/compare_bench_json.hpp"

namespace klab {
namespace {

using namespace compare_fixtures;

TEST_F(CompareCli, IdenticalRunsAreNoRegression) {
    const std::string text = bench_json(kH200, three_benches());
    int code = -1;
    const nlohmann::json doc = compare_json(text, text, code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(doc.value("regressed", true), false);
    ASSERT_EQ(doc["rows"].size(), 3u) << doc.dump(2);
    for (const nlohmann::json& row : doc["rows"]) {
        EXPECT_EQ(row.value("verdict", ""), "same") << row.dump();
        EXPECT_DOUBLE_EQ(row.value("change", -1.0), 0.0) << row.dump();
        EXPECT_DOUBLE_EQ(row.value("p_value", -1.0), 1.0) << row.dump();
        EXPECT_EQ(row.value("old_repetitions", 0), 5);  // the aggregate rows are not repetitions
    }
    const test::CommandResult table = compare_table(text, text);
    EXPECT_EQ(table.exit_code, 0) << table.output;
    EXPECT_NE(table.output.find("no regression (0 slower, 0 faster, 3 same"), std::string::npos) << table.output;
}

TEST_F(CompareCli, TenPercentSlowerWithTightRepetitionsFails) {
    std::vector<Bench> slower = three_benches();
    slower[1].samples = scaled(slower[1].samples, 1.10);
    const std::string old_text = bench_json(kH200, three_benches());
    const std::string new_text = bench_json(kH200, slower);
    int code = -1;
    const nlohmann::json doc = compare_json(old_text, new_text, code);
    EXPECT_EQ(code, 1);
    EXPECT_EQ(doc.value("regressed", false), true);
    EXPECT_EQ(verdict_of(doc, kSobel), "slower");
    EXPECT_NEAR(row_of(doc, kSobel).value("change", 0.0), 0.10, 1e-9);
    EXPECT_NEAR(p_of(doc, kSobel), 2.0 / 252.0, 1e-12);  // fully separated 5 and 5: the smallest p
    EXPECT_EQ(verdict_of(doc, kHalo), "same");
    EXPECT_EQ(verdict_of(doc, kCopy), "same");

    // The table comes first, then the verdict line naming the regression.
    const test::CommandResult table = compare_table(old_text, new_text);
    EXPECT_EQ(table.exit_code, 1) << table.output;
    const std::size_t row = table.output.find(kSobel);
    const std::size_t verdict = table.output.find("REGRESSION: 1 benchmark(s) slower");
    ASSERT_NE(row, std::string::npos) << table.output;
    ASSERT_NE(verdict, std::string::npos) << table.output;
    EXPECT_LT(row, verdict) << table.output;
    EXPECT_NE(table.output.find("+10.0%"), std::string::npos) << table.output;
    // ... and, however long the table, the failing row again just above the verdict line.
    const std::size_t failing = table.output.find("failing the gate:\n  " + std::string(kSobel) + "  ");
    ASSERT_NE(failing, std::string::npos) << table.output;
    EXPECT_LT(row, failing);
    EXPECT_LT(failing, verdict);
}

TEST_F(CompareCli, NoisyRepetitionsAreAmbiguousNotAFailure) {
    // A 10% median shift inside a +-25% spread: the repetitions overlap.
    const std::vector<double> noisy_old = {80.0, 92.0, 100.0, 112.0, 125.0};
    const std::vector<double> noisy_new = scaled(noisy_old, 1.10);
    int code = -1;
    const nlohmann::json doc =
        compare_json(bench_json(kH200, {{kHalo, noisy_old, ""}}), bench_json(kH200, {{kHalo, noisy_new, ""}}), code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(doc, kHalo), "ambiguous");
    EXPECT_NEAR(row_of(doc, kHalo).value("change", 0.0), 0.10, 1e-9);
    EXPECT_NEAR(p_of(doc, kHalo), 138.0 / 252.0, 1e-12);  // enumerated by hand over the 252 splits
    EXPECT_NE(row_of(doc, kHalo).value("note", "").find("run more repetitions"), std::string::npos) << doc.dump(2);
}

TEST_F(CompareCli, FilesOfTwoGpusAreRefused) {
    const test::CommandResult r = compare_table(bench_json(kH200, three_benches()), bench_json(kH100, three_benches()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("klab: refusing to compare"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(kH200), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(kH100), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("no regression"), std::string::npos) << r.output;  // no table either

    // A file without a key is refused too, and the message says which one lacks it.
    const test::CommandResult missing = compare_table(bench_json(kH200, three_benches()), bench_json("", three_benches()));
    EXPECT_EQ(missing.exit_code, 2) << missing.output;
    EXPECT_NE(missing.output.find("no klab_gpu_key"), std::string::npos) << missing.output;
    EXPECT_NE(missing.output.find(kH200), std::string::npos) << missing.output;
}

TEST_F(CompareCli, FasterIsReportedAndPasses) {
    std::vector<Bench> faster = three_benches();
    faster[0].samples = scaled(faster[0].samples, 0.80);
    int code = -1;
    const nlohmann::json doc = compare_json(bench_json(kH200, three_benches()), bench_json(kH200, faster), code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(doc, kHalo), "faster");
    EXPECT_NEAR(row_of(doc, kHalo).value("change", 0.0), -0.20, 1e-9);
    EXPECT_EQ(verdict_of(doc, kSobel), "same");
}

TEST_F(CompareCli, SlowerUnderTheThresholdIsNotAFailure) {
    std::vector<Bench> slower = three_benches();
    slower[0].samples = scaled(slower[0].samples, 1.03);  // significant (separated) but 3% < 5%
    const std::string old_text = bench_json(kH200, three_benches());
    const std::string new_text = bench_json(kH200, slower);
    int code = -1;
    const nlohmann::json doc = compare_json(old_text, new_text, code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(doc, kHalo), "same");
    EXPECT_LT(p_of(doc, kHalo), 0.05);
    EXPECT_NE(row_of(doc, kHalo).value("note", "").find("within the allowance"), std::string::npos) << doc.dump(2);
    // The same files with a 2% threshold: now a regression.
    const nlohmann::json strict = compare_json(old_text, new_text, code, "--threshold 2");
    EXPECT_EQ(code, 1);
    EXPECT_EQ(verdict_of(strict, kHalo), "slower");
    EXPECT_DOUBLE_EQ(strict.value("threshold_percent", 0.0), 2.0);
}

TEST_F(CompareCli, AddedBenchmarksPassRemovedOnesFailTheGate) {
    // A benchmark gone from NEW could hide a regression (a shorter run committed over the full
    // one): it fails the gate unless the commit accepts it; an added one passes.
    const std::vector<Bench> old_benches = {{kHalo, tight(250.0), ""}, {kSobel, tight(900.0), ""}};
    const std::vector<Bench> new_benches = {{kHalo, tight(250.0), ""}, {kCopy, tight(120.0), ""}};
    int code = -1;
    const nlohmann::json doc = compare_json(bench_json(kH200, old_benches), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 1);
    EXPECT_EQ(verdict_of(doc, kHalo), "same");
    EXPECT_EQ(verdict_of(doc, kCopy), "added");
    EXPECT_EQ(verdict_of(doc, kSobel), "removed");
    const test::CommandResult table = compare_table(bench_json(kH200, old_benches), bench_json(kH200, new_benches));
    EXPECT_EQ(table.exit_code, 1) << table.output;
    EXPECT_NE(table.output.find("1 added, 1 removed"), std::string::npos) << table.output;
    // Only added: passes.
    const nlohmann::json added = compare_json(bench_json(kH200, {{kHalo, tight(250.0), ""}}), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 0) << added.dump(2);
}

TEST_F(CompareCli, ASlowerBaselineIsShownAndWarnedAboutNotGated) {
    // NPP and the copy floor measure the machine: 10% slower, tight, is a verdict and a warning,
    // not a failure; the same change on a klab row fails.
    // The end-to-end link floors (e2e.upload/download/bidirectional) measure the machine too.
    const std::vector<Bench> old_benches = {{kHalo, tight(250.0), ""}, {kCopy, tight(120.0), ""},
                                            {"npp.gauss/8K/rgb.aos/gauss9/replicate", tight(614.0), ""},
                                            {"e2e.bidirectional/8K/rgb.aos/copy/none", tight(2030.0), ""}};
    std::vector<Bench> new_benches = old_benches;
    for (std::size_t i = 1; i < new_benches.size(); ++i) new_benches[i].samples = scaled(new_benches[i].samples, 1.10);
    int code = -1;
    const nlohmann::json doc = compare_json(bench_json(kH200, old_benches), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 0) << doc.dump(2);
    EXPECT_EQ(verdict_of(doc, kCopy), "slower");
    EXPECT_NE(row_of(doc, kCopy).value("note", "").find("a baseline: not gated"), std::string::npos) << doc.dump(2);
    const test::CommandResult table = compare_table(bench_json(kH200, old_benches), bench_json(kH200, new_benches));
    EXPECT_EQ(table.exit_code, 0) << table.output;
    EXPECT_NE(table.output.find("warning: 3 baseline row(s)"), std::string::npos) << table.output;
    EXPECT_NE(table.output.find("no regression (3 slower (3 not gated), 0 faster"), std::string::npos) << table.output;
    EXPECT_EQ(table.output.find("failing the gate:"), std::string::npos) << table.output;
    new_benches[0].samples = scaled(new_benches[0].samples, 1.10);
    compare_json(bench_json(kH200, old_benches), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 1);
    const test::CommandResult failed = compare_table(bench_json(kH200, old_benches), bench_json(kH200, new_benches));
    EXPECT_NE(failed.output.find("REGRESSION: 1 benchmark(s) slower beyond the repetitions' noise and their allowance, gone from "
                                 "NEW or failed in NEW (4 slower (3 not gated), 0 faster"),
              std::string::npos)
        << failed.output;
}

TEST_F(CompareCli, ANewFileWithoutTimesIsRefused) {
    const test::CommandResult r = compare_table(bench_json(kH200, three_benches()), bench_json(kH200, {}));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("holds no benchmark with a time"), std::string::npos) << r.output;
}

TEST_F(CompareCli, TooFewRepetitionsCannotJudgeTheNoiseAndSaySo) {
    // One repetition each, 10% slower: no test can tell, so not a failure, and the note says why.
    int code = -1;
    const nlohmann::json one =
        compare_json(bench_json(kH200, {{kHalo, {250.0}, ""}}), bench_json(kH200, {{kHalo, {275.0}, ""}}), code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(one, kHalo), "ambiguous");
    EXPECT_DOUBLE_EQ(p_of(one, kHalo), 1.0);
    EXPECT_NE(row_of(one, kHalo).value("note", "").find("too few repetitions to judge the noise (1 and 1"), std::string::npos)
        << one.dump(2);

    // Three each, fully separated: p = 2/20 = 0.1 at best, still too few.
    const nlohmann::json three = compare_json(bench_json(kH200, {{kHalo, {249.0, 250.0, 251.0}, ""}}),
                                              bench_json(kH200, {{kHalo, {274.0, 275.0, 276.0}, ""}}), code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(three, kHalo), "ambiguous");
    EXPECT_NEAR(p_of(three, kHalo), 0.1, 1e-12);
    EXPECT_NE(row_of(three, kHalo).value("note", "").find("too few repetitions"), std::string::npos) << three.dump(2);
    // The verdict "no regression" alone would read as a pass: a warning says the gate could not fail.
    ASSERT_EQ(three["warnings"].size(), 1u) << three.dump(2);
    EXPECT_EQ(three["warnings"][0].get<std::string>(),
              "1 gated row(s) have too few repetitions for the test to find any change, so they cannot fail the gate (their "
              "notes say how many are needed)");

    // Four each, fully separated: p = 2/70 < 0.05, enough.
    const nlohmann::json four = compare_json(bench_json(kH200, {{kHalo, {249.0, 250.0, 250.5, 251.0}, ""}}),
                                             bench_json(kH200, {{kHalo, {274.0, 275.0, 275.5, 276.0}, ""}}), code);
    EXPECT_EQ(code, 1);
    EXPECT_EQ(verdict_of(four, kHalo), "slower");
    EXPECT_TRUE(four["warnings"].empty()) << four.dump(2);
    EXPECT_NEAR(p_of(four, kHalo), 2.0 / 70.0, 1e-12);
    EXPECT_EQ(row_of(four, kHalo).value("note", "?"), "");
}

TEST_F(CompareCli, ABenchmarkFailedInNewFailsTheGateFailedInOldDoesNot) {
    std::vector<Bench> failed = three_benches();
    failed[1].error = "cudaErrorIllegalAddress: an illegal memory access was encountered";
    int code = -1;
    const nlohmann::json doc = compare_json(bench_json(kH200, three_benches()), bench_json(kH200, failed), code);
    EXPECT_EQ(code, 1);
    EXPECT_EQ(verdict_of(doc, kSobel), "error");
    EXPECT_NE(row_of(doc, kSobel).value("note", "").find("failed in NEW: cudaErrorIllegalAddress"), std::string::npos)
        << doc.dump(2);
    // Failed in OLD: the same.
    const nlohmann::json reverse = compare_json(bench_json(kH200, failed), bench_json(kH200, three_benches()), code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(verdict_of(reverse, kSobel), "error");
    EXPECT_NE(row_of(reverse, kSobel).value("note", "").find("failed in OLD"), std::string::npos) << reverse.dump(2);
}

TEST_F(CompareCli, ABenchmarkOnlyInNewThatFailedIsAFailureNotAnAddition) {
    const std::vector<Bench> old_benches = {{kHalo, tight(250.0), ""}};
    const std::vector<Bench> new_benches = {{kHalo, tight(250.0), ""},
                                            {kSobel, tight(900.0), "cudaErrorIllegalAddress: an illegal memory access was encountered"}};
    int code = -1;
    const nlohmann::json doc = compare_json(bench_json(kH200, old_benches), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 1) << doc.dump(2);
    EXPECT_EQ(verdict_of(doc, kSobel), "error");
    EXPECT_NE(row_of(doc, kSobel).value("note", "").find("only in NEW, failed: cudaErrorIllegalAddress"), std::string::npos)
        << doc.dump(2);
    // The summary counts it as failed, the same as the gate does.
    const test::CommandResult table = compare_table(bench_json(kH200, old_benches), bench_json(kH200, new_benches));
    EXPECT_EQ(table.exit_code, 1) << table.output;
    EXPECT_NE(table.output.find("1 failed, 0 added"), std::string::npos) << table.output;
}

TEST_F(CompareCli, ADifferentDriverIsAWarningNotARefusal) {
    const test::CommandResult r =
        compare_table(bench_json(kH200, three_benches(), "12.8"), bench_json(kH200, three_benches(), "13.0"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("warning: cuda_driver differs: 12.8 in OLD, 13.0 in NEW"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cuda_runtime differs"), std::string::npos) << r.output;
}

TEST_F(CompareCli, MannWhitneyPValuesMatchEnumeration) {
    // Expected values enumerate every split of the pooled samples (average ranks for ties).
    struct Case {
        std::vector<double> a, b;
        double p;
    };
    const std::vector<Case> cases = {
        {{1, 2, 2, 3, 4}, {2, 3, 4, 4, 5}, 56.0 / 252.0},  // ties across the groups
        {{10, 10, 10, 11}, {10, 11, 11, 11, 12}, 22.0 / 126.0},
        {{5, 5, 5, 5, 5}, {5, 5, 5, 5, 5}, 1.0},  // all tied
    };
    for (const Case& c : cases) {
        int code = -1;
        const nlohmann::json doc = compare_json(bench_json(kH200, {{kHalo, c.a, ""}}), bench_json(kH200, {{kHalo, c.b, ""}}), code);
        EXPECT_NEAR(p_of(doc, kHalo), c.p, 1e-12) << doc.dump(2);
    }
    // Beyond 40 samples the normal approximation: 25 and 25 fully separated is far below alpha,
    // 25 and 25 identical is 1, 25 and 25 interleaved (a shifted by half a step) is far above.
    std::vector<double> low, high, interleaved;
    for (int i = 0; i < 25; ++i) {
        low.push_back(100.0 + i * 0.1);
        high.push_back(120.0 + i * 0.1);
        interleaved.push_back(100.05 + i * 0.1);
    }
    int code = -1;
    const nlohmann::json separated = compare_json(bench_json(kH200, {{kHalo, low, ""}}), bench_json(kH200, {{kHalo, high, ""}}), code);
    EXPECT_GT(p_of(separated, kHalo), 0.0);
    EXPECT_LT(p_of(separated, kHalo), 1e-6);
    EXPECT_EQ(verdict_of(separated, kHalo), "slower");
    const nlohmann::json same = compare_json(bench_json(kH200, {{kHalo, low, ""}}), bench_json(kH200, {{kHalo, low, ""}}), code);
    EXPECT_DOUBLE_EQ(p_of(same, kHalo), 1.0);
    const nlohmann::json close =
        compare_json(bench_json(kH200, {{kHalo, low, ""}}), bench_json(kH200, {{kHalo, interleaved, ""}}), code);
    EXPECT_GT(p_of(close, kHalo), 0.5);
}

TEST_F(CompareCli, BadInputIsRefusedWithExitCodeTwo) {
    const std::string good = bench_json(kH200, three_benches());
    const test::CommandResult not_json = compare_table("this is not JSON", good);
    EXPECT_EQ(not_json.exit_code, 2) << not_json.output;
    EXPECT_NE(not_json.output.find("is not JSON"), std::string::npos) << not_json.output;
    const test::CommandResult missing = klab(fmt::format("compare {} {}", (dir_ / "absent.json").string(), write("new.json", good)));
    EXPECT_EQ(missing.exit_code, 2) << missing.output;
    EXPECT_NE(missing.output.find("cannot read"), std::string::npos) << missing.output;
    const test::CommandResult threshold = compare_table(good, good, "--threshold -1");
    EXPECT_EQ(threshold.exit_code, 2) << threshold.output;
    EXPECT_NE(threshold.output.find("--threshold"), std::string::npos) << threshold.output;
    const test::CommandResult alpha = compare_table(good, good, "--alpha 1.5");
    EXPECT_EQ(alpha.exit_code, 2) << alpha.output;
    EXPECT_NE(alpha.output.find("--alpha"), std::string::npos) << alpha.output;
}

}  // namespace
}  // namespace klab
