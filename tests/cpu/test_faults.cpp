// Nothing is lost under faults: a full disk or a file-size limit while a batch writes, inputs
// deleted or truncated while it runs, SIGINT and SIGTERM in the middle of a batch or of a tuning-
// cache store (harness/interrupt.hpp), and two processes storing into one tuning cache at once.
// Each checks the same promise: every output is complete and right or absent, no temporary file
// is left behind, the exit status says what happened, and every finished file or record is kept.
// `klab tune` itself needs a GPU; klab-cache-writer (tests/tools/) stores records the way it does,
// and tests/gpu/test_tune_interrupt.cpp interrupts the real one on a GPU machine.
// One file over ~400 lines: every test holds the one promise above under another fault, with one
// fixture (Faults: a scratch folder, the child processes, the checks of what is left behind) that
// the tuning-cache faults extend (CacheFaults).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "autotune/tuning_cache.hpp"
#include "cli/apply_batch.hpp"
#include "cli/device_fanout.hpp"
#include "harness/interrupt.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"
#include "tests/common/child_process.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;
using test::ChildProcess;
using test::describe_status;

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

// write_file_atomically's temporary files (".NAME.XXXXXX.tmp") anywhere under `folder`.
std::vector<std::string> temporary_files(const fs::path& folder) {
    std::vector<std::string> found;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(folder)) {
        if (entry.path().extension() == ".tmp") found.push_back(entry.path().string());
    }
    return found;
}

// A noise image: every output of it differs from every other file's.
ImageU8 noise(int width, int height, std::uint64_t seed) {
    return synth::generate(synth::Pattern::noise, width, height, 3, seed);
}

class Faults : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("faults");
        fs::create_directories(dir / "in");
    }
    void TearDown() override {
        if (!mounted.empty()) ::umount2(mounted.c_str(), MNT_DETACH);
        fs::remove_all(dir);
    }

    // `klab apply` over `inputs` into `out_dir` as PPM (box 3x3 on the CPU); the raw wait status.
    int apply(const std::vector<fs::path>& inputs, const fs::path& out_dir, std::string& output,
              const std::string& shell_prefix = "") {
        std::string command = fmt::format("{}exec '{}' apply --filter box:3 --format ppm --out-dir '{}'", shell_prefix,
                                          KLAB_CLI_PATH, out_dir.string());
        for (const fs::path& input : inputs) command += " '" + input.string() + "'";
        ChildProcess klab({"/bin/sh", "-c", command});
        const int status = klab.wait();
        output = klab.output();
        return status;
    }

    // Every output under `out_dir` either equals the one of an unhindered run or is absent; the
    // number present.
    int expect_complete_or_absent(const std::vector<fs::path>& inputs, const fs::path& out_dir) {
        const fs::path reference = dir / "reference";
        std::string log;
        const int status = apply(inputs, reference, log);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
        int present = 0;
        for (const fs::path& input : inputs) {
            const fs::path name = fs::path(input.filename()).replace_extension(".ppm");
            if (!fs::exists(out_dir / name)) continue;
            ++present;
            EXPECT_TRUE(same_pixels(io::read_image(out_dir / name), io::read_image(reference / name))) << name;
        }
        EXPECT_TRUE(temporary_files(out_dir).empty()) << fmt::format("{}", fmt::join(temporary_files(out_dir), ", "));
        return present;
    }

    fs::path dir;
    fs::path mounted;
};

TEST_F(Faults, AFullDiskFailsTheFilesThatDoNotFitAndLeavesNoPartialFile) {
    const fs::path disk = dir / "small_disk";
    fs::create_directories(disk);
    if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=256k") != 0) {
        const std::string reason = std::strerror(errno);
        GTEST_SKIP() << "cannot mount a 256 KiB tmpfs at " << disk.string() << " (" << reason
                     << "): this test needs root with CAP_SYS_ADMIN; Faults.AFileSizeLimit... covers the failing write";
    }
    mounted = disk;
    std::vector<fs::path> inputs;
    for (int i = 1; i <= 12; ++i) {  // 12 outputs of 30 kB into 256 KiB
        inputs.push_back(dir / "in" / fmt::format("f{:02}.png", i));
        io::write_image(inputs.back(), noise(100, 100, static_cast<std::uint64_t>(i)));
    }
    std::string output;
    const int status = apply(inputs, disk / "out", output);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << describe_status(status) << "\n" << output;
    EXPECT_TRUE(contains(output, "No space left on device")) << output;
    const int present = expect_complete_or_absent(inputs, disk / "out");
    EXPECT_GT(present, 0) << output;
    EXPECT_LT(present, 12) << output;
    EXPECT_TRUE(contains(output, fmt::format("{} of 12 written", present))) << output;
}

