// klab report end to end on synthetic klab-bench JSON: the tables hold the rows the file has with
// ratios computed from medians, the headline picks the fastest variant, missing NPP rows give "—"
// and a note, a CPU-only file gives a report, an invalid file gives an error and no report, and
// report.md links only the plots that were drawn.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/run_command.hpp"
#include "tests/common/synthetic_bench_json.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test::Bench;
using test::bench_json;
using test::gpu_context;
using test::gpu_rows;
using test::with;

class Report : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("report");
        bench = dir / "bench.json";
    }
    void TearDown() override { fs::remove_all(dir); }

    void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
    void write(const json& doc) { write(bench, doc.dump(2)); }
    static std::string read(const fs::path& path) { return test::read_text(path); }
    test::CommandResult klab(const std::string& arguments) {
        return test::run_command(std::string(KLAB_CLI_PATH) + " report " + arguments);
    }
    // Runs `klab report --no-plots` on `doc` and returns report.md.
    std::string report_of(const json& doc) {
        write(doc);
        const test::CommandResult r = klab(bench.string() + " --no-plots");
        EXPECT_EQ(r.exit_code, 0) << r.output;
        return read(dir / "report.md");
    }
    // The section whose heading starts with `heading`, up to the next section of its level.
    static std::string section(const std::string& text, const std::string& heading) {
        const std::size_t at = text.find("\n" + heading);
        if (at == std::string::npos) return "";
        const std::string level = heading.substr(0, heading.find(' ') + 1);
        const std::size_t end = text.find("\n" + level, at + 1);
        return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    }
    static void expect_has(const std::string& text, const std::string& fragment) {
        EXPECT_NE(text.find(fragment), std::string::npos) << "missing: " << fragment << "\nin:\n" << text;
    }

    fs::path dir;
    fs::path bench;
};

TEST_F(Report, TablesHoldTheRowsWithRatiosFromMedians) {
    const std::string md = report_of(bench_json(gpu_rows(true), gpu_context()));
    const std::string by_size = section(md, "## 1.");
    // median 100 (not the mean 106.7, nor the aggregate's 999999); 100 / 40 copy floor; NPP 300 / 100.
    expect_has(by_size, "| 8K | conv.halo_tiled | 100 | 2.50× | 40.0% | 2.50× | 3.00× | 1234× | 32x8 tuned (exact problem class on this GPU) |");
    expect_has(by_size, "| 8K | conv.global | 200 | 5.00× | 20.0% | — | 1.50× | 617× | 16x16 default (no tuning record) |");
    expect_has(by_size, "| 8K | npp.gauss | 300 | 7.50× | 13.3% | — | — | — | nppiFilterGaussBorder_8u_C3R |");
    expect_has(by_size, "| 8K | baseline.copy | 40.0 | 1.00× | 100.0% | — | — | — | cudaMemcpy |");
    expect_has(by_size, "| HD | conv.halo_tiled | 10.5 | — | — | — | — | — | 32x8 default |");
    // Sizes in order, fastest first within a size; no SoA row.
    EXPECT_LT(by_size.find("| HD | conv.global"), by_size.find("| 8K | conv.halo_tiled"));
    EXPECT_LT(by_size.find("| 8K | conv.halo_tiled"), by_size.find("| 8K | conv.global"));
    EXPECT_EQ(by_size.find("rgb.soa"), std::string::npos);
    // Seed 000's pivot: the speedup over the CPU per size and variant.
    expect_has(by_size, "| size | conv.global | conv.halo_tiled |");
    expect_has(by_size, "| 8K | 617× | 1234× |");

    const std::string memory = section(md, "## 3.");
    expect_has(memory, "| 8K/rgb.aos/gauss3/replicate | conv.global | global (image and mask) | 200 | 5.00× | 20.0% | 1.00× | 1.50× |");
    expect_has(memory, "| 8K/rgb.aos/gauss3/replicate | conv.halo_tiled | shared (halo threads) | 100 | 2.50× | 40.0% | 2.00× | 3.00× |");

    const std::string layouts = section(md, "## 4.");
    expect_has(layouts, "| HD/gauss3 | conv.global | 20.0 | 15.0 | 0.75× |");
    EXPECT_EQ(layouts.find("conv.halo_tiled"), std::string::npos) << "halo_tiled has no SoA row";

    const std::string others = section(md, "## 6.");
    // 731 / 120, 1557 / 120, 614 / 120.
    expect_has(others, "| 8K/rgb.aos/gauss9/replicate | conv.separable_fused | 120 | 3.00× | 33.3% | 6.09× | 13.0× | 5.12× | — |");
    // Sobel pairs with NPP's gray row only when it is gray itself: 110 / 44; RGB has no pair.
    expect_has(others, "| 8K/gray/sobel/replicate | sobel.fused | 44.0 | — | — | — | 2.50× | — | 32x8 default |");
    expect_has(others, "| 8K/rgb.aos/sobel/replicate | sobel.fused | 50.0 | — | — | — | — | — | 32x8 default |");
    expect_has(others, "| 8K/gray/integral/none | integral.scan | 40.0 | — | — | — | 25.1× | — | 256x1 default |");
    expect_has(others, "_Skipped: this file has no rows for box3, box9 or box31 at 8K._");

    // The header says where the figures come from.
    expect_has(md, "# klab benchmark report: NVIDIA H200");
    expect_has(md, "| commit | abc1234 (clean) |");
    expect_has(md, "| date | 2025-06-01T12:00:00+00:00 |");
    expect_has(md, "| CPU reference | sequential reference timed on 1280x720, scaled by pixel count |");
    expect_has(md, "| repetitions | 1 to 3 per benchmark |");
    expect_has(md, "nothing was edited by hand");
    EXPECT_EQ(md.find("_Skipped: this file has no rows for gauss3 on rgb.aos"), std::string::npos);
}

