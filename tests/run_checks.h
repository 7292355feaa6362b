// Checks shared by the tests that compare runs: bit-identical tensors and the temp files a run folder holds.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace rpb::testing {

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Every tensor of `a` has a bit-identical twin of the same name in `b`, and nothing more.
inline void check_same_bits(const nn::NamedTensors& a, const nn::NamedTensors& b, const std::string& what) {
  CHECK_MESSAGE(a.size() == b.size(), what, ": ", a.size(), " against ", b.size(), " tensors");
  std::map<std::string, Tensor> bm(b.begin(), b.end());
  int differ = 0;
  for (const auto& [name, t] : a) {
    const auto it = bm.find(name);
    if (it == bm.end() || !same_bits(t, it->second)) {
      ++differ;
      MESSAGE(what, ": ", name, it == bm.end() ? " is missing" : " differs");
    }
  }
  CHECK_MESSAGE(differ == 0, what, ": ", differ, " tensors differ");
}

// The names of the temp files (".<name>.tmp.<pid>") in `dir`.
inline std::vector<std::string> temp_files(const std::filesystem::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) v.push_back(e.path().filename().string());
  return v;
}

// A metrics.csv without its last two columns (tokens_per_sec, elapsed_s: times, which differ between runs).
inline std::string csv_without_times(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string out, line;
  while (std::getline(in, line)) {
    for (int k = 0; k < 2; ++k) line.erase(line.rfind(','));
    out += line + "\n";
  }
  return out;
}

}  // namespace rpb::testing
