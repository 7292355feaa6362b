// rpb/train/config/toml_depth.h (internal to train/): a bound on how deeply a TOML document nests, checked before the TOML parser sees it.
//
// toml++ recurses once per dotted part of a key or table header, so a 100 KB header of 50,000 parts overflows the
// stack (SIGSEGV) in the parser, and a deep table also in every later walk of it. A config, a --set override and a
// checkpoint's stored config (shared, so untrusted) are all scanned here first.
#pragma once

#include <string>
#include <string_view>

namespace rpb {

/// The deepest nesting rpb reads: far above any real config (whose keys nest three or four levels), far below
/// what overflows a stack.
inline constexpr int kMaxTomlDepth = 64;

/// Throws rpb::Error "<source>:<line>: TOML nesting deeper than 64 levels ..." when a point of `text` lies deeper
/// than kMaxTomlDepth. The depth of a key is the depth of the table it is in (its [table] header's dotted parts,
/// plus one for an [[array]] element; or its inline table's depth) plus its own dotted parts; every array or inline
/// table value adds one to the key it is the value of. Dots and brackets count only outside quoted keys, strings
/// (basic and literal, one-line and multi-line, with escapes) and comments. Text the scanner does not understand is
/// left to the TOML parser, which reports it.
void check_toml_depth(std::string_view text, const std::string& source);

}  // namespace rpb
