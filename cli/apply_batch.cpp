// klab apply over many files, the run: reader threads -> one filtering thread per worker -> writer
// threads (cli/apply_batch.hpp). The plan of the files is in cli/apply_plan.cpp.
#include "cli/apply_batch.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/error.hpp"
#include "harness/interrupt.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli {

namespace fs = std::filesystem;

namespace {

// A queue between two threads that blocks the producer when `capacity` items wait (so the reader
// stays a bounded number of files ahead) and the consumer when none does. close(): no more pushes;
// pop() returns what is left, then nothing.
template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {}

    bool push(T item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
        if (closed_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }
    std::optional<T> pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
        if (items_.empty()) return std::nullopt;
        std::optional<T> item(std::move(items_.front()));
        items_.pop_front();
        not_full_.notify_one();
        return item;
    }
    void close() {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        not_full_.notify_all();
        not_empty_.notify_all();
    }

private:
    std::size_t capacity_;
    std::deque<T> items_;
    bool closed_ = false;
    std::mutex mutex_;
    std::condition_variable not_full_;
    std::condition_variable not_empty_;
};

// The one-line progress bar on stderr (a terminal only) and the log lines printed above it. Both
// threads that print go through here, so a line never lands in the middle of the bar.
class BatchProgress {
public:
    explicit BatchProgress(std::size_t total)
        : total_(total), terminal_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {
        // The elapsed time moves while a long file is filtered.
        if (!terminal_) return;
        ticker_ = std::thread([this] {
            std::unique_lock<std::mutex> lock(mutex_);
            while (!closed_) {
                draw();
                tick_.wait_for(lock, std::chrono::milliseconds(500));
            }
        });
    }
    ~BatchProgress() { close(); }
    BatchProgress(const BatchProgress&) = delete;
    BatchProgress& operator=(const BatchProgress&) = delete;

    void start_file(const fs::path& input) {
        const std::lock_guard<std::mutex> lock(mutex_);
        current_ = input.filename().string();
        draw();
    }
    void finish_file() {
        const std::lock_guard<std::mutex> lock(mutex_);
        ++done_;
        draw();
    }
    void print(const std::vector<std::pair<std::FILE*, std::string>>& lines) {
        const std::lock_guard<std::mutex> lock(mutex_);
        clear();
        for (const auto& [stream, line] : lines) {
            fmt::print(stream, "{}\n", line);
            std::fflush(stream);
        }
        draw();
    }
    void close() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            clear();
            closed_ = true;
            tick_.notify_all();
        }
        if (ticker_.joinable()) ticker_.join();
    }

private:
    void clear() {
        if (!drawn_) return;
        fmt::print(stderr, "\r\033[K");
        std::fflush(stderr);
        drawn_ = false;
    }
    void draw() {
        if (!terminal_ || closed_) return;
        constexpr std::size_t kBarWidth = 20;
        const std::size_t filled = total_ == 0 ? kBarWidth : kBarWidth * done_ / total_;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::string text = fmt::format("[{}{}] {}/{} files, {:.1f} s{}{}", std::string(filled, '#'),
                                       std::string(kBarWidth - filled, '.'), done_, total_, seconds,
                                       done_ < total_ ? ", " : "", done_ < total_ ? current_ : "");
        winsize size{};
        const std::size_t columns = ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col : 80;
        if (text.size() >= columns) text.resize(columns - 1);  // one line: a wrapped bar cannot be redrawn
        fmt::print(stderr, "\r\033[K{}", text);
        std::fflush(stderr);
        drawn_ = true;
    }

    std::mutex mutex_;
    std::size_t total_;
    std::size_t done_ = 0;
    std::string current_;
    bool terminal_;
    bool drawn_ = false;
    bool closed_ = false;
    std::chrono::steady_clock::time_point start_;
    std::condition_variable tick_;
    std::thread ticker_;  // last: started once the rest is initialised
};

struct DecodedFile {
    std::size_t index = 0;
    ImageU8 image;
    std::string error;  // empty: decoded
};

struct FinishedFile {
    std::size_t index = 0;
    FilteredImage filtered;
    std::string error;  // empty: filtered, to be written
};

// Lines starting with "warning: " go to stderr, the others to stdout.
std::FILE* stream_for(const std::string& note) { return note.rfind("warning: ", 0) == 0 ? stderr : stdout; }

}  // namespace

void run_batch(const std::vector<BatchFile>& files, const BatchFilter& filter, const io::WriteOptions& write) {
    run_batch(files, std::vector<BatchFilter>{filter}, write);
}

