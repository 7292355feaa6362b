// tests/fuzz/fuzz_config.cpp: libFuzzer target for the TOML config loader (train/config/config.h).
//
// The input is a config file's text, overrides included as a last line "#set key=value" so that
// the --set path is fuzzed too. The only acceptable outcome besides success is rpb::Error (a
// clear message); any other exception, a crash, a sanitizer report or a leak is a finding.
// Build: CC=clang-14 CXX=clang++-14 cmake -B build-fuzz -DRPB_FUZZ=ON && cmake --build build-fuzz
// Run:   build-fuzz/fuzz_config -max_total_time=60 /tmp/new tests/fuzz/corpus/config
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  const std::string marker = "\n#set ";
  if (const auto at = text.rfind(marker); at != std::string::npos) {
    overrides.push_back(text.substr(at + marker.size()));
    text.resize(at + 1);
  }
  try {
    const rpb::RunConfig c = rpb::parse_config(text, "fuzz.toml", overrides);
    // What a checkpoint stores must parse back to the same text.
    if (rpb::parse_config(c.text, "stored").text != c.text) __builtin_trap();
  } catch (const rpb::Error&) {
  }
  return 0;
}
