#include "harness/interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

namespace {

constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Everything the handler touches is a lock-free atomic or a fixed buffer: a signal handler may
// call only async-signal-safe functions (write, unlink, signal, raise) and must not allocate.
std::atomic<int> g_recorded_signal{0};
std::atomic<int> g_graceful_depth{0};
static_assert(std::atomic<int>::is_always_lock_free);

// One temporary file: state kFree, kClaimed (the path being copied in) or kLive.
constexpr int kFree = 0, kClaimed = 1, kLive = 2;
struct TempSlot {
    std::atomic<int> state{kFree};
    char path[4096];
};
std::array<TempSlot, 32> g_temp_files;

// The children to pass signals on to (0: a free slot).
std::array<std::atomic<pid_t>, 64> g_children{};
static_assert(std::atomic<pid_t>::is_always_lock_free);

void remove_temp_files() {
    for (TempSlot& slot : g_temp_files) {
        if (slot.state.load() == kLive) ::unlink(slot.path);
    }
}

void write_stderr(const char* text) {
    // Nothing sensible to do when stderr is gone; the result is read to satisfy the compiler.
    const ssize_t written = ::write(STDERR_FILENO, text, std::strlen(text));
    (void)written;
}

// The name of one of kHandledSignals, or nullptr.
const char* handled_signal_name(int signal) {
    switch (signal) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        default: return nullptr;
    }
}

void on_signal(int signal) {
    for (std::atomic<pid_t>& child : g_children) {
        if (const pid_t pid = child.load(); pid > 0) ::kill(pid, signal);
    }
    int none = 0;
    if (g_graceful_depth.load() > 0 && g_recorded_signal.compare_exchange_strong(none, signal)) {
        write_stderr("\nklab: ");
        write_stderr(handled_signal_name(signal));
        write_stderr(": stopping after the work in progress (finished files and records are kept); send it again to stop at once\n");
        return;
    }
    remove_temp_files();
    // The signal is blocked while its handler runs: raised now, it ends the process (default
    // action) as soon as the handler returns.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

}  // namespace

sigset_t handled_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kHandledSignals) sigaddset(&set, signal);
    return set;
}

void install_interrupt_handlers() {
    // A write beyond the file-size limit (ulimit -f) then fails with EFBIG and is reported like a
    // full disk, instead of SIGXFSZ killing the process in the middle of a file.
    std::signal(SIGXFSZ, SIG_IGN);
    for (int signal : kHandledSignals) {
        struct sigaction old {};
        if (::sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup and the like
        struct sigaction action {};
        action.sa_handler = on_signal;
        action.sa_mask = handled_signal_set();  // one handler at a time
        action.sa_flags = SA_RESTART;  // system calls resume after a recorded signal
        ::sigaction(signal, &action, nullptr);
    }
}

int interrupt_signal() { return g_recorded_signal.load(); }

std::string signal_name(int signal) {
    const char* name = handled_signal_name(signal);
    return name != nullptr ? name : fmt::format("signal {}", signal);
}

GracefulStop::GracefulStop() { g_graceful_depth.fetch_add(1); }
GracefulStop::~GracefulStop() { g_graceful_depth.fetch_sub(1); }

Interrupted::Interrupted(int signal, const std::string& what_was_kept)
    : std::runtime_error(fmt::format("interrupted by {}; {}", signal_name(signal), what_was_kept)), signal_(signal) {}

void throw_if_interrupted(const std::string& what_was_kept) {
    if (const int signal = interrupt_signal(); signal != 0) throw Interrupted(signal, what_was_kept);
}

void exit_with_signal(int signal) {
    std::fflush(nullptr);  // the default action does not flush stdio buffers (a log piped to a file)
    std::signal(signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
    std::raise(signal);
    std::_Exit(128 + signal);  // not reached: the default action of these signals ends the process
}

TempFileRegistration::TempFileRegistration(const std::string& path) : slot_(-1) {
    if (path.size() >= sizeof(TempSlot::path)) return;
    for (std::size_t i = 0; i < g_temp_files.size(); ++i) {
        int expected = kFree;
        if (!g_temp_files[i].state.compare_exchange_strong(expected, kClaimed)) continue;
        std::memcpy(g_temp_files[i].path, path.c_str(), path.size() + 1);
        g_temp_files[i].state.store(kLive);
        slot_ = static_cast<int>(i);
        return;
    }
}

TempFileRegistration::~TempFileRegistration() {
    if (slot_ >= 0) g_temp_files[static_cast<std::size_t>(slot_)].state.store(kFree);
}

SignalsHeld::SignalsHeld() {
    const sigset_t handled = handled_signal_set();
    ::pthread_sigmask(SIG_BLOCK, &handled, &previous_);
}

SignalsHeld::~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

ChildRegistration::ChildRegistration(pid_t pid) : slot_(-1) {
    for (std::size_t i = 0; i < g_children.size(); ++i) {
        pid_t free = 0;
        if (g_children[i].compare_exchange_strong(free, pid)) {
            slot_ = static_cast<int>(i);
            return;
        }
    }
    throw Error(fmt::format("more than {} child processes to pass signals on to", g_children.size()),
                fmt::format("at most {} (one per device)", g_children.size()));
}

ChildRegistration::~ChildRegistration() {
    if (slot_ >= 0) g_children[static_cast<std::size_t>(slot_)].store(0);
}

}  // namespace klab
