// --device on a GPU machine (issue 19): the selection makes the device current, `klab info --json`
// lists every device with its slug, an index past the last is an error naming the devices (for
// info, apply and klab-bench alike), CUDA_VISIBLE_DEVICES still decides what CUDA shows, and
// `klab apply --device all` writes the same files as `--device 0`, byte for byte, however many
// GPUs there are. (Timing one GPU against two is scripts/gpu-devices.sh's job: no timing here.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cuda_runtime_api.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autotune/gpu_model.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

using test::file_bytes;

test::CommandResult klab(const std::string& arguments) { return test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments); }

class Devices : public test::GpuTest {};

TEST_F(Devices, SelectingADeviceMakesItCurrent) {
    const DeviceQuery query = query_devices();
    const int last = query.devices.back().index;
    const DeviceInfo chosen = select_one_device(parse_device_request(std::to_string(last)), "test");
    EXPECT_EQ(chosen.index, last);
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, last);
    EXPECT_EQ(current_device(query).name, query.devices.back().name);
    (void)select_one_device(parse_device_request("0"), "test");  // the other tests expect device 0
}

TEST_F(Devices, InfoListsEveryDeviceWithItsSlug) {
    const DeviceQuery query = query_devices();
    const test::CommandResult r = klab("info --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json info = nlohmann::json::parse(r.output);
    ASSERT_EQ(info["devices"].size(), query.devices.size()) << r.output;
    for (std::size_t i = 0; i < query.devices.size(); ++i) {
        EXPECT_EQ(info["devices"][i]["index"], query.devices[i].index);
        EXPECT_EQ(info["devices"][i]["slug"], autotune::gpu_slug(query.devices[i].name));
    }
    const test::CommandResult first = klab("info --json --device 0");
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_EQ(nlohmann::json::parse(first.output)["devices"].size(), 1u);
}

TEST_F(Devices, AnIndexPastTheLastNamesTheDevicesThereAre) {
    const DeviceQuery query = query_devices();
    const std::string missing = std::to_string(query.devices.size());
    const std::string expected = fmt::format("--device {0}: there is no CUDA device {0}; the devices here are 0: {1}", missing,
                                             query.devices.front().name);
    const fs::path in = fs::temp_directory_path() / fmt::format("klab_devices_{}_in.png", getpid());
    const fs::path out = fs::temp_directory_path() / fmt::format("klab_devices_{}_out.png", getpid());
    io::write_image(in, synth::generate(synth::Pattern::natural, 32, 16, 3));
    for (const std::string& command : {"info --device " + missing,
                                       "apply --backend gpu --device " + missing + " --filter box:3 " + in.string() + " " + out.string(),
                                       "tune --dry-run --size HD --mask-size 3 --device " + missing,
                                       "run --study smoke --out " + out.string() + " --device " + missing}) {
        const test::CommandResult r = klab(command);
        EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
        EXPECT_NE(r.output.find(expected), std::string::npos) << command << "\n" << r.output;
    }
    const test::CommandResult bench =
        test::run_command(std::string(KLAB_BENCH_PATH) + " --klab_study=smoke --benchmark_list_tests=true --device " + missing);
    EXPECT_EQ(bench.exit_code, 2) << bench.output;
    EXPECT_NE(bench.output.find(expected), std::string::npos) << bench.output;
    EXPECT_FALSE(fs::exists(out));
    fs::remove(in);
}

// CUDA_VISIBLE_DEVICES keeps deciding what CUDA shows: empty hides every GPU (and the error says so).
TEST_F(Devices, CudaVisibleDevicesStillDecides) {
    const test::CommandResult hidden = test::run_command("CUDA_VISIBLE_DEVICES= " + std::string(KLAB_CLI_PATH) + " info --device 0");
    EXPECT_EQ(hidden.exit_code, 2) << hidden.output;
    EXPECT_NE(hidden.output.find("(CUDA_VISIBLE_DEVICES= decides which GPUs CUDA shows)"), std::string::npos) << hidden.output;
    const DeviceQuery query = query_devices();
    const std::string last = std::to_string(query.devices.back().index);
    const test::CommandResult one =
        test::run_command("CUDA_VISIBLE_DEVICES=" + last + " " + std::string(KLAB_CLI_PATH) + " info --json --device 0");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    EXPECT_EQ(nlohmann::json::parse(one.output)["devices"][0]["name"], query.devices.back().name) << one.output;
}

// A batch over every GPU writes what one GPU writes; the file lines name the GPU that filtered each.
TEST_F(Devices, ApplyOverEveryGpuWritesWhatOneGpuWrites) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_devices_apply_{}", getpid());
    fs::remove_all(dir);
    fs::create_directories(dir / "in");
    for (int i = 0; i < 6; ++i) {
        io::write_image(dir / "in" / fmt::format("f{}.png", i), synth::generate(synth::Pattern::natural, 640 + 64 * i, 360, 3, i));
    }
    const std::string options = "apply --backend gpu --filter gaussian:7 --border mirror --results " + (dir / "none").string() + " ";
    const test::CommandResult one = klab(options + "--device 0 --out-dir " + (dir / "one").string() + " " + (dir / "in").string());
    ASSERT_EQ(one.exit_code, 0) << one.output;
    EXPECT_NE(one.output.find(" on gpu 0 ("), std::string::npos) << one.output;
    const test::CommandResult all = klab(options + "--device all --out-dir " + (dir / "all").string() + " " + (dir / "in").string());
    ASSERT_EQ(all.exit_code, 0) << all.output;
    EXPECT_NE(all.output.find("6 of 6 written"), std::string::npos) << all.output;
    for (int i = 0; i < 6; ++i) {
        const std::string name = fmt::format("f{}.png", i);
        EXPECT_EQ(file_bytes(dir / "one" / name), file_bytes(dir / "all" / name)) << name;
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace klab
