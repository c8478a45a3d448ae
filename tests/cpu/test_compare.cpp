// `klab compare OLD NEW` on synthetic Google Benchmark JSON (as klab-bench writes it: iteration
// rows per repetition plus the _mean/_median/_stddev/_cv aggregates): the verdicts (same, faster,
// slower, ambiguous, added, removed, error), the exit codes (0, 1 for a regression, 2 for refused
// input), the Mann-Whitney p-values against hand-enumerated ones, the notes for too few
// repetitions, the allowance at its edges (relative and absolute floors, short rows, end-to-end
// rows against the upload, learned noise), the noise file and the Markdown form. Run through the
// CLI, as CI runs it; --json gives the rows. test_compare_evidence.cpp runs it on real H200 data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cpu/compare_cli.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kH200 = "NVIDIA H200, cc 9.0, 132 SMs";
constexpr const char* kH100 = "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs";
constexpr const char* kHalo = "conv.halo_tiled/HD/rgb.aos/gauss9/replicate";
constexpr const char* kSobel = "sobel.fused/8K/gray/sobel/replicate";
constexpr const char* kCopy = "baseline.copy/8K/rgb.aos/copy/none";

struct Bench {
    std::string name;             // without "/manual_time"
    std::vector<double> samples;  // one per repetition, in us
    std::string error;            // error_message of every repetition when not empty
};

// A relative spread of +-0.4%: repetitions as tight as a quiet GPU gives.
std::vector<double> tight(double median) {
    std::vector<double> out;
    for (double f : {0.996, 0.998, 1.0, 1.002, 1.004}) out.push_back(median * f);
    return out;
}

