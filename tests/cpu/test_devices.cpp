// Choosing the CUDA device (harness/device_select.hpp) and `--device all` (cli/device_fanout.hpp)
// on fake device lists: the errors name the devices there are, one study per GPU model, the
// classes of one model shared by its GPUs, the child command lines, and the children themselves
// (shell scripts standing in for klab) run at once with their lines prefixed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/device_fanout.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

DeviceInfo fake_device(int index, const std::string& name) {
    DeviceInfo d;
    d.index = index;
    d.name = name;
    return d;
}

// Two H200s and an L4, as query_devices() would list them.
DeviceQuery fake_machine() { return {{fake_device(0, "NVIDIA H200"), fake_device(1, "NVIDIA H200"), fake_device(2, "NVIDIA L4")}, {}}; }

using test::expect_error;

TEST(DeviceRequest, ParsesAnIndexOrAllAndRefusesTheRest) {
    EXPECT_FALSE(DeviceRequest{}.given);
    const DeviceRequest two = parse_device_request("2");
    EXPECT_TRUE(two.given);
    EXPECT_FALSE(two.all);
    EXPECT_EQ(two.index, 2);
    EXPECT_TRUE(parse_device_request("all").all);
    for (const char* bad : {"", "-1", "x", "1.5", "0x1", "ALL", "1,2", "12345678901"}) {
        expect_error([&] { parse_device_request(bad); }, "not a device index; allowed: --device N (0, 1, ...");
    }
}

TEST(DeviceRequest, AMissingIndexNamesTheDevicesThereAre) {
    const DeviceQuery machine = fake_machine();
    expect_error([&] { requested_devices(parse_device_request("7"), machine, nullptr); },
                 "--device 7: there is no CUDA device 7; the devices here are 0: NVIDIA H200, 1: NVIDIA H200, 2: NVIDIA L4; "
                 "allowed: --device 0 ... 2, or --device all");
    // CUDA_VISIBLE_DEVICES decides what CUDA lists: the message says so when it is set.
    const DeviceQuery one = {{fake_device(0, "NVIDIA L4")}, {}};
    expect_error([&] { requested_devices(parse_device_request("1"), one, "2"); },
                 "the devices here are 0: NVIDIA L4 (CUDA_VISIBLE_DEVICES=2 decides which GPUs CUDA shows); allowed: "
                 "--device 0 or --device all");
    // No device at all: the query's reason, for an index and for all.
    const DeviceQuery none = {{}, "no CUDA device found (cudaErrorNoDevice: no CUDA-capable device is detected)"};
    expect_error([&] { requested_devices(parse_device_request("0"), none, ""); }, "--device 0: no CUDA device found (cudaErrorNoDevice");
    expect_error([&] { requested_devices(parse_device_request("all"), none, nullptr); }, "--device all: no CUDA device");
}

TEST(DeviceRequest, NamesTheDevicesItSelects) {
    const DeviceQuery machine = fake_machine();
    const std::vector<DeviceInfo> l4 = requested_devices(parse_device_request("2"), machine, nullptr);
    ASSERT_EQ(l4.size(), 1u);
    EXPECT_EQ(l4[0].name, "NVIDIA L4");
    EXPECT_EQ(requested_devices(parse_device_request("all"), machine, nullptr).size(), 3u);
    EXPECT_EQ(requested_devices(DeviceRequest{}, machine, nullptr).size(), 3u);  // the caller takes the current one
    expect_error([] { select_one_device(parse_device_request("all"), "klab-bench"); }, "--device all: klab-bench runs on one device");
}