TEST_F(Report, HeadlinePicksTheFastestVariant) {
    const std::string headline = section(report_of(bench_json(gpu_rows(true), gpu_context())), "## Headline");
    expect_has(headline, "| 8K/rgb.aos/gauss3/replicate | conv.halo_tiled (fastest of 2) | 100 | 2.50× | 40.0% | 2.50× | 300 | 3.00× | 1234× |");
    expect_has(headline, "| 8K/rgb.aos/gauss9/replicate | conv.separable_fused (fastest of 2) | 120 | 3.00× | 33.3% | — | 614 | 5.12× | — |");
}

TEST_F(Report, GeneralMasksAreMeasuredAgainstTheRooflineAndNppsArbitraryMaskFilter) {
    const std::string md = report_of(bench_json(gpu_rows(true), gpu_context()));
    // 318 / 40 copy floor, 318 / 265 roofline, npp.filter32f 1553 / 318.
    expect_has(section(md, "## Headline"), "| 8K/rgb.aos/random9/replicate | conv.register_window_async (fastest of 2) | 318 | 7.95× | "
                                           "12.6% | 1.20× | 1553 | 4.88× | — | 128x1 tuned |");
    const std::string general = section(md, "## 2b.");
    expect_has(general, "| 8K/rgb.aos/random9/replicate | conv.register_window_async | 318 | 7.95× | 12.6% | 1.20× | 4.88× | — | 128x1 tuned |");
    expect_has(general, "| 8K/rgb.aos/random9/replicate | conv.tile_fp32 | 900 | 22.50× | 4.4% | 3.40× | 1.73× | — | 32x8 tuned |");
    expect_has(general, "| 8K/rgb.aos/random9/replicate | npp.filter32f | 1553 |");
    // SoA has no NPP row to pair with.
    expect_has(general, "| 8K/rgb.soa/random9/replicate | conv.register_window_async | 330 | 8.25× | 12.1% | 1.25× | — | — | 128x1 tuned |");
    EXPECT_LT(general.find("conv.register_window_async | 318"), general.find("conv.tile_fp32 | 900"));
    EXPECT_LT(general.find("rgb.aos/random9"), general.find("rgb.soa/random9"));
    // No sharpen rows in this file: the headline says so, as its title names the problem.
    expect_has(section(md, "## Headline"),
               "8K/rgb.aos/sharpen/replicate: no klab variant row in this file (GPU: NVIDIA H200, cc 9.0, 132 SMs, study: full).");
    EXPECT_EQ(section(md, "## Headline").find("| 8K/rgb.aos/sharpen"), std::string::npos);
    expect_has(md, "× roofline = median / `roofline_us`");
}

TEST_F(Report, MissingNppRowsShowADashAndANote) {
    const std::string md = report_of(bench_json(gpu_rows(false), gpu_context("not built")));
    const std::string by_size = section(md, "## 1.");
    expect_has(by_size, "| 8K | conv.halo_tiled | 100 | 2.50× | 40.0% | 2.50× | — | 1234× |");
    expect_has(by_size, "No NPP rows for these problems (NPP in this build: not built): speedup over NPP is —.");
    expect_has(section(md, "## Headline"), "| conv.halo_tiled (fastest of 2) | 100 | 2.50× | 40.0% | 2.50× | — | — | 1234× |");
    EXPECT_EQ(md.find("| npp."), std::string::npos) << "no NPP row in any table";
}