// RLIMIT_FSIZE makes a write fail as a full disk does (EFBIG rather than ENOSPC), and needs no
// privilege. Without klab ignoring SIGXFSZ, the limit would kill it in the middle of a file.
TEST_F(Faults, AFileSizeLimitFailsTheLargeOutputsAndLeavesNoPartialFile) {
    std::vector<fs::path> inputs;
    for (int i = 1; i <= 6; ++i) {  // odd files 8x8 (a 200-byte output), even ones 200x200 (120 kB)
        inputs.push_back(dir / "in" / fmt::format("f{}.png", i));
        const int side = i % 2 == 1 ? 8 : 200;
        io::write_image(inputs.back(), noise(side, side, static_cast<std::uint64_t>(i)));
    }
    std::string output;
    // 64 blocks: 32 kB where the shell counts 512-byte blocks (dash), 64 kB where 1024 (bash).
    const int status = apply(inputs, dir / "out", output, "ulimit -f 64 && ");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << describe_status(status) << "\n" << output;
    EXPECT_TRUE(contains(output, "File too large")) << output;
    EXPECT_TRUE(contains(output, "3 of 6 written")) << output;
    EXPECT_EQ(expect_complete_or_absent(inputs, dir / "out"), 3) << output;
    for (int i = 2; i <= 6; i += 2) EXPECT_FALSE(fs::exists(dir / "out" / fmt::format("f{}.ppm", i)));
}

// The batch runner itself, so that the inputs change at a known moment: while the first file is
// filtered, the reader has read at most three files ahead, so files 6 and 7 are changed before it
// reads them.
TEST_F(Faults, InputsDeletedOrTruncatedDuringABatchFailAloneAndTheOthersAreWritten) {
    for (int i = 1; i <= 8; ++i) io::write_image(dir / "in" / fmt::format("f{}.png", i), noise(40, 30, static_cast<std::uint64_t>(i)));
    const std::vector<cli::BatchFile> files = cli::plan_batch({(dir / "in").string()}, "", dir / "out", "");
    const fs::path deleted = dir / "in" / "f6.png";
    const fs::path truncated = dir / "in" / "f7.png";
    const auto copy_and_sabotage = [&](ImageU8 image, const cli::BatchFile& file) {
        if (file.input.filename() == "f1.png") {
            fs::remove(deleted);
            fs::resize_file(truncated, fs::file_size(truncated) / 2);
        }
        cli::FilteredImage filtered;
        filtered.image = std::move(image);
        filtered.description = "copied";
        return filtered;
    };
    std::string error;
    try {
        cli::run_batch(files, copy_and_sabotage);
    } catch (const Error& e) {
        error = e.what();
    }
    EXPECT_TRUE(contains(error, fmt::format("6 of 8 written; failed: {}, {}", deleted.string(), truncated.string()))) << error;
    for (int i = 1; i <= 8; ++i) {
        const fs::path out = dir / "out" / fmt::format("f{}.png", i);
        if (i == 6 || i == 7) {
            EXPECT_FALSE(fs::exists(out)) << out;
        } else {
            EXPECT_TRUE(same_pixels(io::read_image(out), noise(40, 30, static_cast<std::uint64_t>(i)))) << out;
        }
    }
    EXPECT_TRUE(temporary_files(dir / "out").empty());
}