// A command of one device (klab-bench) does not offer "--device all" in its messages.
TEST(DeviceRequest, ACommandOfOneDeviceDoesNotOfferAll) {
    expect_error([] { select_one_device(parse_device_request("all", false), "klab-bench"); },
                 "--device all: klab-bench runs on one device");
    try {
        parse_device_request("x", false);
        ADD_FAILURE() << "x was taken";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "--device x: not a device index; allowed: --device N (0, 1, ... as `klab info` lists them)");
    }
    try {
        requested_devices(parse_device_request("7", false), fake_machine(), nullptr);
        ADD_FAILURE() << "device 7 was found";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("allowed: --device 0 ... 2"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("--device all"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace klab

namespace klab::cli {
namespace {

TEST(DeviceFanout, OneStudyPerGpuModelTheOtherGpuIdle) {
    const StudyPlan plan = plan_studies(fake_machine().devices);
    ASSERT_EQ(plan.studies.size(), 2u);
    EXPECT_EQ(plan.studies[0].device.index, 0);
    EXPECT_EQ(plan.studies[0].slug, "nvidia-h200");
    EXPECT_EQ(plan.studies[1].device.index, 2);
    EXPECT_EQ(plan.studies[1].slug, "nvidia-l4");
    ASSERT_EQ(plan.idle.size(), 1u);
    EXPECT_NE(plan.idle[0].find("gpu 1 NVIDIA H200: idle; gpu 0 runs the nvidia-h200 study"), std::string::npos) << plan.idle[0];
}

TEST(DeviceFanout, TheGpusOfOneModelShareItsClasses) {
    const std::vector<DeviceShare> shares = plan_tuning(fake_machine().devices);
    ASSERT_EQ(shares.size(), 3u);
    EXPECT_EQ((std::vector<int>{shares[0].share, shares[0].shares, shares[1].share, shares[1].shares, shares[2].share, shares[2].shares}),
              (std::vector<int>{1, 2, 2, 2, 1, 1}));
    EXPECT_EQ(shares[1].slug, "nvidia-h200");
    EXPECT_EQ(parse_class_share("2/3"), std::make_pair(2, 3));
    for (const char* bad : {"0/2", "3/2", "1/", "/2", "a/b", "1/2x", "1", ""}) {
        expect_error([&] { parse_class_share(bad); }, "allowed: K/N with 1 <= K <= N");
    }
}

TEST(DeviceFanout, TheChildCommandLineReplacesOrAddsAnOption) {
    using Args = std::vector<std::string>;
    EXPECT_EQ(with_option({"klab", "run", "--device", "all", "--study", "quick"}, "--device", "1"),
              (Args{"klab", "run", "--device", "1", "--study", "quick"}));
    EXPECT_EQ(with_option({"klab", "tune", "--device=all"}, "--device", "0"), (Args{"klab", "tune", "--device=0"}));
    EXPECT_EQ(with_option({"klab", "run", "--out", "x"}, "--out", "x/nvidia-l4"), (Args{"klab", "run", "--out", "x/nvidia-l4"}));
    EXPECT_EQ(with_option({"klab", "tune", "--device", "all"}, "--class-share", "2/2"),
              (Args{"klab", "tune", "--device", "all", "--class-share", "2/2"}));
    // The program's own name is never taken for the option.
    EXPECT_EQ(with_option({"--device"}, "--device", "0"), (Args{"--device", "--device", "0"}));
}

TEST(DeviceFanout, ChildrenRunAtOnceWithTheirLinesPrefixed) {
    testing::internal::CaptureStdout();
    const std::vector<ChildResult> results = run_children({
        {"first", {"/bin/sh", "-c", "echo one; echo two; exit 0"}},
        {"second", {"/bin/sh", "-c", "printf 'no newline'; exit 3"}},
        {"missing", {"/nonexistent/klab", "run"}},
    });
    const std::string out = testing::internal::GetCapturedStdout();
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].exit_code, 0);
    EXPECT_EQ(results[0].how, "exit 0");
    EXPECT_EQ(results[1].exit_code, 3);
    EXPECT_EQ(results[2].exit_code, -1);
    EXPECT_NE(results[2].how.find("could not be started"), std::string::npos) << results[2].how;
    // Every line comes whole, with its child's name, and each child's lines keep their order. How
    // the children's lines interleave is up to the scheduler: "[second] no newline" may well come
    // between "[first] one" and "[first] two".
    const std::size_t one = out.find("[first] one\n");
    const std::size_t two = out.find("[first] two\n");
    EXPECT_NE(one, std::string::npos) << out;
    EXPECT_NE(two, std::string::npos) << out;
    EXPECT_LT(one, two) << out;
    EXPECT_NE(out.find("[second] no newline\n"), std::string::npos) << out;
    EXPECT_EQ(out.size(), std::string("[first] one\n[first] two\n[second] no newline\n").size()) << out;
}

// The processes of `--device all` really run side by side: each child waits (up to 60 s) for a
// file the other one writes, so run one after the other they could not both succeed.
TEST(DeviceFanout, ChildrenRunSideBySide) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_side_by_side_{}", getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto waits_for = [&](const std::string& mine, const std::string& theirs) {
        return fmt::format("touch {0}/{1}; i=0; while [ ! -e {0}/{2} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
                           "[ -e {0}/{2} ]",
                           dir.string(), mine, theirs);
    };
    testing::internal::CaptureStdout();
    const std::vector<ChildResult> results = run_children({{"a", {"/bin/sh", "-c", waits_for("a", "b")}},
                                                           {"b", {"/bin/sh", "-c", waits_for("b", "a")}}});
    (void)testing::internal::GetCapturedStdout();
    fs::remove_all(dir);
    EXPECT_EQ(results[0].exit_code, 0);
    EXPECT_EQ(results[1].exit_code, 0);
}

// run_per_device with a script standing in for klab: each child gets klab's command line with
// --device N and its options; a failing child is named, with its exit.
TEST(DeviceFanout, EachDeviceGetsItsOwnCommandLineAndAFailureIsNamed) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_fanout_{}", getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path fake_klab = dir / "fake-klab";
    std::ofstream(fake_klab) << "#!/bin/sh\necho \"args: $*\"\ncase \" $* \" in *\" --device 2 \"*) exit 4 ;; esac\n";
    fs::permissions(fake_klab, fs::perms::owner_all);
    const std::vector<std::string> saved = command_line();
    const char* argv[] = {"klab", "tune", "--device", "all", "--size", "HD"};
    set_command_line(6, const_cast<char**>(argv));
    const std::vector<DeviceShare> shares = plan_tuning(fake_machine().devices);
    std::vector<DeviceJob> jobs;
    for (const DeviceShare& s : shares) {
        jobs.push_back({s, {{"--class-share", fmt::format("{}/{}", s.share, s.shares)}}, "records in results/" + s.slug});
    }
    testing::internal::CaptureStdout();
    const std::vector<std::string> failed = run_per_device(jobs, fake_klab.string());
    const std::string out = testing::internal::GetCapturedStdout();
    std::vector<char*> restore;
    for (const std::string& a : saved) restore.push_back(const_cast<char*>(a.c_str()));
    set_command_line(static_cast<int>(restore.size()), restore.data());
    fs::remove_all(dir);

    EXPECT_NE(out.find("[gpu 0 nvidia-h200] args: tune --device 0 --size HD --class-share 1/2\n"), std::string::npos) << out;
    EXPECT_NE(out.find("[gpu 1 nvidia-h200] args: tune --device 1 --size HD --class-share 2/2\n"), std::string::npos) << out;
    EXPECT_NE(out.find("[gpu 2 nvidia-l4] args: tune --device 2 --size HD --class-share 1/1\n"), std::string::npos) << out;
    EXPECT_NE(out.find("gpu 0 NVIDIA H200: done in "), std::string::npos) << out;
    EXPECT_NE(out.find("s; records in results/nvidia-h200\n"), std::string::npos) << out;
    EXPECT_NE(out.find("gpu 2 NVIDIA L4: FAILED (exit 4) after "), std::string::npos) << out;
    EXPECT_EQ(failed, (std::vector<std::string>{"gpu 2 nvidia-l4: exit 4"}));
}

