// tests/scheme_cases.h: each registered position scheme's golden and gradient-check cases, the position
// schemes' counterpart of the op cases in tests/gradcheck.h. A scheme's case registers itself beside its tests
// (RPB_SCHEME_CASE); tests/test_scheme_registry.cpp runs every case of nn::schemes() and fails naming a registered
// scheme without one, or a case whose scheme is not registered. No list of schemes is kept here.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "nn/position.h"

namespace rpb::testing {

struct SchemeCase {
  std::string scheme;
  /// Compares the scheme with known values: a seed's worked example, a reference implementation or a hand
  /// computation (doctest CHECKs inside).
  std::function<void()> golden;
  /// Builds its float64 gradient-check case: its parameters, or for a fixed scheme the inputs its output
  /// flows from.
  std::function<GradCase()> gradcheck;
};

/// The registered schemes of `kind` a model of `dims` accepts, in the registry's order: the lists a test of "every
/// scheme of a kind" loops over (never a hand copy of the registry).
inline std::vector<std::string> schemes_of_kind(nn::PositionKind kind, int64_t dims = 1) {
  std::vector<std::string> out;
  for (const nn::SchemeInfo& s : nn::schemes())
    if (s.kind == kind && s.fits(dims)) out.emplace_back(s.name);
  return out;
}

/// The first registered scheme of each kind a model of `dims` accepts, in the registry's order: one scheme per way
/// of entering a model, for tests too slow to run every scheme.
inline std::vector<std::string> one_scheme_per_kind(int64_t dims = 1) {
  std::vector<std::string> out;
  std::vector<nn::PositionKind> seen;
  for (const nn::SchemeInfo& s : nn::schemes())
    if (s.fits(dims) && std::find(seen.begin(), seen.end(), s.kind) == seen.end()) {
      seen.push_back(s.kind);
      out.emplace_back(s.name);
    }
  return out;
}

/// Every registered case, in registration order.
std::vector<SchemeCase>& scheme_cases();

/// Registers a case at static initialisation (RPB_SCHEME_CASE).
struct SchemeCaseRegistrar {
  SchemeCaseRegistrar(SchemeCase c) { scheme_cases().push_back(std::move(c)); }
};

}  // namespace rpb::testing

/// RPB_SCHEME_CASE(t5, golden_t5, gradcheck_t5): the case of scheme "t5", at namespace scope in its test file.
#define RPB_SCHEME_CASE(scheme, golden, gradcheck)                                       \
  static const ::rpb::testing::SchemeCaseRegistrar rpb_scheme_case_##scheme {           \
    ::rpb::testing::SchemeCase { #scheme, golden, gradcheck }                           \
  }
