// klab-bench's study table and JSON reader, without a GPU: the rows the seeds' study needs are
// there with names that parse back, the classes `klab run` tunes, the traffic each row is judged
// by, and the reader's handling of units, aggregates, counters, failures and invalid files.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/bench_json.hpp"
#include "bench/fma_rate.hpp"
#include "bench/study.hpp"
#include "harness/error.hpp"

namespace klab::bench {
namespace {

std::vector<std::string> names_of(const std::vector<BenchCase>& cases) {
    std::vector<std::string> names;
    for (const BenchCase& c : cases) names.push_back(c.name());
    return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Two shapes, as the device's search space would give them.
std::vector<LaunchShape> two_shapes(const Variant&, const Problem&) { return {LaunchShape{32, 8, {}}, LaunchShape{8, 32, {}}}; }

TEST(BenchStudy, NamesAreUniqueAndParseBack) {
    for (Study study : {Study::smoke, Study::quick, Study::full}) {
        const std::vector<BenchCase> cases = gpu_study(study, true, &two_shapes);
        const std::vector<std::string> names = names_of(cases);
        EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << to_string(study);
        for (const std::string& name : names) {
            const std::optional<BenchName> parsed = BenchName::parse(name + "/manual_time");
            ASSERT_TRUE(parsed) << name;
            EXPECT_EQ(parsed->text(), name);
        }
    }
}

TEST(BenchStudy, TheFullStudyHoldsTheSeedsTables) {
    const std::vector<std::string> names = names_of(gpu_study(Study::full, true, &two_shapes));
    // 1. Every size at gauss3 with its copy floor and NPP; 2. the mask sizes at HD and 8K.
    for (const char* size : {"480p", "720p", "HD", "4K", "8K"}) {
        EXPECT_TRUE(has(names, fmt::format("baseline.copy/{}/rgb.aos/copy/none", size))) << size;
        EXPECT_TRUE(has(names, fmt::format("npp.gauss/{}/rgb.aos/gauss3/replicate", size))) << size;
        EXPECT_TRUE(has(names, fmt::format("conv.halo_tiled/{}/rgb.aos/gauss3/replicate", size))) << size;
    }
    for (const char* size : {"HD", "8K"}) {
        for (int k : {3, 5, 7, 9}) {
            for (const char* variant : {"conv.global", "conv.constant", "conv.tiled_2batch", "conv.halo_tiled",
                                        "conv.separable_2pass", "conv.separable_fused"}) {
                EXPECT_TRUE(has(names, fmt::format("{}/{}/rgb.aos/gauss{}/replicate", variant, size, k))) << variant << " " << size << " " << k;
            }
        }
        // 4. AoS against SoA.
        EXPECT_TRUE(has(names, fmt::format("conv.tiled_2batch/{}/rgb.soa/gauss9/replicate", size)));
    }
    // A box-only variant is not benchmarked on a Gaussian, but is on the box.
    EXPECT_FALSE(has(names, "conv.box_integral/8K/rgb.aos/gauss9/replicate"));
    EXPECT_TRUE(has(names, "conv.box_integral/8K/rgb.aos/box9/replicate"));
    EXPECT_TRUE(has(names, "npp.box/8K/rgb.aos/box9/replicate"));
    // 5. The block-shape study: each shape the lister gives, on 8K gauss5.
    EXPECT_TRUE(has(names, "conv.tiled_2batch/8K/rgb.aos/gauss5/replicate/block:32x8"));
    EXPECT_TRUE(has(names, "conv.tiled_2batch/8K/rgb.aos/gauss5/replicate/block:8x32"));
    // 6. The other operations, and the end-to-end rows.
    for (const char* name : {"npp.separable32f/8K/rgb.aos/gauss9/replicate", "npp.filter32f/8K/rgb.aos/gauss9/replicate",
                             "sobel.fused/8K/rgb.aos/sobel/replicate", "sobel.3kernel/8K/gray/sobel/replicate",
                             "npp.sobel/8K/gray/sobel/replicate", "integral.scan/8K/gray/integral/none",
                             "integral.scan/4096x4096/gray/integral/none", "npp.integral/8K/gray/integral/none",
                             "e2e.upload/8K/rgb.aos/copy/none", "e2e.download/8K/rgb.aos/copy/none",
                             "e2e.bidirectional/8K/rgb.aos/copy/none", "e2e.pipelined/8K/rgb.aos/gauss5/replicate",
                             "e2e.one_shot.pageable/8K/rgb.aos/gauss5/replicate",
                             "e2e.pipelined.strips12/8K/rgb.aos/gauss5/replicate"}) {
        EXPECT_TRUE(has(names, name)) << name;
    }
    // Issue 16's rows: box filters of three sizes against NPP's box, the running-sums box and the
    // register-window Sobel at HD and 8K, the single-pass integral on 8K RGB, 4K gray (u32) and 8K gray (u64).
    for (int k : {3, 9, 31}) {
        for (const char* row : {"conv.box_running_sums", "conv.box_integral", "npp.box"}) {
            EXPECT_TRUE(has(names, fmt::format("{}/8K/rgb.aos/box{}/replicate", row, k))) << row << " " << k;
        }
    }
    for (const char* name : {"sobel.register_window/8K/gray/sobel/replicate", "sobel.register_window/8K/rgb.aos/sobel/replicate",
                             "sobel.register_window/HD/gray/sobel/replicate", "sobel.register_window/HD/rgb.aos/sobel/replicate",
                             "npp.sobel/HD/gray/sobel/replicate", "npp.sobel/8K/gray/sobel/replicate",
                             "integral.lookback/8K/gray/integral/none", "integral.lookback/8K/rgb.aos/integral/none",
                             "integral.scan/8K/rgb.aos/integral/none", "integral.lookback/4K/gray/integral/none",
                             "npp.integral/4K/gray/integral/none", "integral.lookback/4096x4096/gray/integral/none"}) {
        EXPECT_TRUE(has(names, name)) << name;
    }
    EXPECT_FALSE(has(names, "npp.integral/8K/rgb.aos/integral/none"));  // NPP's integral is gray only
    // The strip-count sweep is the full study's only.
    for (const std::string& name : names_of(gpu_study(Study::quick, true, nullptr))) {
        EXPECT_EQ(name.find(".strips"), std::string::npos) << name;
    }
    // Without NPP there is no NPP row; without a lister, no block row.
    for (const std::string& name : names_of(gpu_study(Study::full, false, nullptr))) {
        EXPECT_NE(name.rfind("npp.", 0), 0u) << name;
        EXPECT_EQ(name.find("/block:"), std::string::npos) << name;
    }
}

// Issue 14: the general masks at HD and 8K with NPP's arbitrary-mask filter, and once in SoA.
TEST(BenchStudy, TheFullStudyHoldsGeneralMasksWithNppsArbitraryMaskFilter) {
    const std::vector<std::string> names = names_of(gpu_study(Study::full, true, &two_shapes));
    for (const char* size : {"HD", "8K"}) {
        for (const char* filter : {"sharpen", "random9"}) {
            for (const char* row : {"npp.filter32f", "conv.tile_fp32", "conv.register_window", "conv.register_window_async", "conv.global"}) {
                EXPECT_TRUE(has(names, fmt::format("{}/{}/rgb.aos/{}/replicate", row, size, filter))) << row << " " << size << " " << filter;
            }
            // Not separable: the separable variants are not benchmarked on it.
            EXPECT_FALSE(has(names, fmt::format("conv.separable_sliding/{}/rgb.aos/{}/replicate", size, filter)));
        }
    }
    EXPECT_TRUE(has(names, "conv.register_window_async/8K/rgb.soa/random9/replicate"));
    EXPECT_TRUE(has(names, "conv.register_window_async/8K/rgb.soa/sharpen/replicate"));
    EXPECT_EQ(npp_family("random9"), "npp.filter32f");
    EXPECT_EQ(npp_family("sharpen"), "npp.filter32f");
    EXPECT_EQ(npp_family("gauss9"), "npp.gauss");
}

// The roofline's FMA floor counts the least FMAs per output element: a row and a column pass for
// a rank-1 mask, every tap otherwise; none for the integer operations.
TEST(BenchStudy, FmaFloorCountsTheLeastFmasOfTheProblem) {
    const ImageShape image{64, 48, 3, Layout::aos};
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, masks::gaussian(9), Border{})), 18.0);
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, masks::box(5), Border{})), 4.0);   // running sums
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, masks::box(31), Border{})), 4.0);
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, masks::random(9), Border{})), 81.0);
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, masks::sharpen(), Border{})), 9.0);
    EXPECT_EQ(fma_per_output_element(convolve_problem(image, Mask(1, 9, std::vector<float>(9, 1.0f / 9)), Border{})), 9.0);
    Problem sobel;
    sobel.op = Operation::sobel;
    sobel.shape = image;
    EXPECT_EQ(fma_per_output_element(sobel), 0.0);
}

