// tests/scheme_cases.h: each registered position scheme's golden and gradient-check cases, the position
// schemes' counterpart of the op cases in tests/gradcheck.h. tests/test_scheme_registry.cpp runs them and fails
// for a scheme of nn::schemes() that lacks either.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gradcheck.h"

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

/// The 1-D schemes and none (tests/test_position.cpp).
std::vector<SchemeCase> position_1d_scheme_cases();
/// FIRE's (tests/test_fire.cpp), one of position_1d_scheme_cases().
SchemeCase fire_scheme_case();
/// xpos's golden and gradient-check cases (tests/test_xpos.cpp), which position_1d_scheme_cases lists.
void golden_xpos();
GradCase gradcheck_xpos();
/// The 2-D schemes of global attention (tests/test_position_2d.cpp).
std::vector<SchemeCase> position_2d_scheme_cases();
/// The window schemes, swin and swin_v2 (tests/test_window_attention.cpp).
std::vector<SchemeCase> window_scheme_cases();

}  // namespace rpb::testing
