// klab apply's batch runner (cli/apply_batch.hpp) with a filter that needs no GPU: a failing file
// is reported and the others written; a BatchStop (as after a lost CUDA context) stops the batch
// at that file, and the files after it are not filtered or written.
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/apply_batch.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"

namespace klab::cli {
namespace {

namespace fs = std::filesystem;

class ApplyBatch : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / fmt::format("klab_apply_batch_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), ::getpid());
        fs::remove_all(dir);
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
    std::string error_of(const BatchFilter& filter) const {
        try {
            run_batch(files, filter);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    }
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

}  // namespace
}  // namespace klab::cli
