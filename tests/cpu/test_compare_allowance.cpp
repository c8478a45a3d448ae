// `klab compare`'s allowance at its edges, on synthetic Google Benchmark JSON (compare_bench_json.hpp):
// the relative and absolute floors, rows under the minimum, end-to-end rows against the upload,
// learned noise and the noise file's checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cpu/compare_bench_json.hpp"

namespace klab {
namespace {

using namespace compare_fixtures;

namespace fs = std::filesystem;

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
    EXPECT_NE(suspicious.output.find(std::string(kHalo) + " 20.0% apart"), std::string::npos) << suspicious.output;
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
    const std::string h200_again = write("h200-again.json", bench_json(kH200, three_benches()));
    r = klab(fmt::format("compare --learn-noise {} {} {}", (dir_ / "absent" / "noise.json").string(), h200, h200_again));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;

    // A noise file of another GPU model, or not a noise file at all, is refused.
    const std::string h100_again = write("h100-again.json", bench_json(kH100, three_benches()));
    ASSERT_EQ(klab(fmt::format("compare --learn-noise {} {} {}", noise, h100, h100_again)).exit_code, 0);
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
    // Nesting deeper than every JSON file klab reads allows (autotune/json_limits.hpp).
    r = klab(fmt::format("compare --noise {} {} {}", write("deep.json", std::string(100, '[') + std::string(100, ']')), h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("nesting deeper than 64"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --noise {} --learn-noise {} {} {}", noise, noise, h200, h200_again));
    EXPECT_EQ(r.exit_code, 2) << r.output;

    // OUT replaces nothing but an earlier noise file: not one of the runs (--learn-noise taken for a
    // flag), not another file; and no run is given twice (its noise against itself would read as none).
    const std::string before = read_text(h200);
    r = klab(fmt::format("compare --learn-noise {} {} {}", h200, h200_again, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("is also a run to learn from: writing it would replace that run"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --learn-noise {} {} {}", (dir_ / "." / "h200.json").string(), h200_again, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    r = klab(fmt::format("compare --learn-noise {} {} {}", h200, h200_again, h100_again));  // OUT not among the runs
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("exists and is not a noise file klab reads (a run?)"), std::string::npos) << r.output;
    const std::string other = write("notes.json", "{\"mine\": true}");
    r = klab(fmt::format("compare --learn-noise {} {} {}", other, h200, h200_again));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("is not a noise file klab reads (a run?), so writing it would destroy it"), std::string::npos)
        << r.output;
    r = klab(fmt::format("compare --learn-noise {} {} {}", (dir_ / "fresh.json").string(), h200, (dir_ / "." / "h200.json").string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("is given twice"), std::string::npos) << r.output;
    fs::create_directory(dir_ / "folder");
    r = klab(fmt::format("compare --learn-noise {} {} {}", (dir_ / "folder").string(), h200, h200_again));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("it is an existing directory"), std::string::npos) << r.output;
    r = klab(fmt::format("compare --learn-noise {} {} {} {}", (dir_ / "fresh.json").string(), h200, h200_again, h200));
    EXPECT_NE(r.output.find(fmt::format("the run '{}' is given twice; allowed", h200)), std::string::npos) << r.output;
    EXPECT_EQ(read_text(h200), before);
    EXPECT_EQ(read_text(other), "{\"mine\": true}");
    EXPECT_FALSE(fs::exists(dir_ / "fresh.json"));

    // Comparing takes exactly two files.
    r = klab(fmt::format("compare {} {} {}", h200, h200, h200));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("3 file(s) given to compare"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace klab
