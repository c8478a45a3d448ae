// One klab process per device (see device_fanout.hpp): the plans, the command lines, and the
// children run side by side with their output prefixed.
#include "cli/device_fanout.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "autotune/gpu_model.hpp"
#include "harness/error.hpp"
#include "harness/interrupt.hpp"

extern char** environ;  // the environment the children inherit (CUDA_VISIBLE_DEVICES among it)

namespace klab::cli {

namespace {

std::vector<std::string>& recorded_command_line() {
    static std::vector<std::string> args;
    return args;
}

std::string child_label(const DeviceShare& s) { return fmt::format("gpu {} {}", s.device.index, s.slug); }

// Prints `text`'s complete lines with the prefix and keeps the unfinished rest in `text`.
void print_lines(std::string& text, const std::string& label) {
    std::size_t start = 0;
    for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
        fmt::print("[{}] {}\n", label, std::string_view(text).substr(start, end - start));
        start = end + 1;
    }
    text.erase(0, start);
    std::fflush(stdout);
}

}  // namespace

void set_command_line(int argc, char** argv) { recorded_command_line().assign(argv, argv + argc); }

const std::vector<std::string>& command_line() { return recorded_command_line(); }

std::vector<std::string> with_option(std::vector<std::string> args, const std::string& name, const std::string& value) {
    for (std::size_t i = 1; i < args.size(); ++i) {  // args[0] is the program
        if (args[i] == name && i + 1 < args.size()) {
            args[i + 1] = value;
            return args;
        }
        if (args[i].rfind(name + "=", 0) == 0) {
            args[i] = name + "=" + value;
            return args;
        }
    }
    args.push_back(name);
    args.push_back(value);
    return args;
}

StudyPlan plan_studies(const std::vector<DeviceInfo>& devices) {
    StudyPlan plan;
    std::map<std::string, int> study_of;  // slug -> the device that runs its study
    for (const DeviceInfo& d : devices) {
        const std::string slug = autotune::gpu_slug(d.name);
        const auto [at, first] = study_of.emplace(slug, d.index);
        if (first) {
            plan.studies.push_back({d, slug, 1, 1});
        } else {
            plan.idle.push_back(fmt::format("gpu {} {}: idle; gpu {} runs the {} study (one study per GPU model: "
                                            "docs/multi-gpu.md)",
                                            d.index, d.name, at->second, slug));
        }
    }
    return plan;
}

std::vector<DeviceShare> plan_tuning(const std::vector<DeviceInfo>& devices) {
    std::map<std::string, int> count;
    for (const DeviceInfo& d : devices) ++count[autotune::gpu_slug(d.name)];
    std::map<std::string, int> given;
    std::vector<DeviceShare> shares;
    for (const DeviceInfo& d : devices) {
        const std::string slug = autotune::gpu_slug(d.name);
        shares.push_back({d, slug, ++given[slug], count[slug]});
    }
    return shares;
}

std::pair<int, int> parse_class_share(const std::string& text) {
    int share = 0;
    int shares = 0;
    const char* begin = text.data();
    const char* end = begin + text.size();
    const auto [slash, e1] = std::from_chars(begin, end, share);
    bool ok = e1 == std::errc() && slash != end && *slash == '/';
    if (ok) {
        const auto [rest, e2] = std::from_chars(slash + 1, end, shares);
        ok = e2 == std::errc() && rest == end && share >= 1 && share <= shares;
    }
    if (!ok) throw Error(fmt::format("--class-share {}", text), "K/N with 1 <= K <= N, e.g. 1/2");
    return {share, shares};
}

std::string own_executable() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw Error(fmt::format("cannot find the klab executable (/proc/self/exe: {})", ec.message()));
    return self.string();
}