// The klab executable: --device is checked before any device call, so these answer the same with
// or without a GPU.
TEST(DeviceOption, BadUsesAreRefusedBeforeAnyDeviceWork) {
    const auto klab_fails_with = [](const std::string& arguments, const std::string& fragment) {
        const test::CommandResult r = test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments);
        EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
        EXPECT_NE(r.output.find(fragment), std::string::npos) << arguments << "\n" << r.output;
    };
    const std::string image = std::string(KLAB_SOURCE_DIR) + "/data/fixtures/rgb_4x2.png";
    const std::string out = (fs::temp_directory_path() / fmt::format("klab_device_option_{}.png", getpid())).string();
    klab_fails_with("apply --backend gpu --device x --filter box:3 " + image + " " + out, "--device x: not a device index");
    klab_fails_with("apply --device 0 --filter box:3 " + image + " " + out, "--device 0 with --backend cpu: the CPU backend uses no device");
    klab_fails_with("apply --backend gpu --device all --filter box:3 " + image + " " + out, "--device all with IN OUT: one file runs on one GPU");
    klab_fails_with("info --device -1", "--device -1: not a device index");
    klab_fails_with("run --device all --study smoke", "klab run --study smoke without --out");
    klab_fails_with("tune --device 0 --plan-for H200", "--device 0 with --plan-for H200");
    EXPECT_FALSE(fs::exists(out));
    // A device that is not there: named (with a GPU) or "no CUDA device" (without), never device 0 instead.
    const test::CommandResult info = test::run_command(std::string(KLAB_CLI_PATH) + " info --device 63 --json");
    EXPECT_EQ(info.exit_code, 2) << info.output;
    EXPECT_TRUE(info.output.find("--device 63: there is no CUDA device 63; the devices here are 0: ") != std::string::npos ||
                info.output.find("--device 63: no CUDA device found") != std::string::npos)
        << info.output;
}

}  // namespace
}  // namespace klab::cli