TEST_F(Report, CpuOnlyFileGivesASensibleReport) {
    json context = {{"klab_gpu_key", "none"}, {"npp", "not built"}, {"klab_study", "smoke"}, {"cpu_reference", "measured here"}};
    const std::vector<Bench> rows = {
        {"cpu.reference/8K/rgb.aos/gauss3/replicate", {50000, 52000}, {{"pixels_per_second", 6.6e8}}, "1 thread"},
        {"cpu.reference_mt/8K/rgb.aos/gauss3/replicate", {8000, 8100}, {}, "16 threads"},
        {"cpu.reference/HD/rgb.aos/gauss3/replicate", {3000, 3000}, {}, "1 thread"},
    };
    const std::string md = report_of(bench_json(rows, context));
    expect_has(md, "# klab benchmark report: no GPU");
    expect_has(section(md, "## Headline"),
               "8K/rgb.aos/gauss3/replicate: no klab variant row in this file (GPU: none, study: smoke); the CPU reference took "
               "cpu.reference_mt 8050 µs, cpu.reference 51000 µs.");
    // The headline's other three problems are named too, in one line: they have no row at all.
    expect_has(section(md, "## Headline"),
               "8K/rgb.aos/gauss9/replicate, 8K/rgb.aos/sharpen/replicate, 8K/rgb.aos/random9/replicate: no klab variant row "
               "in this file (GPU: none, study: smoke).");
    expect_has(section(md, "## 1."), "| 8K | cpu.reference | 51000 | — | — | — | — | — | 1 thread |");
    expect_has(section(md, "## 3."), "_Skipped: this file has no rows for conv.global");
    expect_has(section(md, "## 5."), "_Skipped: this file has no rows for forced block shapes");
    EXPECT_EQ(md.find("No NPP rows"), std::string::npos) << "no klab rows to compare with NPP";
}

TEST_F(Report, BlockShapesAreRankedAndMarked) {
    const std::string name = "conv.tiled_2batch/8K/rgb.aos/gauss5/replicate";
    const auto forced = [&](int x, int y, double us, bool counters) {
        std::map<std::string, double> c = {{"occupancy_pct", x * y == 1024 ? 50.0 : 100.0}};
        if (counters) c = with(c, {{"block_x", x}, {"block_y", y}});
        return Bench{name + "/block:" + std::to_string(x) + "x" + std::to_string(y), {us}, c,
                     std::to_string(x) + "x" + std::to_string(y) + " forced (block study)"};
    };
    const std::vector<Bench> rows = {
        forced(32, 8, 100, true), forced(8, 32, 130, true), forced(16, 16, 110, true), forced(64, 4, 105, true),
        forced(4, 64, 140, false),  // shape from the name when the counters are missing
        forced(64, 16, 120, true),
        {name, {104}, {{"block_x", 64}, {"block_y", 4}}, "64x4 tuned (exact problem class on this GPU)"},
    };
    const std::string blocks = section(report_of(bench_json(rows, gpu_context())), "## 5.");
    expect_has(blocks, "### conv.tiled_2batch on 8K/rgb.aos/gauss5/replicate");
    expect_has(blocks, "Without a forced shape this variant ran 104 µs with 64x4 tuned (exact problem class on this GPU).");
    expect_has(blocks, "| 32x8 | 256 | wide | 100 | 100.0% | 1.00× | fastest |");
    expect_has(blocks, "| 64x4 | 256 | wide | 105 | 100.0% | 1.05× | the unforced row's shape |");
    expect_has(blocks, "| 16x16 | 256 | square | 110 | 100.0% | 1.10× | — |");
    expect_has(blocks, "| 8x32 | 256 | tall | 130 | 100.0% | 1.30× | — |");
    expect_has(blocks, "| 4x64 | 256 | tall | 140 | 100.0% | 1.40× | — |");
    expect_has(blocks, "| 64x16 | 1024 | wide | 120 | 50.0% | 1.20× | — |");
    expect_has(blocks, "| 256 | 32x8 | 100 | 8x32 | 130 | 1.30× |");
    EXPECT_EQ(blocks.find("| 1024 | 64x16"), std::string::npos) << "no tall shape at 1024 threads to compare with";
    EXPECT_LT(blocks.find("| 32x8 |"), blocks.find("| 64x4 |"));
}

