// rpb/train/interrupt.cpp: see interrupt.h. The handler only reads and writes sig_atomic_t flags and calls
// _exit, which are async-signal-safe.
#include "train/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "core/error.h"

namespace rpb {

namespace {

volatile sig_atomic_t g_pending = 0;    // the first signal, or 0
volatile sig_atomic_t g_deferring = 0;  // DeferInterrupts spans open
volatile sig_atomic_t g_record_usr1 = 0;  // record_sigusr1() was called: SIGUSR1 is only recorded
struct sigaction g_old_int, g_old_term, g_old_usr1;
bool g_installed = false;

void on_signal(int sig) {
  if (sig == SIGUSR1 && g_record_usr1 != 0) {
    if (g_pending == 0) g_pending = sig;
    return;
  }
  if (g_pending != 0 || g_deferring == 0) _exit(128 + sig);
  g_pending = sig;
}

// What InterruptHandlers forgets when it starts and ends: every signal but a SIGUSR1 that record_sigusr1() keeps.
void forget_pending() {
  if (g_record_usr1 == 0 || g_pending != SIGUSR1) g_pending = 0;
}

struct sigaction handler_action() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a read or write the signal lands in goes on; the loop checks the flag after it
  return sa;
}

}  // namespace

InterruptHandlers::InterruptHandlers() {
  RPB_CHECK(!g_installed, "signals", "the interrupt handlers are installed already");
  forget_pending();
  const struct sigaction sa = handler_action();
  RPB_CHECK(sigaction(SIGINT, &sa, &g_old_int) == 0 && sigaction(SIGTERM, &sa, &g_old_term) == 0 &&
                sigaction(SIGUSR1, &sa, &g_old_usr1) == 0,
            "signals", "cannot install the SIGINT, SIGTERM and SIGUSR1 handlers: ", std::strerror(errno));
  g_installed = true;
}

InterruptHandlers::~InterruptHandlers() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
  g_installed = false;
  forget_pending();
}

void record_sigusr1() {
  g_record_usr1 = 1;
  const struct sigaction sa = handler_action();
  RPB_CHECK(sigaction(SIGUSR1, &sa, nullptr) == 0, "signals", "cannot install the SIGUSR1 handler: ",
            std::strerror(errno));
}

DeferInterrupts::DeferInterrupts() { g_deferring = g_deferring + 1; }
DeferInterrupts::~DeferInterrupts() { g_deferring = g_deferring - 1; }

int pending_interrupt() { return g_pending; }

Interrupted::Interrupted(int signal) : signal_(signal) {
  const char* name = signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : signal == SIGUSR1 ? "SIGUSR1" : nullptr;
  what_ = "interrupted by " + (name ? std::string(name) : "signal " + std::to_string(signal));
}

}  // namespace rpb
