// rpb/train/interrupt.h: SIGINT, SIGTERM and SIGUSR1 end a run cleanly at the next safe point.
//
// SIGUSR1 is for runs under mpirun, which forwards it to every rank (Open MPI), while on SIGINT and SIGTERM it
// kills the job within a second; batch schedulers send it before pre-empting a job (`scancel --signal=USR1`).
//
// While InterruptHandlers lives (rpb train, rpb extrapolate), a first SIGINT, SIGTERM or SIGUSR1 that arrives inside a
// DeferInterrupts scope (Run::train's steps and saves) only records the signal: the training loop checks it after
// each step, saves a checkpoint, logs how to resume and throws Interrupted, which cli/main.cpp turns into the exit
// code 128 + signal (130, 143). A signal outside such a scope (an evaluation, start-up), or a second signal,
// ends the process at once with that code (_exit: nothing half-written is left under a final name, as every
// file rpb writes there goes through a temp file and a rename). Under mpirun with more than one rank,
// record_sigusr1() makes SIGUSR1 an exception: it is recorded wherever it arrives, from start-up to the end.
#pragma once

#include <exception>
#include <string>

namespace rpb {

/// Installs the handlers (sigaction) of SIGINT, SIGTERM and SIGUSR1 for its lifetime; the previous ones come back after,
/// and the signal it recorded is forgotten. One at a time.
class InterruptHandlers {
 public:
  InterruptHandlers();
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
};

/// For the rest of the process: SIGUSR1 is only recorded (pending_interrupt()), wherever and however often it
/// arrives, and never ends the process; InterruptHandlers keeps it recorded when it starts and when it ends. A run
/// acts on it at its next safe point (after a step: a checkpoint, then Interrupted); a command that has ended, or
/// has no such point, ends as it would have. For ranks under mpirun (cli/main.cpp, right after dist::Session),
/// which forwards SIGUSR1 to every rank: a rank killed by it, or ending with 138, or leaving without MPI_Finalize
/// would make mpirun abort the whole job.
void record_sigusr1();

/// Marks a span where a first signal waits to be checked (pending_interrupt()) instead of ending the process.
/// Nests.
class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;
};

/// The signal recorded inside a DeferInterrupts span (SIGINT, SIGTERM, SIGUSR1), or 0.
int pending_interrupt();

/// What a run interrupted by a signal throws once its checkpoint is saved and the message logged: the process
/// exits with exit_code() and prints nothing more.
class Interrupted : public std::exception {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }
  /// 128 + the signal: 130 for SIGINT, 143 for SIGTERM, 138 for SIGUSR1 (what shells report for a process a
  /// signal ended).
  int exit_code() const { return 128 + signal_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  int signal_;
  std::string what_;
};

}  // namespace rpb