std::vector<double> scaled(const std::vector<double>& samples, double factor) {
    std::vector<double> out;
    for (double s : samples) out.push_back(s * factor);
    return out;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// Google Benchmark's JSON for `benches`, with aggregate rows when there are repetitions.
std::string bench_json(const std::string& gpu_key, const std::vector<Bench>& benches, const std::string& driver = "13.0") {
    nlohmann::json context = {{"date", "2026-11-21T12:00:00+00:00"},
                              {"host_name", "gpu-box"},
                              {"library_build_type", "release"},
                              {"cuda_driver", driver},
                              {"cuda_runtime", "13.0"},
                              {"klab_study", "quick"}};
    if (!gpu_key.empty()) context["klab_gpu_key"] = gpu_key;
    nlohmann::json rows = nlohmann::json::array();
    int family = 0;
    for (const Bench& b : benches) {
        const std::string run_name = b.name + "/manual_time";
        const int repetitions = static_cast<int>(b.samples.size());
        for (int i = 0; i < repetitions; ++i) {
            nlohmann::json row = {{"name", run_name},
                                  {"family_index", family},
                                  {"per_family_instance_index", 0},
                                  {"run_name", run_name},
                                  {"run_type", "iteration"},
                                  {"repetitions", repetitions},
                                  {"repetition_index", i},
                                  {"threads", 1},
                                  {"iterations", 200},
                                  {"real_time", b.samples[static_cast<std::size_t>(i)]},
                                  {"cpu_time", 3.5},
                                  {"time_unit", "us"},
                                  {"bytes_per_second", 1e12},
                                  {"label", "32x8 default (no tuning record)"}};
            if (!b.error.empty()) {
                row["error_occurred"] = true;
                row["error_message"] = b.error;
            }
            rows.push_back(row);
        }
        if (repetitions > 1 && b.error.empty()) {
            const double mean = std::accumulate(b.samples.begin(), b.samples.end(), 0.0) / repetitions;
            double square_sum = 0.0;
            for (double s : b.samples) square_sum += (s - mean) * (s - mean);
            const double stddev = std::sqrt(square_sum / (repetitions - 1));
            const std::vector<std::pair<std::string, double>> aggregates = {
                {"mean", mean}, {"median", median_of(b.samples)}, {"stddev", stddev}, {"cv", stddev / mean}};
            for (const auto& [aggregate, value] : aggregates) {
                rows.push_back({{"name", run_name + "_" + aggregate},
                                {"family_index", family},
                                {"per_family_instance_index", 0},
                                {"run_name", run_name},
                                {"run_type", "aggregate"},
                                {"repetitions", repetitions},
                                {"threads", 1},
                                {"aggregate_name", aggregate},
                                {"aggregate_unit", aggregate == "cv" ? "percentage" : "time"},
                                {"iterations", repetitions},
                                {"real_time", value},
                                {"cpu_time", 3.5},
                                {"time_unit", "us"}});
            }
        }
        ++family;
    }
    return nlohmann::json{{"context", context}, {"benchmarks", rows}}.dump(2);
}

class CompareCli : public test::CompareTest {
protected:
    // `klab compare --json OLD NEW [extra]` on two texts, parsed; the exit code through `exit_code`.
    nlohmann::json compare_json(const std::string& old_text, const std::string& new_text, int& exit_code,
                                const std::string& extra = "") const {
        return compare_files(write("old.json", old_text), write("new.json", new_text), exit_code, extra);
    }

    // The table form: `klab compare OLD NEW [extra]`.
    test::CommandResult compare_table(const std::string& old_text, const std::string& new_text, const std::string& extra = "") const {
        return klab(fmt::format("compare {} {} {}", write("old.json", old_text), write("new.json", new_text), extra));
    }
};

using test::row_of;
using test::verdict_of;

double p_of(const nlohmann::json& doc, const std::string& name) {
    const nlohmann::json row = row_of(doc, name);
    return row.contains("p_value") && row["p_value"].is_number() ? row["p_value"].get<double>() : -1.0;
}

// Three benchmarks with tight repetitions; the base of most tests.
std::vector<Bench> three_benches() {
    return {{kHalo, tight(250.0), ""}, {kSobel, tight(900.0), ""}, {kCopy, tight(120.0), ""}};
}

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
    new_benches[0].samples = scaled(new_benches[0].samples, 1.10);
    compare_json(bench_json(kH200, old_benches), bench_json(kH200, new_benches), code);
    EXPECT_EQ(code, 1);
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

    // Four each, fully separated: p = 2/70 < 0.05, enough.
    const nlohmann::json four = compare_json(bench_json(kH200, {{kHalo, {249.0, 250.0, 250.5, 251.0}, ""}}),
                                             bench_json(kH200, {{kHalo, {274.0, 275.0, 275.5, 276.0}, ""}}), code);
    EXPECT_EQ(code, 1);
    EXPECT_EQ(verdict_of(four, kHalo), "slower");
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

TEST_F(CompareCli, TheAllowanceHasARelativeAndAnAbsoluteFloor) {
    // 20 us: 1.8 us is 9%, above the 5% floor, so +10% is slower and +7% is not; at 250 us the 5%
    // floor rules, and +7% is slower.
    const std::string short_row = "conv.separable_fused/HD/rgb.aos/gauss5/replicate";
    const std::string old_text = bench_json(kH200, {{short_row, tight(20.0), ""}, {kHalo, tight(250.0), ""}});
    int code = -1;
    const nlohmann::json ten = compare_json(
        old_text, bench_json(kH200, {{short_row, scaled(tight(20.0), 1.10), ""}, {kHalo, tight(250.0), ""}}), code);
    EXPECT_EQ(code, 1) << ten.dump(2);
    EXPECT_EQ(verdict_of(ten, short_row), "slower");
    EXPECT_NEAR(row_of(ten, short_row).value("allowance", 0.0), 0.09, 1e-12);
    EXPECT_NEAR(row_of(ten, kHalo).value("allowance", 0.0), 0.05, 1e-12);
    EXPECT_EQ(row_of(ten, short_row).value("class", ""), "kernel");

    const std::string seven_new = bench_json(kH200, {{short_row, scaled(tight(20.0), 1.07), ""}, {kHalo, scaled(tight(250.0), 1.07), ""}});
    const nlohmann::json seven = compare_json(old_text, seven_new, code);
    EXPECT_EQ(code, 1) << seven.dump(2);
    EXPECT_EQ(verdict_of(seven, short_row), "same");
    EXPECT_NE(row_of(seven, short_row).value("note", "").find("within the allowance"), std::string::npos) << seven.dump(2);
    EXPECT_EQ(verdict_of(seven, kHalo), "slower");

    // A wider absolute floor (3 us: 15% of 20 us) lets the short row's +10% pass.
    compare_json(old_text, bench_json(kH200, {{short_row, scaled(tight(20.0), 1.10), ""}, {kHalo, tight(250.0), ""}}), code,
                 "--threshold-us 3");
    EXPECT_EQ(code, 0);
}

TEST_F(CompareCli, RowsUnderTheMinimumAreShownNotGated) {
    // 4 us is mostly launch and event overhead: twice as slow is a verdict, not a failure.
    const std::string tiny = "conv.halo_tiled/480p/rgb.aos/gauss3/replicate";
    const std::string old_text = bench_json(kH200, {{tiny, tight(4.0), ""}});
    const std::string new_text = bench_json(kH200, {{tiny, scaled(tight(4.0), 2.0), ""}});
    int code = -1;
    const nlohmann::json doc = compare_json(old_text, new_text, code);
    EXPECT_EQ(code, 0) << doc.dump(2);
    const nlohmann::json row = row_of(doc, tiny);
    EXPECT_EQ(row.value("verdict", ""), "slower");
    EXPECT_FALSE(row.value("gated", true));
    EXPECT_FALSE(row.value("fails_gate", true));
    EXPECT_NE(row.value("note", "").find("under 5 us"), std::string::npos) << row.dump();
    // With the minimum at 3 us it is gated.
    compare_json(old_text, new_text, code, "--min-us 3");
    EXPECT_EQ(code, 1);
    // Gone from NEW it fails whatever its duration: a removal is no timing noise.
    compare_json(bench_json(kH200, {{tiny, tight(4.0), ""}, {kHalo, tight(250.0), ""}}), bench_json(kH200, {{kHalo, tight(250.0), ""}}),
                 code);
    EXPECT_EQ(code, 1);
}

TEST_F(CompareCli, EndToEndRowsAreJudgedByTheirRatioToTheUpload) {
    const std::string upload = "e2e.upload/8K/rgb.aos/copy/none";
    const std::string pipelined = "e2e.pipelined/8K/rgb.aos/gauss5/replicate";
    const std::string pageable = "e2e.pipelined.pageable/8K/rgb.aos/gauss5/replicate";
    const auto run = [&](double link, double pipeline, double host) {
        return bench_json(kH200, {{upload, scaled(tight(1820.0), link), ""},
                                  {pipelined, scaled(tight(2216.0), pipeline), ""},
                                  {pageable, scaled(tight(25000.0), host), ""}});
    };
    const std::string old_text = run(1.0, 1.0, 1.0);
    int code = -1;
    // A 30% slower link slows the pipeline as much: its ratio to the upload has not moved.
    const nlohmann::json link = compare_json(old_text, run(1.3, 1.3, 1.0), code);
    EXPECT_EQ(code, 0) << link.dump(2);
    EXPECT_EQ(row_of(link, pipelined).value("class", ""), "end_to_end");
    EXPECT_EQ(verdict_of(link, pipelined), "same");
    EXPECT_NEAR(row_of(link, pipelined).value("change", 1.0), 0.0, 1e-9);
    EXPECT_NEAR(row_of(link, pipelined).value("allowance", 0.0), 0.50, 1e-12);
    EXPECT_EQ(verdict_of(link, upload), "slower");  // a baseline: shown, not gated
    EXPECT_EQ(row_of(link, upload).value("class", ""), "baseline");

    // The pipeline 60% slower on the same link: broken, it fails; 40% is within the allowance.
    const nlohmann::json broken = compare_json(old_text, run(1.0, 1.6, 1.0), code);
    EXPECT_EQ(code, 1) << broken.dump(2);
    EXPECT_EQ(verdict_of(broken, pipelined), "slower");
    compare_json(old_text, run(1.0, 1.4, 1.0), code);
    EXPECT_EQ(code, 0);

    // Pageable rows move with the host's own memory traffic: never gated.
    const nlohmann::json host = compare_json(old_text, run(1.0, 1.0, 1.8), code);
    EXPECT_EQ(code, 0) << host.dump(2);
    EXPECT_EQ(row_of(host, pageable).value("class", ""), "baseline");
    EXPECT_EQ(verdict_of(host, pageable), "slower");

    // Without an upload row the row's own median is judged, and the note says so.
    const nlohmann::json alone = compare_json(bench_json(kH200, {{pipelined, tight(2216.0), ""}}),
                                              bench_json(kH200, {{pipelined, scaled(tight(2216.0), 1.6), ""}}), code);
    EXPECT_EQ(code, 1) << alone.dump(2);
    EXPECT_NE(row_of(alone, pipelined).value("note", "").find("no e2e.upload row"), std::string::npos) << alone.dump(2);
}

TEST_F(CompareCli, ALearnedNoiseFileWidensANoisyRowsAllowance) {
    // Two identical-code runs in which the halo row moved 6%: its allowance becomes 12%.
    std::vector<Bench> moved = three_benches();
    moved[0].samples = scaled(moved[0].samples, 1.06);
    const std::string run1 = write("run1.json", bench_json(kH200, three_benches()));
    const std::string run2 = write("run2.json", bench_json(kH200, moved));
    const std::string noise = (dir_ / "noise.json").string();
    const test::CommandResult learned = klab(fmt::format("compare --learn-noise {} {} {}", noise, run1, run2));
    ASSERT_EQ(learned.exit_code, 0) << learned.output;
    EXPECT_NE(learned.output.find("the noise of 3 rows from 2 runs"), std::string::npos) << learned.output;
    EXPECT_EQ(learned.output.find("warning"), std::string::npos) << learned.output;
    std::ifstream in(noise);
    const nlohmann::json file = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(file.is_discarded());
    EXPECT_EQ(file.value("gpu_key", ""), kH200);
    EXPECT_EQ(file["runs"].size(), 2u);
    ASSERT_TRUE(file["medians_us"].contains(kHalo)) << file.dump(2);
    EXPECT_NEAR(file["medians_us"][kHalo][1].get<double>(), 265.0, 1e-9);

    std::vector<Bench> slower = three_benches();
    slower[0].samples = scaled(slower[0].samples, 1.10);
    const std::string base = write("base.json", bench_json(kH200, three_benches()));
    const std::string halo_slower = write("halo.json", bench_json(kH200, slower));
    int code = -1;
    const nlohmann::json with_noise = compare_files(base, halo_slower, code, "--noise " + noise);
    EXPECT_EQ(code, 0) << with_noise.dump(2);
    EXPECT_EQ(verdict_of(with_noise, kHalo), "same");
    EXPECT_NEAR(row_of(with_noise, kHalo).value("noise", 0.0), 0.06, 1e-9);
    EXPECT_NEAR(row_of(with_noise, kHalo).value("allowance", 0.0), 0.12, 1e-9);
    EXPECT_EQ(with_noise.value("noise", ""), noise);
    compare_files(base, halo_slower, code);  // without the noise file: the default 5%
    EXPECT_EQ(code, 1);
    // A row that did not move keeps the default allowance.
    slower = three_benches();
    slower[1].samples = scaled(slower[1].samples, 1.10);
    const nlohmann::json sobel = compare_files(base, write("sobel.json", bench_json(kH200, slower)), code, "--noise " + noise);
    EXPECT_EQ(code, 1) << sobel.dump(2);
    EXPECT_NEAR(row_of(sobel, kSobel).value("allowance", 0.0), 0.05, 1e-12);

    // Runs whose kernel row moved beyond 10% were hardly of identical code: learning says so.
    moved[0].samples = scaled(tight(250.0), 1.2);
    const test::CommandResult suspicious =
        klab(fmt::format("compare --learn-noise {} {} {}", noise, run1, write("run3.json", bench_json(kH200, moved))));
    EXPECT_EQ(suspicious.exit_code, 0) << suspicious.output;
    EXPECT_NE(suspicious.output.find("warning: 1 kernel row(s) moved more than 10%"), std::string::npos) << suspicious.output;
}

TEST_F(CompareCli, TheNoiseFileAndItsRunsAreChecked) {
    const std::string h200 = write("h200.json", bench_json(kH200, three_benches()));
    const std::string h100 = write("h100.json", bench_json(kH100, three_benches()));
    const std::string noise = (dir_ / "noise.json").string();
    // One run, or runs of two GPU models: nothing learned, nothing written.
    test::CommandResult r = klab(fmt::format("compare --learn-noise {} {}", noise, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("1 run(s) to learn the noise from"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --learn-noise {} {} {}", noise, h200, h100));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(kH100), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(noise));
    r = klab(fmt::format("compare --learn-noise {} {} {}", (dir_ / "absent" / "noise.json").string(), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;

    // A noise file of another GPU model, or not a noise file at all, is refused.
    ASSERT_EQ(klab(fmt::format("compare --learn-noise {} {} {}", noise, h100, h100)).exit_code, 0);
    r = klab(fmt::format("compare --noise {} {} {}", noise, h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("the noise file"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --noise {} {} {}", write("bad.json", "{\"klab_noise\": 2}"), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("is not a klab noise file"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --noise {} {} {}", write("string.json", "{\"klab_noise\": \"1\"}"), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    const std::string short_row = fmt::format(
        "{{\"klab_noise\": 1, \"gpu_key\": \"{}\", \"runs\": [{{}}, {{}}], \"medians_us\": {{\"{}\": [250]}}}}", kH200, kHalo);
    r = klab(fmt::format("compare --noise {} {} {}", write("short.json", short_row), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("has no array of 2 medians"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --noise {} {} {}", write("text.json", "medians"), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("is not JSON"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --noise {} --learn-noise {} {} {}", noise, noise, h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;

    // Comparing takes exactly two files.
    r = klab(fmt::format("compare {} {} {}", h200, h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("3 file(s) given to compare"), std::string::npos) << r.output;
}

TEST_F(CompareCli, TheMarkdownPutsTheRegressionsFirst) {
    std::vector<Bench> changed = three_benches();
    changed[0].samples = scaled(changed[0].samples, 0.80);  // halo faster
    changed[1].samples = scaled(changed[1].samples, 1.10);  // sobel slower: the regression
    const std::string old_text = bench_json(kH200, three_benches());
    const std::string new_text = bench_json(kH200, changed);
    const test::CommandResult md = compare_table(old_text, new_text, "--format md");
    EXPECT_EQ(md.exit_code, 1) << md.output;
    EXPECT_EQ(md.output.rfind("**klab compare**: REGRESSION: 1 benchmark(s) slower", 0), 0u) << md.output;
    const std::size_t failing = md.output.find("Failing the gate:");
    const std::size_t sobel = md.output.find(std::string("`") + kSobel + "`");
    const std::size_t other = md.output.find("Other changes");
    const std::size_t halo = md.output.find(std::string("`") + kHalo + "`");
    const std::size_t folded = md.output.find("<details><summary>1 row(s) the same</summary>");
    const std::size_t copy = md.output.find(std::string("`") + kCopy + "`");
    for (std::size_t at : {failing, sobel, other, halo, folded, copy}) ASSERT_NE(at, std::string::npos) << md.output;
    EXPECT_TRUE(failing < sobel && sobel < other && other < halo && halo < folded && folded < copy) << md.output;
    EXPECT_NE(md.output.find("| **slower** |"), std::string::npos) << md.output;
    EXPECT_NE(md.output.find("| faster |"), std::string::npos) << md.output;

    const test::CommandResult same = compare_table(old_text, old_text, "--format md");
    EXPECT_EQ(same.exit_code, 0) << same.output;
    EXPECT_EQ(same.output.rfind("**klab compare**: no regression", 0), 0u) << same.output;
    EXPECT_NE(same.output.find("No row moved beyond its allowance."), std::string::npos) << same.output;

    // --json is --format json; an unknown format is refused.
    EXPECT_EQ(compare_table(old_text, new_text, "--json").output, compare_table(old_text, new_text, "--format json").output);
    const test::CommandResult unknown = compare_table(old_text, new_text, "--format xml");
    EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
    EXPECT_NE(unknown.output.find("--format xml"), std::string::npos) << unknown.output;
}

// scripts/ci-compare.sh in a throwaway git repository laid out like klab's: a changed
// results/<gpu>/bench.json is compared with its previous version; a regression fails, the
// "klab-compare: accept" trailer accepts it, a new file and an unchanged one pass.
TEST_F(CompareCli, TheCiGateComparesTheCommitsBenchFiles) {
    if (test::run_command("git --version").exit_code != 0) GTEST_SKIP() << "git is not installed";
    const fs::path repo = dir_ / "repo";
    fs::create_directories(repo / "scripts");
    fs::create_directories(repo / "results" / "nvidia-h200");
    fs::copy_file(fs::path(KLAB_SOURCE_DIR) / "scripts" / "ci-compare.sh", repo / "scripts" / "ci-compare.sh");
    const std::string git = fmt::format("git -C {} -c user.name=klab -c user.email=klab@example.com", repo.string());
    const auto commit = [&](const std::string& bench_text, const std::string& message) {
        std::ofstream(repo / "results" / "nvidia-h200" / "bench.json") << bench_text;
        ASSERT_EQ(test::run_command(git + " add -A").exit_code, 0);
        const test::CommandResult r = test::run_command(fmt::format("{} commit -q -m '{}'", git, message));
        ASSERT_EQ(r.exit_code, 0) << r.output;
    };
    const auto gate = [&] {
        return test::run_command(fmt::format("bash {} {}", (repo / "scripts" / "ci-compare.sh").string(), KLAB_CLI_PATH));
    };
    ASSERT_EQ(test::run_command(fmt::format("git init -q {}", repo.string())).exit_code, 0);

    commit(bench_json(kH200, three_benches()), "first results");
    test::CommandResult r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;  // the first commit: no base
    EXPECT_NE(r.output.find("nothing compared"), std::string::npos) << r.output;

    std::ofstream(repo / "README") << "docs\n";  // a commit that leaves bench.json alone
    ASSERT_EQ(test::run_command(git + " add -A").exit_code, 0);
    ASSERT_EQ(test::run_command(git + " commit -q -m docs").exit_code, 0);
    r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("no results/*/bench.json changed"), std::string::npos) << r.output;

    std::vector<Bench> slower = three_benches();
    slower[0].samples = scaled(slower[0].samples, 1.10);
    commit(bench_json(kH200, slower), "slower");
    r = gate();
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("REGRESSION"), std::string::npos) << r.output;

    commit(bench_json(kH200, three_benches()), "faster again");  // back to the first: passes
    EXPECT_EQ(gate().exit_code, 0);
    commit(bench_json(kH200, slower), "slower on purpose\n\nThe new kernel trades speed for exactness.\n\nklab-compare: accept");
    r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("accepted"), std::string::npos) << r.output;

    // HEAD's results/<gpu>/noise.json widens a noisy row's allowance: the halo row moved 6% between
    // identical-code runs, so +10% is within its 12%. KLAB_COMPARE_MARKDOWN collects the Markdown.
    commit(bench_json(kH200, three_benches()), "faster again");
    std::vector<Bench> moved = three_benches();
    moved[0].samples = scaled(moved[0].samples, 1.06);
    const test::CommandResult learned =
        klab(fmt::format("compare --learn-noise {} {} {}", (repo / "results" / "nvidia-h200" / "noise.json").string(),
                         write("run1.json", bench_json(kH200, three_benches())), write("run2.json", bench_json(kH200, moved))));
    ASSERT_EQ(learned.exit_code, 0) << learned.output;
    commit(bench_json(kH200, slower), "slower within the learned noise");
    const std::string markdown = (dir_ / "compare.md").string();
    r = test::run_command(fmt::format("KLAB_COMPARE_MARKDOWN={} bash {} {}", markdown, (repo / "scripts" / "ci-compare.sh").string(),
                                      KLAB_CLI_PATH));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("noise file results/nvidia-h200/noise.json"), std::string::npos) << r.output;
    std::ifstream md(markdown);
    const std::string md_text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
    EXPECT_NE(md_text.find("**klab compare**: no regression"), std::string::npos) << md_text;
}

}  // namespace
}  // namespace klab