TEST(BenchStudy, TheSmokeStudyHasEveryRowKind) {
    std::set<RowKind> kinds;
    for (const BenchCase& c : gpu_study(Study::smoke, true, nullptr)) kinds.insert(c.kind);
    EXPECT_EQ(kinds, (std::set<RowKind>{RowKind::variant, RowKind::copy, RowKind::npp, RowKind::end_to_end}));
    std::set<RowKind> cpu_kinds;
    for (const BenchCase& c : cpu_study(Study::smoke)) cpu_kinds.insert(c.kind);
    EXPECT_EQ(cpu_kinds, (std::set<RowKind>{RowKind::cpu_sequential, RowKind::cpu_parallel}));
}

TEST(BenchStudy, KlabRunTunesTheClassesOfEveryVariantRow) {
    std::vector<std::string> classes;
    for (const autotune::ProblemClass& c : tuned_classes(Study::full)) classes.push_back(autotune::to_string(c));
    // Convolutions: 480p..8K at 3x3, HD and 8K at 5, 7, 9 (AoS), HD and 8K at 3 and 9 (SoA), 8K box
    // 31x31: 5 + 6 + 4 + 1. Sobel: HD and 8K, gray and RGB. Integral: 8K gray u64, 4K gray u32,
    // 4096x4096 gray (the 8K bucket's u32 class), 8K RGB u64.
    EXPECT_EQ(classes.size(), 16u + 4u + 4u);
    for (const char* expected : {"480p/3x3/c3/aos", "4K/3x3/c3/aos", "8K/7x7/c3/aos", "HD/9x9/c3/soa", "8K/31x31/c3/aos",
                                 "sobel/8K/c1/aos", "sobel/8K/c3/aos", "sobel/HD/c1/aos", "sobel/HD/c3/aos",
                                 "integral/8K/c1/aos/u64", "integral/4K/c1/aos/u32",
                                 "integral/8K/c1/aos/u32", "integral/8K/c3/aos/u64"}) {
        EXPECT_TRUE(has(classes, expected)) << expected;
    }
}

