// rpb/train/io/version.h: what rpb is: its version and the git commit it was built from.
#pragma once

namespace rpb {
/// The library version, e.g. "0.1.0".
const char* version();
/// The git commit rpb was built from: the 40 hex digits of the source tree's HEAD, with "-dirty" appended when
/// tracked files differed from it at build time ("3f2a...9c-dirty"), or "unknown" for a build outside a git work tree.
/// Written at every build by cmake/build_commit.cmake (a generated file, recompiled only when the commit changes).
const char* build_commit();
}  // namespace rpb