// Whether process `pid` holds `file` open, waiting up to 120 s for it (a guard against a hang, not
// a timing assertion).
bool comes_to_hold_open(pid_t pid, const fs::path& file) {
    struct stat target {};
    if (::stat(file.c_str(), &target) != 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        std::error_code ec;
        for (const fs::directory_entry& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
            struct stat held {};
            if (::stat(fd.path().c_str(), &held) == 0 && held.st_dev == target.st_dev && held.st_ino == target.st_ino) return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// A batch of a, b, c, d where c is a FIFO the test holds open: the batch writes a and b, then
// waits for c's bytes. The signal comes then; c's bytes follow it. So the signal lands in the
// middle of the batch on every machine, however fast.
class BatchSignal : public Faults, public ::testing::WithParamInterface<int> {
protected:
    void SetUp() override {
        Faults::SetUp();
        for (const char* name : {"a.png", "b.png", "d.png"}) io::write_image(dir / "in" / name, noise(16, 8, name[0]));
        fifo = dir / "in" / "c.png";
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
        // A writer from the start, so that klab's open() does not wait; not inherited by klab, whose
        // reader would then never see the end of the FIFO.
        fifo_fd = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
        ASSERT_GE(fifo_fd, 0);
        std::ofstream(dir / "list.txt") << "a.png\nb.png\nc.png\nd.png\n";
    }
    void TearDown() override {
        if (fifo_fd >= 0) ::close(fifo_fd);
        Faults::TearDown();
    }
    // Starts the batch and waits until a and b are written and klab's reader has c open. (Were the
    // FIFO's last descriptor closed before that open, its bytes would be gone and the open would
    // wait for a writer forever.)
    std::unique_ptr<ChildProcess> start_batch() {
        auto klab = std::make_unique<ChildProcess>(
            std::vector<std::string>{KLAB_CLI_PATH, "apply", "--filter", "box:3", "--out-dir", (dir / "out").string(), "--list",
                                     (dir / "list.txt").string()},
            (dir / "in").string());
        int written = 0;
        EXPECT_TRUE(klab->read_until([&](const std::string& line) { return contains(line, " -> ") && ++written == 2; }))
            << klab->output();
        EXPECT_TRUE(comes_to_hold_open(klab->pid(), fifo)) << "klab never opened " << fifo << "\n" << klab->output();
        return klab;
    }
    // Gives the batch c's bytes and the end of the FIFO.
    void finish_fifo() {
        const std::vector<std::uint8_t> png = io::encode_image(noise(16, 8, 'c'), io::ImageFormat::png, "c.png");
        EXPECT_EQ(::write(fifo_fd, png.data(), png.size()), static_cast<ssize_t>(png.size()));
        ::close(fifo_fd);
        fifo_fd = -1;
    }
    fs::path fifo;
    int fifo_fd = -1;
};

TEST_P(BatchSignal, StopsAfterTheFileInProgressKeepsTheWrittenOnesAndEndsWithTheSignal) {
    const int signal = GetParam();
    const std::unique_ptr<ChildProcess> klab = start_batch();
    klab->send(signal);
    finish_fifo();
    const int status = klab->wait();
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << describe_status(status) << "\n" << klab->output();
    EXPECT_TRUE(contains(klab->output(), fmt::format("interrupted by {}; 2 of 4 written; not processed: 2 file(s)",
                                                     signal_name(signal))))
        << klab->output();
    std::string log;  // a.png filtered alone, for the comparison
    ASSERT_EQ(apply({dir / "in" / "a.png"}, dir / "reference", log), 0) << log;
    EXPECT_TRUE(same_pixels(io::read_image(dir / "out" / "a.png"), io::read_image(dir / "reference" / "a.ppm")));
    EXPECT_TRUE(fs::exists(dir / "out" / "b.png"));
    EXPECT_FALSE(fs::exists(dir / "out" / "c.png"));
    EXPECT_FALSE(fs::exists(dir / "out" / "d.png"));
    EXPECT_TRUE(temporary_files(dir / "out").empty());
}

TEST_P(BatchSignal, ASecondSignalEndsTheBatchAtOnceAndLeavesNoTemporaryFile) {
    const int signal = GetParam();
    const std::unique_ptr<ChildProcess> klab = start_batch();
    klab->send(signal);
    // The second only once the first was handled (two pending signals would merge into one).
    EXPECT_TRUE(klab->read_until([](const std::string& line) { return contains(line, "send it again to stop at once"); }))
        << klab->output();
    klab->send(signal);
    const int status = klab->wait();  // c's bytes never come: the reader is still waiting for them
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << describe_status(status) << "\n" << klab->output();
    EXPECT_TRUE(fs::exists(dir / "out" / "a.png"));
    EXPECT_TRUE(fs::exists(dir / "out" / "b.png"));
    EXPECT_FALSE(fs::exists(dir / "out" / "c.png"));
    EXPECT_TRUE(temporary_files(dir / "out").empty());
}

INSTANTIATE_TEST_SUITE_P(Signals, BatchSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& signal) { return signal_name(signal.param); });

// The handler itself: a registered temporary file is removed when a signal ends the process, at
// once outside a GracefulStop, at the second signal inside one; and write_file_atomically's
// temporary file is registered.
TEST_F(Faults, ASignalThatEndsTheProcessRemovesItsTemporaryFiles) {
    const fs::path temp = dir / ".out.png.abcdef.tmp";
    EXPECT_EXIT(
        {
            install_interrupt_handlers();
            const TempFileRegistration registration(temp.string());
            std::ofstream(temp) << "half an image";
            std::raise(SIGTERM);
            std::_Exit(0);  // not reached
        },
        ::testing::KilledBySignal(SIGTERM), "");
    EXPECT_FALSE(fs::exists(temp));
    EXPECT_EXIT(
        {
            install_interrupt_handlers();
            const GracefulStop graceful;
            std::raise(SIGINT);
            if (interrupt_signal() != SIGINT) std::_Exit(3);  // the first one is only recorded
            const TempFileRegistration registration(temp.string());
            std::ofstream(temp) << "half an image";
            std::raise(SIGINT);
            std::_Exit(4);  // not reached
        },
        ::testing::KilledBySignal(SIGINT), "klab: SIGINT: stopping after the work in progress");
    EXPECT_FALSE(fs::exists(temp));
    // The real writer: a thread sends SIGTERM as soon as write_file_atomically creates its temporary
    // file. The thread sleeps in an inotify read set up before the write starts, so it wakes at the
    // creation itself, with the 64 MiB write and its flush still ahead; a thread that polled the
    // folder instead competed with the writer for the CPU and could miss that window on a loaded
    // machine. (The file is registered before it is created: a signal at once finds it.)
    const fs::path target = dir / "large.bin";
    EXPECT_EXIT(
        {
            install_interrupt_handlers();
            const int watch = ::inotify_init1(IN_CLOEXEC);
            if (watch < 0 || ::inotify_add_watch(watch, dir.c_str(), IN_CREATE) < 0) std::_Exit(5);
            std::thread([watch] {
                alignas(inotify_event) char events[4096];
                for (;;) {
                    const ssize_t n = ::read(watch, events, sizeof events);
                    if (n <= 0) continue;
                    for (ssize_t at = 0; at < n;) {
                        const auto* event = reinterpret_cast<const inotify_event*>(events + at);
                        if (event->len > 0 && fs::path(event->name).extension() == ".tmp") ::kill(::getpid(), SIGTERM);
                        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
                    }
                }
            }).detach();
            io::write_file_atomically(target, std::vector<std::uint8_t>(std::size_t{64} << 20, 7));
            std::_Exit(0);  // the write finished first: the test fails
        },
        ::testing::KilledBySignal(SIGTERM), "");
    EXPECT_FALSE(fs::exists(target));
    EXPECT_TRUE(temporary_files(dir).empty());
}

// klab run's output while the benchmarks run: bench.json.partial-PID (and klab-bench's own file
// beside it) is removed by a signal that ends the run, as a temporary file of a write is; and so
// is klab-bench's when it runs on its own. The
// signal comes once one of them exists (on this machine, the CPU reference's rows of the smoke
// study; on a GPU machine, the GPU's).
TEST_F(Faults, ASignalDuringTheBenchmarksLeavesNoPartialOutput) {
    const fs::path out = dir / "run";
    const auto partial_files = [&] {
        std::vector<std::string> found;
        std::error_code ec;
        for (fs::directory_iterator it(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
            if (contains(it->path().filename().string(), ".partial-")) found.push_back(it->path().string());
        }
        return found;
    };
    // 100 repetitions: a run far longer than the time the signal takes to arrive (it ends the run).
    ChildProcess klab({KLAB_CLI_PATH, "run", "--study", "smoke", "--no-tune", "--no-report", "--repetitions", "100", "--out",
                       out.string()},
                      dir.string());
    ASSERT_TRUE(klab.read_until([&](const std::string&) { return !partial_files().empty(); })) << klab.output();
    klab.send(SIGTERM);
    const int status = klab.wait();
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << describe_status(status) << "\n" << klab.output();
    EXPECT_TRUE(partial_files().empty()) << fmt::format("{}", fmt::join(partial_files(), ", "));
    EXPECT_FALSE(fs::exists(out / "bench.json"));

    // klab-bench on its own: its PATH.partial-PID goes too.
    ChildProcess bench({KLAB_BENCH_PATH, "--klab_study=smoke", "--benchmark_repetitions=100", "--benchmark_out_format=json",
                        "--benchmark_out=" + (out / "bench.json").string()},
                       dir.string());
    ASSERT_TRUE(bench.read_until([&](const std::string&) { return !partial_files().empty(); })) << bench.output();
    bench.send(SIGTERM);
    const int bench_status = bench.wait();
    EXPECT_TRUE(WIFSIGNALED(bench_status) && WTERMSIG(bench_status) == SIGTERM) << describe_status(bench_status) << "\n"
                                                                               << bench.output();
    EXPECT_TRUE(partial_files().empty()) << fmt::format("{}", fmt::join(partial_files(), ", "));
    EXPECT_FALSE(fs::exists(out / "bench.json"));
}

// ---------------------------------------------------------------------------------------------
// The tuning cache

class CacheFaults : public Faults {
protected:
    fs::path results() const { return dir / "results"; }
    fs::path cache() const { return results() / "nvidia-h200" / "autotune.json"; }

    std::unique_ptr<ChildProcess> writer(const std::string& name, int count) const {
        return std::make_unique<ChildProcess>(
            std::vector<std::string>{KLAB_CACHE_WRITER_PATH, results().string(), name, std::to_string(count)});
    }
    // The variants of the cache's records; the cache must load without a warning.
    std::set<std::string> stored() const {
        std::vector<std::string> warnings;
        const autotune::TuningCache loaded = autotune::TuningCache::load_file(cache(), warnings);
        EXPECT_TRUE(warnings.empty()) << fmt::format("{}", fmt::join(warnings, "\n"));
        std::set<std::string> names;
        for (const autotune::TuningRecord& r : loaded.records()) names.insert(r.variant);
        return names;
    }
    // A cache of A.0 and A.1, and writer B (5 records) interrupted by `signal` while its first
    // store waits for the cache's lock, which this test holds (the returned descriptor) as a
    // store in another process would.
    std::pair<int, std::unique_ptr<ChildProcess>> writer_signalled_in_a_store(int signal) {
        EXPECT_EQ(writer("A", 2)->wait(), 0);
        const int lock = ::open((cache().string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        EXPECT_EQ(::flock(lock, LOCK_EX), 0);
        auto b = writer("B", 5);
        EXPECT_TRUE(b->read_until([](const std::string& line) { return line == "storing B.0"; })) << b->output();
        b->send(signal);
        EXPECT_TRUE(b->read_until([](const std::string& line) { return contains(line, "send it again to stop at once"); }))
            << b->output();
        return {lock, std::move(b)};
    }
};

TEST_F(CacheFaults, TwoWritersAtOnceLoseNoRecord) {
    const auto a = writer("A", 40);
    const auto b = writer("B", 40);
    const int status_a = a->wait();
    const int status_b = b->wait();
    ASSERT_TRUE(WIFEXITED(status_a) && WEXITSTATUS(status_a) == 0) << a->output();
    ASSERT_TRUE(WIFEXITED(status_b) && WEXITSTATUS(status_b) == 0) << b->output();
    std::set<std::string> expected;
    for (int i = 0; i < 40; ++i) {
        expected.insert(fmt::format("A.{}", i));
        expected.insert(fmt::format("B.{}", i));
    }
    EXPECT_EQ(stored(), expected);
    EXPECT_TRUE(temporary_files(results()).empty());
}

// The signal comes while the writer waits for the lock inside its store: that store completes
// once the lock is free, and nothing after it starts.
TEST_F(CacheFaults, ASignalDuringAStoreKeepsThatRecordAndStartsNoOther) {
    const auto [lock, b] = writer_signalled_in_a_store(SIGINT);
    ::close(lock);  // the store goes on and completes
    const int status = b->wait();
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << describe_status(status) << "\n" << b->output();
    EXPECT_TRUE(contains(b->output(), "interrupted by SIGINT; 1 record(s) stored")) << b->output();
    EXPECT_EQ(stored(), (std::set<std::string>{"A.0", "A.1", "B.0"}));
    EXPECT_TRUE(temporary_files(results()).empty());
}

TEST_F(CacheFaults, ASecondSignalDuringAStoreLeavesTheCacheAsItWas) {
    const auto [lock, b] = writer_signalled_in_a_store(SIGTERM);
    b->send(SIGTERM);
    const int status = b->wait();
    ::close(lock);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << describe_status(status) << "\n" << b->output();
    EXPECT_EQ(stored(), (std::set<std::string>{"A.0", "A.1"}));
    EXPECT_TRUE(temporary_files(results()).empty());
}

// `klab tune --device all` runs one klab tune per device (cli/device_fanout.hpp) in process groups
// of their own: a signal to klab reaches each of them once, through klab, and each stops after
// its store as klab tune does. Two cache writers stand in for the per-device tuners here; the
// signal comes as soon as the cache holds a record. (A death test: the recorded signal stays in
// the process that received it.)
TEST_F(CacheFaults, ASignalToKlabReachesItsPerDeviceProcessesOnce) {
    const fs::path file = cache();
    const std::string folder = results().string();
    EXPECT_EXIT(
        {
            install_interrupt_handlers();
            const GracefulStop graceful;
            std::thread([file] {
                // The SIGINT below goes to the process: this thread must not take it, so that it
                // waits while run_children holds signals back (harness/interrupt.hpp, SignalsHeld).
                const sigset_t handled = handled_signal_set();
                ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);
                for (std::vector<std::string> warnings;; warnings.clear()) {
                    if (fs::exists(file) && !autotune::TuningCache::load_file(file, warnings).records().empty()) break;
                }
                ::kill(::getpid(), SIGINT);
            }).detach();
            const std::vector<cli::ChildResult> outcomes =
                cli::run_children({{"a", {KLAB_CACHE_WRITER_PATH, folder, "A", "1000"}},
                                   {"b", {KLAB_CACHE_WRITER_PATH, folder, "B", "1000"}}});
            const bool both_stopped_by_it = outcomes.size() == 2 && outcomes[0].how == "killed by signal 2" &&
                                            outcomes[1].how == "killed by signal 2";
            std::_Exit(both_stopped_by_it ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
    const std::set<std::string> names = stored();
    EXPECT_GE(names.size(), 1u);
    EXPECT_LT(names.size(), 2000u);
    for (const char* writer_name : {"A", "B"}) {  // each writer's records are a run from 0: none lost
        std::size_t count = 0;
        while (names.count(fmt::format("{}.{}", writer_name, count)) == 1) ++count;
        EXPECT_EQ(count, static_cast<std::size_t>(std::count_if(names.begin(), names.end(), [&](const std::string& n) {
                      return n.rfind(std::string(writer_name) + ".", 0) == 0;
                  })));
    }
    EXPECT_TRUE(temporary_files(results()).empty());
}

}  // namespace
}  // namespace klab