TEST(BenchStudy, TrafficIsTheInputOnceAndTheOutputOnce) {
    Problem conv = convolve_problem({100, 10, 3, Layout::aos}, masks::gaussian(3), Border{});
    EXPECT_EQ(minimum_traffic(conv).bytes_read, 3000.0);
    EXPECT_EQ(minimum_traffic(conv).bytes_written, 3000.0);
    Problem sobel;
    sobel.op = Operation::sobel;
    sobel.shape = {100, 10, 3, Layout::aos};
    EXPECT_EQ(minimum_traffic(sobel).bytes_written, 1000.0);  // one gray byte per pixel
    Problem integral;
    integral.op = Operation::integral;
    integral.shape = {4096, 4096, 1, Layout::aos};
    EXPECT_EQ(minimum_traffic(integral).bytes_written, 4.0 * 4096 * 4096);  // u32
    integral.shape = {7680, 4320, 1, Layout::aos};
    EXPECT_EQ(minimum_traffic(integral).bytes_written, 8.0 * 7680 * 4320);  // u64 past 16.8 M pixels
    EXPECT_EQ(format_name({1, 1, 1, Layout::soa}), "gray");
    EXPECT_EQ(format_name({1, 1, 4, Layout::soa}), "rgba.soa");
    EXPECT_EQ(filter_name(conv), "gauss3");
    EXPECT_THROW(parse_study("huge"), Error);
}

TEST(BenchJson, RepetitionsCountersUnitsAndFailures) {
    const std::string text = R"({
      "context": {"klab_gpu_key": "NVIDIA H200, cc 9.0, 132 SMs", "num_cpus": 16},
      "benchmarks": [
        {"name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time", "run_name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time",
         "run_type": "iteration", "repetition_index": 0, "iterations": 10, "real_time": 30000, "time_unit": "ns", "label": "32x8 tuned",
         "pct_copy_floor": 30.0, "block_x": 32},
        {"name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time", "run_name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time",
         "run_type": "iteration", "repetition_index": 1, "iterations": 10, "real_time": 0.032, "time_unit": "ms", "pct_copy_floor": 28.0, "block_x": 32},
        {"name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time_mean", "run_name": "conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time",
         "run_type": "aggregate", "aggregate_name": "mean", "real_time": 999, "time_unit": "us"},
        {"name": "cpu.reference/480p/rgb.aos/gauss3/replicate/real_time", "run_name": "cpu.reference/480p/rgb.aos/gauss3/replicate/real_time",
         "run_type": "iteration", "real_time": 12.5, "time_unit": "ms"},
        {"name": "sobel.fused/8K/gray/sobel/replicate/manual_time", "run_name": "sobel.fused/8K/gray/sobel/replicate/manual_time",
         "run_type": "iteration", "error_occurred": true, "error_message": "differs from the CPU reference", "real_time": 0, "time_unit": "us"},
        {"name": "BM_unknown", "run_type": "iteration", "real_time": 1, "time_unit": "us"}
      ]})";
    const BenchFile file = parse_bench_json(text, "test.json");
    EXPECT_EQ(file.gpu_key(), "NVIDIA H200, cc 9.0, 132 SMs");
    EXPECT_EQ(file.context_value("num_cpus"), "16");
    ASSERT_EQ(file.runs.size(), 4u);
    const BenchRun* halo = file.find("conv.halo_tiled/HD/rgb.aos/gauss3/replicate/manual_time");
    ASSERT_NE(halo, nullptr);
    EXPECT_EQ(halo->samples_us, (std::vector<double>{30.0, 32.0}));  // ns and ms in us; the aggregate row ignored
    EXPECT_DOUBLE_EQ(halo->median_us(), 31.0);
    EXPECT_DOUBLE_EQ(halo->counters.at("pct_copy_floor"), 29.0);  // the median over the repetitions
    EXPECT_EQ(halo->counters.count("iterations"), 0u);           // Google Benchmark's own fields are not counters
    EXPECT_EQ(halo->label, "32x8 tuned");
    const BenchRun* cpu = file.find("cpu.reference/480p/rgb.aos/gauss3/replicate");
    ASSERT_NE(cpu, nullptr);
    ASSERT_TRUE(cpu->parts);
    EXPECT_EQ(cpu->parts->row, "cpu.reference");
    EXPECT_DOUBLE_EQ(cpu->median_us(), 12500.0);
    const BenchRun* sobel = file.find("sobel.fused/8K/gray/sobel/replicate");
    ASSERT_NE(sobel, nullptr);
    EXPECT_EQ(sobel->error, "differs from the CPU reference");
    EXPECT_TRUE(sobel->samples_us.empty());
    EXPECT_FALSE(file.find("BM_unknown")->parts);  // kept, but not one of klab's names
}

