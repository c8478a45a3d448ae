#pragma once
// Ctrl-C (SIGINT), `kill` (SIGTERM) and a closed terminal (SIGHUP) without losing work.
//
// main() installs the handlers once. Outside a GracefulStop scope a signal removes the temporary
// files being written at that moment (TempFileRegistration: write_file_atomically's) and ends the
// process with that signal at once, as it would have ended without klab's handler. Inside one
// (a batch of `klab apply`, `klab tune`), the first signal is only recorded and announced: the
// work checks interrupt_signal() at its safe points (before each file, between tuning candidates)
// and ends there by throwing Interrupted; what was finished is kept (written files, stored tuning
// records). A second signal ends the process at once, as outside a scope.
//
// A signal ignored when the process starts (nohup, a background job of a non-interactive shell)
// stays ignored. Child processes registered with ChildRegistration (the per-device processes of
// `--device all`) receive every such signal klab receives, so that they stop as it does.
#include <sys/types.h>

#include <csignal>
#include <stdexcept>
#include <string>

namespace klab {

// Installs the handlers for SIGINT, SIGTERM and SIGHUP, and ignores SIGXFSZ (a write beyond the
// file-size limit then fails like one on a full disk); idempotent.
void install_interrupt_handlers();

// The signal recorded under a GracefulStop scope, or 0.
int interrupt_signal();

// "SIGINT", "SIGTERM", "SIGHUP" (else "signal N").
std::string signal_name(int signal);

// While one exists, the first signal is recorded instead of ending the process. Scopes nest.
class GracefulStop {
public:
    GracefulStop();
    ~GracefulStop();
    GracefulStop(const GracefulStop&) = delete;
    GracefulStop& operator=(const GracefulStop&) = delete;
};

// Thrown at a safe point after a signal. Not a klab::Error, so that no handler of one file's or
// one job's failure swallows it; main() prints it and ends the process with the signal.
class Interrupted : public std::runtime_error {
public:
    Interrupted(int signal, const std::string& what_was_kept);
    int signal() const { return signal_; }

private:
    int signal_;
};

// Throws Interrupted (with `what_was_kept`) when a signal was recorded.
void throw_if_interrupted(const std::string& what_was_kept);

// Ends the process with `signal`, its default action restored (the parent sees WIFSIGNALED, a
// shell $? of 128 + signal).
[[noreturn]] void exit_with_signal(int signal);

// A temporary file to remove if a signal ends the process while it exists: registered before
// the file is created, unregistered once it is renamed into place or removed. Paths longer than
// the registry's slots, or more files at once than it has slots, are not registered (such a
// file can be left behind by a signal, as without the registry).
class TempFileRegistration {
public:
    explicit TempFileRegistration(const std::string& path);
    ~TempFileRegistration();
    TempFileRegistration(const TempFileRegistration&) = delete;
    TempFileRegistration& operator=(const TempFileRegistration&) = delete;

private:
    int slot_;
};

// A child process that is sent every SIGINT, SIGTERM and SIGHUP klab receives while registered.
// Start it in a process group of its own (a terminal's Ctrl-C then reaches it once, through klab),
// and unregister it before reaping it (waitpid), so that its pid cannot have been reused.
class ChildRegistration {
public:
    explicit ChildRegistration(pid_t pid);
    ~ChildRegistration();
    ChildRegistration(const ChildRegistration&) = delete;
    ChildRegistration& operator=(const ChildRegistration&) = delete;

private:
    int slot_;
};

// Holds SIGINT, SIGTERM and SIGHUP back from the calling thread while it lives; one that arrives
// meanwhile is handled when it ends. Start and register children inside one, so that no signal
// falls between a child's start and its registration (it would never reach that child). A
// process-directed signal waits only if every other thread blocks these signals too.
class SignalsHeld {
public:
    SignalsHeld();
    ~SignalsHeld();
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;

private:
    sigset_t previous_;
};

// The signals klab handles (SIGINT, SIGTERM, SIGHUP) as a set, e.g. for pthread_sigmask.
sigset_t handled_signal_set();

}  // namespace klab