std::vector<ChildResult> run_children(const std::vector<ChildProcess>& children) {
    using Clock = std::chrono::steady_clock;
    struct Running {
        pid_t pid = -1;
        int fd = -1;  // the read end of its output pipe; -1 once at its end
        std::string pending;
        Clock::time_point start;
    };
    std::vector<Running> running(children.size());
    std::vector<ChildResult> results(children.size());
    // Each child in a process group of its own: a terminal's Ctrl-C reaches klab alone, which
    // passes every signal on to the children once (harness/interrupt.hpp), so that they stop as
    // it does: gracefully at the first, at once at the second.
    // A signal that came between a child's start and its registration would never reach it: the
    // signals wait until every child is registered (the children start with none blocked).
    std::vector<std::unique_ptr<ChildRegistration>> signalled(children.size());
    std::optional<SignalsHeld> held(std::in_place);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setsigmask(&attributes, &none);
    for (std::size_t i = 0; i < children.size(); ++i) {
        const ChildProcess& child = children[i];
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) {
            results[i].how = fmt::format("could not be started: pipe: {}", std::strerror(errno));
            continue;
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);  // dup2 clears close-on-exec
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
        std::vector<char*> argv;
        for (const std::string& a : child.argv) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        pid_t pid = -1;
        const int rc = argv.size() > 1 ? posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ) : EINVAL;
        posix_spawn_file_actions_destroy(&actions);
        close(fds[1]);
        if (rc != 0) {
            close(fds[0]);
            results[i].how = fmt::format("could not be started: {}", std::strerror(rc));
            continue;
        }
        running[i] = {pid, fds[0], {}, Clock::now()};
        signalled[i] = std::make_unique<ChildRegistration>(pid);
    }
    posix_spawnattr_destroy(&attributes);
    held.reset();  // a signal that came meanwhile is handled now, and passed on to every child

    // Their output, a line at a time, as it comes.
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < running.size(); ++i) {
            if (running[i].fd < 0) continue;
            fds.push_back({running[i].fd, POLLIN, 0});
            which.push_back(i);
        }
        if (fds.empty()) break;
        if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            throw Error(fmt::format("poll on the children's output: {}", std::strerror(errno)));
        }
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].revents == 0) continue;
            Running& r = running[which[k]];
            char buffer[65536];
            const ssize_t n = read(r.fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n > 0) {
                r.pending.append(buffer, static_cast<std::size_t>(n));
                print_lines(r.pending, children[which[k]].label);
                continue;
            }
            if (!r.pending.empty()) {  // its end: the last line may lack its newline
                r.pending += '\n';
                print_lines(r.pending, children[which[k]].label);
            }
            close(r.fd);
            r.fd = -1;
        }
    }

    for (std::size_t i = 0; i < running.size(); ++i) {
        if (running[i].pid < 0) continue;
        int status = 0;
        signalled[i].reset();  // before it is reaped: its pid cannot have been reused yet
        while (waitpid(running[i].pid, &status, 0) < 0 && errno == EINTR) {
        }
        results[i].seconds = std::chrono::duration<double>(Clock::now() - running[i].start).count();
        if (WIFEXITED(status)) {
            results[i].exit_code = WEXITSTATUS(status);
            results[i].how = fmt::format("exit {}", results[i].exit_code);
        } else if (WIFSIGNALED(status)) {
            results[i].how = fmt::format("killed by signal {}", WTERMSIG(status));
        } else {
            results[i].how = "did not exit normally";
        }
    }
    return results;
}

std::vector<std::string> run_per_device(const std::vector<DeviceJob>& jobs, const std::string& program) {
    if (command_line().empty()) throw Error("--device all: klab's command line was not recorded");
    std::vector<ChildProcess> children;
    for (const DeviceJob& job : jobs) {
        std::vector<std::string> args = command_line();
        args[0] = program;
        args = with_option(args, "--device", std::to_string(job.share.device.index));
        for (const auto& [name, value] : job.options) args = with_option(args, name, value);
        children.push_back({child_label(job.share), args});
    }
    std::fflush(stdout);
    const GracefulStop graceful;  // a signal, passed on to the children, stops them; the summary still comes
    const std::vector<ChildResult> results = run_children(children);

    fmt::print("\n");
    std::vector<std::string> failed;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const DeviceShare& s = jobs[i].share;
        const ChildResult& r = results[i];
        if (r.exit_code == 0) {
            fmt::print("gpu {} {}: done in {:.0f} s; {}\n", s.device.index, s.device.name, r.seconds, jobs[i].result);
        } else {
            fmt::print("gpu {} {}: FAILED ({}) after {:.0f} s; its lines above start with [{}]\n", s.device.index, s.device.name,
                       r.how, r.seconds, children[i].label);
            failed.push_back(fmt::format("{}: {}", children[i].label, r.how));
        }
    }
    std::fflush(stdout);
    throw_if_interrupted(fmt::format("{} of {} device(s) finished; each one's lines above say what it kept", jobs.size() - failed.size(),
                                     jobs.size()));
    return failed;
}

}  // namespace klab::cli