// A name with two time suffixes (never written by Google Benchmark, but a file may hold one) is
// one run, and find() reaches it by any of its spellings (the fuzzer's find: a doubled suffix was
// stripped once by the parser and twice on the way to find()).
TEST(BenchJson, TimeSuffixesAreStrippedAlikeByTheParserAndFind) {
    const BenchFile file = parse_bench_json(R"({"benchmarks": [{"name": "a/b/real_time/real_time", "real_time": 1, "time_unit": "us"},
                                                               {"name": "a/b/manual_time", "real_time": 3, "time_unit": "us"}]})",
                                            "test.json");
    ASSERT_EQ(file.runs.size(), 1u);  // both entries are repetitions of "a/b"
    EXPECT_EQ(file.runs[0].name, "a/b");
    EXPECT_EQ(file.runs[0].samples_us, (std::vector<double>{1.0, 3.0}));
    for (const char* spelling : {"a/b", "a/b/real_time", "a/b/manual_time/real_time"}) EXPECT_EQ(file.find(spelling), &file.runs[0]) << spelling;
    EXPECT_EQ(file.find("a"), nullptr);
}

TEST(BenchJson, InvalidFilesAreRefusedWithTheReason) {
    const auto message_of = [](const std::string& text) {
        try {
            parse_bench_json(text, "bad.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": NaN}]}").find("bad.json is not JSON"), std::string::npos);
    EXPECT_NE(message_of("{\"context\": {}}").find("no \"benchmarks\" array"), std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"real_time\": 1}]}").find("without a name"), std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": 1, \"time_unit\": \"h\"}]}").find("unknown time_unit"),
              std::string::npos);
    // A field of another type than Google Benchmark writes is named, with what it holds.
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": \"fast\"}]}")
                  .find("bad.json: benchmark a: its \"real_time\" is \"fast\", not a number"),
              std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\"}]}").find("bad.json: benchmark a has no real_time"), std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": 1, \"label\": 7}]}")
                  .find("bad.json: benchmark a: its \"label\" is 7 (a number), not a string"),
              std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": 1, \"run_type\": 1}]}").find("its \"run_type\" is 1"),
              std::string::npos);
    EXPECT_NE(message_of("{\"benchmarks\": [{\"name\": \"a\", \"real_time\": 1, \"error_occurred\": \"no\"}]}")
                  .find("its \"error_occurred\" is \"no\" (a string), not true or false"),
              std::string::npos);
    // A parser quotes what it last read: an unterminated string is shortened to a readable line.
    const std::string unterminated = message_of("{\"benchmarks\": [{\"name\": \"" + std::string(5000, 'a'));
    EXPECT_NE(unterminated.find("bad.json is not JSON"), std::string::npos) << unterminated;
    EXPECT_NE(unterminated.find(" bytes left out) ... "), std::string::npos) << unterminated;
    EXPECT_LT(unterminated.size(), 500u) << unterminated;
    EXPECT_THROW(load_bench_file("/nonexistent/bench.json"), Error);
}

}  // namespace
}  // namespace klab::bench
