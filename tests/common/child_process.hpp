#pragma once
// A child process for the fault tests: started with its stdout and stderr in one pipe, read line
// by line while it runs, sent signals, and waited for, with its exit status or its signal.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace klab::test {

class ChildProcess {
public:
    // Runs `argv` (argv[0] a path) with `working_dir` as its working directory ("" keeps ours).
    explicit ChildProcess(const std::vector<std::string>& argv, const std::string& working_dir = "") {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            ::dup2(fds[1], STDERR_FILENO);
            if (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0) std::_Exit(126);
            std::vector<char*> args;
            for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            ::execv(args[0], args.data());
            std::_Exit(127);
        }
        ::close(fds[1]);
        out_ = fds[0];
    }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess() {
        if (pid_ > 0 && !waited_) {
            ::kill(pid_, SIGKILL);
            wait(std::chrono::seconds(10));
        }
        if (out_ >= 0) ::close(out_);
    }

    bool started() const { return pid_ > 0 && out_ >= 0; }
    pid_t pid() const { return pid_; }

    // Reads until a line for which `done` is true (returned true) or the end of the output or
    // `limit` (returned false: a safety net against a hang, not a timing assertion).
    bool read_until(const std::function<bool(const std::string&)>& done,
                    std::chrono::seconds limit = std::chrono::seconds(120)) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            for (std::size_t end; (end = pending_.find('\n')) != std::string::npos;) {
                const std::string line = pending_.substr(0, end);
                pending_.erase(0, end + 1);
                output_ += line + "\n";
                if (done(line)) return true;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd p{out_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char buffer[4096];
            const ssize_t n = ::read(out_, buffer, sizeof buffer);
            if (n <= 0) {
                output_ += pending_;
                pending_.clear();
                ended_ = true;
                return false;
            }
            pending_.append(buffer, static_cast<std::size_t>(n));
        }
    }

    void send(int signal) const { ::kill(pid_, signal); }

    // Reads the rest of the output, then waits; the raw wait status (WIFEXITED, WTERMSIG...). A
    // child whose output has not ended after `limit` is killed (SIGKILL: the test then fails).
    int wait(std::chrono::seconds limit = std::chrono::seconds(300)) {
        if (!waited_) {
            if (out_ >= 0 && !ended_ && !read_until([](const std::string&) { return false; }, limit) && !ended_) {
                ::kill(pid_, SIGKILL);
            }
            while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
            }
            waited_ = true;
        }
        return status_;
    }

    // Everything read so far.
    const std::string& output() const { return output_; }

private:
    pid_t pid_ = -1;
    int out_ = -1;
    std::string pending_;
    std::string output_;
    int status_ = 0;
    bool ended_ = false;  // the pipe reached its end
    bool waited_ = false;
};

// "exit 2", "killed by signal 2" for messages.
inline std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
}

}  // namespace klab::test