void run_batch(const std::vector<BatchFile>& files, const std::vector<BatchFilter>& workers, const io::WriteOptions& write) {
    if (workers.empty()) throw Error("klab apply: a batch without a worker");
    const GracefulStop graceful;  // a signal stops the batch between files (harness/interrupt.hpp)
    const std::size_t lanes = workers.size();
    BatchProgress progress(files.size());
    BoundedQueue<DecodedFile> decoded(2 * lanes);  // the readers stay at most two files per worker ahead
    BoundedQueue<FinishedFile> finished(2 * lanes);
    std::atomic<std::size_t> next_to_read{0};
    std::atomic<std::size_t> readers_left{lanes};
    std::atomic<std::size_t> attempted{0};
    std::atomic<bool> stopped{false};
    std::mutex outcome_mutex;  // guards `written` and `failed` (the writers')
    std::size_t written = 0;
    std::vector<std::size_t> failed;  // indices into `files`

    // However this function is left, the queues are closed (waking every thread that waits on
    // them) and the threads joined (a joinable std::thread destroyed would terminate the program).
    std::vector<std::thread> readers;
    std::vector<std::thread> filterers;  // workers[1...]; workers[0] runs on the calling thread
    std::vector<std::thread> writers;
    struct Joiner {
        BoundedQueue<DecodedFile>& decoded;
        BoundedQueue<FinishedFile>& finished;
        std::vector<std::vector<std::thread>*> groups;
        ~Joiner() {
            decoded.close();
            finished.close();
            for (std::vector<std::thread>* group : groups) {
                for (std::thread& t : *group) {
                    if (t.joinable()) t.join();
                }
            }
        }
    } joiner{decoded, finished, {&filterers, &writers, &readers}};

    const auto read_files = [&] {
        for (std::size_t i = next_to_read++; i < files.size() && interrupt_signal() == 0; i = next_to_read++) {
            DecodedFile item;
            item.index = i;
            try {
                item.image = io::read_image(files[i].input);
            } catch (const std::exception& e) {
                item.error = e.what();
            }
            if (!decoded.push(std::move(item))) return;  // closed: the batch stopped
        }
        if (--readers_left == 0) decoded.close();
    };
    // Each worker takes the next decoded file when it is free; after a stop, none takes another.
    const auto filter_files = [&](const BatchFilter& filter) {
        while (!stopped) {
            std::optional<DecodedFile> item = decoded.pop();
            if (!item || stopped || interrupt_signal() != 0) break;  // what is filtered already is still written
            progress.start_file(files[item->index].input);
            ++attempted;
            FinishedFile result;
            result.index = item->index;
            result.error = std::move(item->error);
            if (result.error.empty()) {
                try {
                    result.filtered = filter(std::move(item->image), files[item->index]);
                } catch (const BatchStop& e) {
                    result.error = e.what();
                    stopped = true;
                    decoded.close();  // the readers read no further
                } catch (const std::exception& e) {
                    result.error = e.what();
                } catch (...) {
                    result.error = "an unknown failure";
                }
            }
            if (!finished.push(std::move(result))) break;
        }
    };
    const auto write_files = [&] {
        while (std::optional<FinishedFile> item = finished.pop()) {
            const BatchFile& file = files[item->index];
            // The file's notes and its line together: another writer's lines never come between.
            std::vector<std::pair<std::FILE*, std::string>> lines;
            for (const std::string& note : item->filtered.notes) lines.emplace_back(stream_for(note), note);
            if (item->error.empty()) {
                try {
                    io::write_image(file.output, item->filtered.image, write);  // atomic: a failure leaves nothing
                    lines.emplace_back(stdout, fmt::format("{} -> {}: {}", file.input.string(), file.output.string(),
                                                           item->filtered.description));
                    const std::lock_guard<std::mutex> lock(outcome_mutex);
                    ++written;
                } catch (const std::exception& e) {
                    item->error = e.what();
                }
            }
            if (!item->error.empty()) {
                lines.emplace_back(stderr, fmt::format("klab apply: {} failed, nothing written to {}: {}", file.input.string(),
                                                       file.output.string(), item->error));
                const std::lock_guard<std::mutex> lock(outcome_mutex);
                failed.push_back(item->index);
            }
            progress.print(lines);
            progress.finish_file();
        }
    };

    for (std::size_t i = 0; i < lanes; ++i) readers.emplace_back(read_files);
    for (std::size_t i = 0; i < lanes; ++i) writers.emplace_back(write_files);
    for (std::size_t w = 1; w < lanes; ++w) filterers.emplace_back(filter_files, std::cref(workers[w]));
    filter_files(workers[0]);
    for (std::thread& t : filterers) t.join();
    decoded.close();  // after a stop: the readers read no further
    finished.close();
    for (std::thread& t : writers) t.join();
    for (std::thread& t : readers) t.join();
    progress.close();

    std::sort(failed.begin(), failed.end());
    std::vector<std::string> names;
    for (std::size_t i : failed) names.push_back(files[i].input.string());
    const std::size_t skipped = files.size() - attempted;
    throw_if_interrupted(fmt::format("{} of {} written{}; not processed: {} file(s)", written, files.size(),
                                     names.empty() ? "" : fmt::format("; failed: {}", fmt::join(names, ", ")), skipped));
    if (failed.empty()) {
        fmt::print("{} of {} written\n", written, files.size());
        return;
    }
    throw Error(fmt::format("{} of {} written; failed: {}{}", written, files.size(), fmt::join(names, ", "),
                            skipped == 0 ? "" : fmt::format("; not processed after the batch stopped: {} file(s)", skipped)));
}

}  // namespace klab::cli
