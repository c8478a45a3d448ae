// klab apply's batch runner (cli/apply_batch.hpp) with a filter that needs no GPU: a failing file
// is reported and the others written; a BatchStop (as after a lost CUDA context) stops the batch
// at that file, and the files after it are not filtered or written. With several workers (the
// GPUs of `--device all`, faked here): the same files written as by one, a free worker takes the
// next file, and a stop in one worker stops them all.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/apply_batch.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"
#include "tests/common/test_util.hpp"

namespace klab::cli {
namespace {

namespace fs = std::filesystem;

class ApplyBatch : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("apply_batch");
        fs::create_directories(dir / "in");
        for (int i = 1; i <= 6; ++i) {
            io::write_image(dir / "in" / fmt::format("f{}.png", i), synth::generate(synth::Pattern::checkerboard, 16, 8, 3));
        }
        files = plan_batch({(dir / "in").string()}, "", dir / "out", "");
    }
    void TearDown() override { fs::remove_all(dir); }
    // Copies the image; throws `T` for file f<failing>.png.
    template <class T>
    BatchFilter failing_on(const std::string& failing) const {
        return [failing](ImageU8 image, const BatchFile& file) {
            if (file.input.filename() == failing) throw T("the filter failed on " + failing);
            FilteredImage f;
            f.image = std::move(image);
            f.description = "copied";
            return f;
        };
    }
    std::string error_of(const std::vector<BatchFilter>& workers) const {
        try {
            run_batch(files, workers);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    }
    std::string error_of(const BatchFilter& filter) const { return error_of(std::vector<BatchFilter>{filter}); }
    fs::path dir;
    std::vector<BatchFile> files;
};

TEST_F(ApplyBatch, AFailingFileIsReportedAndTheOthersAreWritten) {
    ASSERT_EQ(files.size(), 6u);
    const std::string error = error_of(failing_on<Error>("f2.png"));
    EXPECT_NE(error.find("5 of 6 written; failed: " + (dir / "in" / "f2.png").string()), std::string::npos) << error;
    EXPECT_EQ(error.find("not processed"), std::string::npos) << error;
    for (const char* name : {"f1.png", "f3.png", "f4.png", "f5.png", "f6.png"}) EXPECT_TRUE(fs::exists(dir / "out" / name)) << name;
    EXPECT_FALSE(fs::exists(dir / "out" / "f2.png"));
}

// Six files: when f2 stops the batch, the reader is blocked on its full queue (two files ahead),
// so the run must also wake it, or it would wait for ever.
TEST_F(ApplyBatch, ABatchStopEndsTheBatchAtThatFile) {
    const std::string error = error_of(failing_on<BatchStop>("f2.png"));
    EXPECT_NE(error.find("1 of 6 written; failed: " + (dir / "in" / "f2.png").string() +
                         "; not processed after the batch stopped: 4 file(s)"),
              std::string::npos)
        << error;
    EXPECT_TRUE(fs::exists(dir / "out" / "f1.png"));
    for (const char* name : {"f2.png", "f3.png", "f4.png", "f5.png", "f6.png"}) EXPECT_FALSE(fs::exists(dir / "out" / name)) << name;
}

// A filter whose output depends on the image and on nothing else (as a GPU's must): each value
// inverted, the description naming the worker that ran it.
BatchFilter inverting(int worker) {
    return [worker](ImageU8 image, const BatchFile&) {
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                for (int c = 0; c < image.channels(); ++c) image.at(x, y, c) = static_cast<std::uint8_t>(255 - image.at(x, y, c));
        FilteredImage f;
        f.image = std::move(image);
        f.description = fmt::format("inverted by worker {}", worker);
        return f;
    };
}

using test::file_bytes;

TEST_F(ApplyBatch, SeveralWorkersWriteWhatOneWorkerWrites) {
    for (int i = 0; i < 6; ++i) {  // of different sizes, so that files take different times
        io::write_image(dir / "in" / fmt::format("f{}.png", i + 1), synth::generate(synth::Pattern::natural, 40 + 13 * i, 30 + 7 * i, 3));
    }
    ASSERT_EQ(error_of(inverting(0)), "");
    const std::vector<BatchFile> three = plan_batch({(dir / "in").string()}, "", dir / "out3", "");
    run_batch(three, {inverting(0), inverting(1), inverting(2)});
    for (std::size_t i = 0; i < files.size(); ++i) {
        EXPECT_EQ(file_bytes(files[i].output), file_bytes(three[i].output)) << files[i].output;
        EXPECT_FALSE(file_bytes(three[i].output).empty());
    }
}

// Worker 0 holds the first file it takes until worker 1 has filtered every other file: with files
// handed out as workers free up, worker 1 takes them all; dealt out in turn, worker 0 would be
// given more files and wait (up to 60 s, then the test fails) for a worker 1 that never gets them.
TEST_F(ApplyBatch, AFreeWorkerTakesTheNextFile) {
    std::mutex mutex;
    std::condition_variable changed;
    int done_by[2] = {0, 0};
    bool timed_out = false;
    const auto worker = [&](int w) {
        const BatchFilter copy = failing_on<Error>("none");
        return [&, w, copy](ImageU8 image, const BatchFile& file) {
            std::unique_lock<std::mutex> lock(mutex);
            if (w == 0) {
                const auto others_done = [&] { return done_by[1] == static_cast<int>(files.size()) - 1; };
                timed_out = timed_out || !changed.wait_for(lock, std::chrono::seconds(60), others_done);
            }
            ++done_by[w];
            changed.notify_all();
            lock.unlock();
            return copy(std::move(image), file);
        };
    };
    ASSERT_EQ(error_of({worker(0), worker(1)}), "");
    EXPECT_FALSE(timed_out);
    EXPECT_LE(done_by[0], 1);
    EXPECT_EQ(done_by[0] + done_by[1], static_cast<int>(files.size()));
}

// A BatchStop in either worker stops the batch: every file is written, failed (f2) or counted as
// not processed, and nothing after the stop is written.
TEST_F(ApplyBatch, ABatchStopInOneWorkerStopsThemAll) {
    const std::string error = error_of({failing_on<BatchStop>("f2.png"), failing_on<BatchStop>("f2.png")});
    std::smatch counts;
    ASSERT_TRUE(std::regex_search(error, counts, std::regex("^(\\d) of 6 written; failed: ([^;]+)"))) << error;
    EXPECT_EQ(counts[2].str(), (dir / "in" / "f2.png").string()) << error;
    std::smatch skipped;
    const bool some_skipped = std::regex_search(error, skipped, std::regex("; not processed after the batch stopped: (\\d) file"));
    const int written = std::stoi(counts[1].str());
    EXPECT_EQ(written + 1 + (some_skipped ? std::stoi(skipped[1].str()) : 0), 6) << error;
    EXPECT_FALSE(fs::exists(dir / "out" / "f2.png"));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()), written) << error;
}

}  // namespace
}  // namespace klab::cli