TEST_F(Report, InvalidOrMissingFilesGiveAClearErrorAndNoReport) {
    write(bench, "{ not json");
    test::CommandResult r = klab(bench.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_has(r.output, "klab: " + bench.string() + " is not JSON");

    write(bench, R"({"context": {}, "benchmarks": []})");
    r = klab(bench.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_has(r.output, "holds no benchmark that ran");

    r = klab((dir / "missing.json").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_has(r.output, "cannot read " + (dir / "missing.json").string());

    EXPECT_FALSE(fs::exists(dir / "report.md"));
    EXPECT_FALSE(fs::exists(dir / "plot-data.json"));
    for (const auto& entry : fs::directory_iterator(dir)) EXPECT_EQ(entry.path(), bench) << "left behind: " << entry.path();
}

TEST_F(Report, PlotDataHoldsTheSeriesAlreadyComputed) {
    write(bench_json(gpu_rows(true), gpu_context()));
    const fs::path out = dir / "out" / "sub";  // --out is created
    const test::CommandResult r = klab(bench.string() + " --no-plots --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(out / "report.md"));
    const json data = json::parse(read(out / "plot-data.json"));
    EXPECT_EQ(data.at("gpu"), "NVIDIA H200");
    const json& plots = data.at("plots");
    ASSERT_EQ(plots.size(), 3u) << plots.dump(1);

    const json& by_size = plots.at(0);
    EXPECT_EQ(by_size.at("kind"), "time_vs_resolution");
    EXPECT_EQ(by_size.at("file"), "time_vs_resolution.png");
    EXPECT_EQ(by_size.at("x_ticks"), json::parse(R"([{"x": 2.0736, "label": "HD"}, {"x": 33.1776, "label": "8K"}])"));
    std::map<std::string, json> series;
    for (const json& s : by_size.at("series")) series[s.at("name")] = s;
    EXPECT_EQ(series.at("conv.halo_tiled").at("points"), json::parse(R"([{"x": 2.0736, "us": 10.5}, {"x": 33.1776, "us": 100.0}])"));
    EXPECT_EQ(series.at("npp.gauss").at("role"), "npp");
    EXPECT_EQ(series.at("baseline.copy").at("role"), "copy");
    EXPECT_EQ(series.at("conv.global").at("role"), "variant");

    EXPECT_EQ(plots.at(1).at("kind"), "time_vs_mask");
    const json& bandwidth = plots.at(2);
    EXPECT_EQ(bandwidth.at("kind"), "bandwidth");
    const json& gauss3 = bandwidth.at("panels").at(0);
    EXPECT_EQ(gauss3.at("title"), "Gaussian 3×3");
    // Highest first: 2 x 99532800 bytes in 100 µs = 1990.656 GB/s; the floor moves them in 40 µs.
    EXPECT_EQ(gauss3.at("bars").at(0).at("name"), "conv.halo_tiled");
    EXPECT_NEAR(gauss3.at("bars").at(0).at("gb_per_s").get<double>(), 1990.656, 1e-6);
    EXPECT_EQ(gauss3.at("bars").at(2).at("name"), "npp.gauss");
    EXPECT_NEAR(gauss3.at("copy_floor_gb_per_s").get<double>(), 4976.64, 1e-6);
}

TEST_F(Report, MaskSizeSeriesGoToTheirPanels) {
    std::vector<Bench> rows;
    for (int k : {3, 5, 7, 9}) {
        rows.push_back({"conv.global/HD/rgb.aos/gauss" + std::to_string(k) + "/replicate", {10.0 * k}, {}, ""});
        rows.push_back({"npp.gauss/8K/rgb.aos/gauss" + std::to_string(k) + "/replicate", {100.0 * k}, {}, ""});
    }
    // An end-to-end row (host to host, section 7) is no kernel time against the mask size.
    rows.push_back({"e2e.one_shot/8K/rgb.aos/gauss5/replicate", {9999}, {}, ""});
    const std::string md = report_of(bench_json(rows, gpu_context()));
    expect_has(section(md, "## 2."), "| HD | 7×7 | conv.global | 70.0 | — | — | — | — | — | — |");
    EXPECT_EQ(section(md, "## 2.").find("e2e."), std::string::npos) << section(md, "## 2.");
    EXPECT_EQ(read(dir / "plot-data.json").find("e2e."), std::string::npos);
    const json plots = json::parse(read(dir / "plot-data.json")).at("plots");
    ASSERT_EQ(plots.size(), 2u);
    const json& mask = plots.at(1);
    EXPECT_EQ(mask.at("kind"), "time_vs_mask");
    EXPECT_EQ(mask.at("panels").at(0).at("title"), "8K");
    EXPECT_EQ(mask.at("panels").at(0).at("series").at(0).at("name"), "npp.gauss");
    EXPECT_EQ(mask.at("panels").at(1).at("title"), "HD");
    EXPECT_EQ(mask.at("panels").at(1).at("series").at(0).at("points"),
              json::parse(R"([{"x": 3, "us": 30.0}, {"x": 5, "us": 50.0}, {"x": 7, "us": 70.0}, {"x": 9, "us": 90.0}])"));
}

// A stand-in for scripts/plot_bench.py (no matplotlib needed): it writes each plot's file, or only
// the first, or exits as the real script does without matplotlib.
std::string fake_script(const std::string& mode) {
    return "import json, pathlib, sys\n"
           "mode = '" + mode + "'\n"
           "if mode == 'no-matplotlib': sys.exit(3)\n"
           "plots = json.load(open(sys.argv[1]))['plots']\n"
           "for p in plots[:1] if mode == 'first' else plots:\n"
           "    pathlib.Path(sys.argv[2], p['file']).write_bytes(b'PNG ' + mode.encode())\n"
           "if mode == 'block-report': pathlib.Path(sys.argv[2], 'report.md').mkdir()\n"
           "sys.exit(1 if mode == 'first' else 0)\n";
}

TEST_F(Report, ReportLinksOnlyThePlotsThatWereDrawn) {
    write(bench_json(gpu_rows(true), gpu_context()));
    const fs::path script = dir / "fake_plot.py";

    write(script, fake_script("all"));
    test::CommandResult r = klab(bench.string() + " --plot-script " + script.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::string md = read(dir / "report.md");
    expect_has(section(md, "## 1."), "![time against resolution](time_vs_resolution.png)");
    expect_has(section(md, "## Headline"), "![achieved bandwidth at 8K against the copy floor](bandwidth_8K.png)");
    EXPECT_EQ(md.find("Plots not drawn"), std::string::npos);
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;

    // The script fails after one plot: the earlier run's second PNG must not be linked.
    write(script, fake_script("first"));
    r = klab(bench.string() + " --plot-script " + script.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(r.output, "warning: plots not drawn: the plot script " + script.string() + " failed (exit status 1)");
    md = read(dir / "report.md");
    expect_has(md, "![time against resolution](time_vs_resolution.png)");
    EXPECT_EQ(md.find("bandwidth_8K.png"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir / "bandwidth_8K.png"));
    expect_has(md, "**Plots not drawn:** the plot script");

    write(script, fake_script("no-matplotlib"));
    r = klab(bench.string() + " --plot-script " + script.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(r.output, "warning: plots not drawn: matplotlib is not installed for python3");
    expect_has(r.output, "draw them later with: python3 " + script.string() + " " + (dir / "plot-data.json").string());
    md = read(dir / "report.md");
    expect_has(md, "**Plots not drawn:** matplotlib is not installed");
    EXPECT_EQ(md.find("!["), std::string::npos);

    // A --plot-script that is not there is a typo: refused before anything is written.
    const std::string report_before = read(dir / "report.md");
    r = klab(bench.string() + " --plot-script " + (dir / "nowhere.py").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_has(r.output, "nowhere.py");
    EXPECT_EQ(read(dir / "report.md"), report_before);

    r = klab(bench.string() + " --no-plots");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(read(dir / "report.md"), "**Plots not drawn:** klab report ran with --no-plots");
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << "--no-plots is a choice, not a problem\n" << r.output;
    expect_has(r.output, "wrote " + (dir / "report.md").string());
}

// A report that fails after its plot data and plots were made (here report.md cannot be written)
// leaves the earlier report whole: no file of it replaced, and nothing of the new one left. A
// staging folder that an earlier klab ended by a signal left is removed.
TEST_F(Report, AFailedReportLeavesTheEarlierOneWhole) {
    write(bench_json(gpu_rows(true), gpu_context()));
    const fs::path script = dir / "fake_plot.py";
    write(script, fake_script("all"));
    // A staging folder of a klab that no longer runs goes; one of a running process (pid 1) stays.
    // A fresh one of a pid not seen here may be another machine's report running now: it stays too.
    fs::create_directory(dir / ".klab-report-999999999");
    write(dir / ".klab-report-999999999" / "report.md", "abandoned");
    fs::last_write_time(dir / ".klab-report-999999999", fs::file_time_type::clock::now() - std::chrono::hours(2));
    fs::create_directory(dir / ".klab-report-999999998");
    fs::create_directory(dir / ".klab-report-1");
    test::CommandResult r = klab(bench.string() + " --plot-script " + script.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(fs::exists(dir / ".klab-report-999999999"));
    EXPECT_TRUE(fs::is_directory(dir / ".klab-report-999999998"));
    EXPECT_TRUE(fs::is_directory(dir / ".klab-report-1"));
    fs::remove(dir / ".klab-report-999999998");
    fs::remove(dir / ".klab-report-1");
    std::map<std::string, std::string> before;
    for (const auto& entry : fs::directory_iterator(dir)) before[entry.path().filename().string()] = read(entry.path());
    ASSERT_EQ(before.count("plot-data.json"), 1u);
    ASSERT_EQ(before.at("bandwidth_8K.png"), "PNG all");

    write(bench, bench_json(gpu_rows(false), gpu_context()).dump(2));  // other rows: other plot data
    before["bench.json"] = read(bench);
    write(script, fake_script("block-report"));
    before["fake_plot.py"] = read(script);
    r = klab(bench.string() + " --plot-script " + script.string());
    EXPECT_NE(r.exit_code, 0) << r.output;
    expect_has(r.output, "cannot make the report's report.md (the report in " + dir.string() + " is left as it was)");
    std::map<std::string, std::string> after;
    for (const auto& entry : fs::directory_iterator(dir)) after[entry.path().filename().string()] = read(entry.path());
    EXPECT_EQ(after, before) << "a file was replaced or a staging folder left";
}

// A folder in the way of one of the report's files is found before anything is made.
TEST_F(Report, AFolderInTheWayOfAReportFileIsRefusedFirst) {
    write(bench_json(gpu_rows(true), gpu_context()));
    for (const char* name : {"report.md", "bandwidth_8K.png"}) {
        fs::create_directory(dir / name);
        const test::CommandResult r = klab(bench.string() + " --no-plots");
        EXPECT_NE(r.exit_code, 0) << r.output;
        expect_has(r.output, "cannot write " + (dir / name).string() + ": it is an existing directory");
        EXPECT_FALSE(fs::exists(dir / "plot-data.json"));
        fs::remove(dir / name);
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "only bench.json";
}

// A bench file named like one of the report's files is not replaced by it.
TEST_F(Report, ABenchFileNamedLikeAReportFileIsNotReplaced) {
    for (const char* name : {"plot-data.json", "report.md", "bandwidth_8K.png"}) {
        const fs::path input = dir / name;
        write(input, bench_json(gpu_rows(true), gpu_context()).dump(2));
        const std::string before = read(input);
        const test::CommandResult r = klab(input.string() + " --no-plots");
        EXPECT_EQ(r.exit_code, 2) << r.output;
        expect_has(r.output, "cannot write " + input.string() + ": it is the bench file read");
        EXPECT_EQ(read(input), before) << name;
        EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "only " << name;
        // Elsewhere it is reported as any bench file.
        EXPECT_EQ(klab(input.string() + " --no-plots --out " + (dir / "elsewhere").string()).exit_code, 0);
        fs::remove_all(dir / "elsewhere");
        fs::remove(input);
    }
}

// The real script: with matplotlib it draws three PNGs that report.md links; without, it says so.
TEST_F(Report, PlotScriptDrawsOrSaysMatplotlibIsMissing) {
    write(bench_json(gpu_rows(true), gpu_context()));
    const test::CommandResult r = klab(bench.string() + " --plot-script " + std::string(KLAB_SOURCE_DIR) + "/scripts/plot_bench.py");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string md = read(dir / "report.md");
    if (r.output.find("matplotlib is not installed") != std::string::npos) {
        EXPECT_EQ(md.find("!["), std::string::npos);
        expect_has(md, "**Plots not drawn:** matplotlib is not installed");
        return;
    }
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
    for (const char* png : {"time_vs_resolution.png", "bandwidth_8K.png"}) {
        ASSERT_TRUE(fs::exists(dir / png)) << png << "\n" << r.output;
        EXPECT_EQ(read(dir / png).substr(1, 3), "PNG") << png;
        expect_has(md, std::string("](") + png + ")");
    }
}

}  // namespace
}  // namespace klab
