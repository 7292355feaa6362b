// tests/fuzz/fuzz_checkpoint.cpp: libFuzzer target for the HDF5 checkpoint reader (train/checkpoint.h)
// and what `rpb inspect` does with a checkpoint that loads (the stored config, the parameters
// against the model it describes, the bias tables).
//
// The reader takes a path, so each input is written to a file on tmpfs (/dev/shm, else /tmp)
// and loaded from there. The only acceptable outcome besides success is rpb::Error; any other
// exception, a crash, a sanitizer report, an HDF5 handle left open or HDF5 printing its error
// stack (its "HDF5-DIAG" dump) is a finding. libhdf5 itself is Debian's, not instrumented: ASan
// sees its reads and writes only through what it hands back to rpb, and its leaks are suppressed.
// Build: CC=clang-14 CXX=clang++-14 cmake -B build-fuzz -DRPB_FUZZ=ON && cmake --build build-fuzz
// Run:   build-fuzz/fuzz_checkpoint -max_total_time=60 /tmp/new tests/fuzz/corpus/checkpoint
#include <hdf5.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/error.h"
#include "cli/inspect.h"

namespace {

const std::string& input_path() {
  static const std::string path = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                  "/rpb_fuzz_checkpoint_" + std::to_string(::getpid()) + ".h5";
  return path;
}

// HDF5 calls this where it would print its error stack: the reader must have silenced it.
herr_t hdf5_would_print(hid_t stack, void*) {
  std::fprintf(stderr, "fuzz_checkpoint: HDF5 printed its diagnostics:\n");
  H5Eprint2(stack, stderr);
  std::abort();
}

}  // namespace

// libhdf5 1.10 leaks a few hundred bytes when a damaged file fails to open (a bare H5Fopen +
// H5Gopen2 + H5Fclose on such a file leaks the same way); rpb's own leaks are still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5_serial.so\n"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5open();
  H5Eset_auto2(H5E_DEFAULT, hdf5_would_print, nullptr);
  std::atexit([] { std::remove(input_path().c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(input_path().c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(input_path().c_str());
    std::abort();
  }
  try {
    std::ostringstream report;
    rpb::inspect_checkpoint(input_path(), report);
  } catch (const rpb::Error&) {
  }
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) {
    std::fprintf(stderr, "fuzz_checkpoint: %zd HDF5 objects left open\n", open);
    std::abort();
  }
  return 0;
}
