// Issue 24: TOML nesting is bounded before toml++ (which recurses once per dotted part) sees a config, a --set
// override or a checkpoint's stored config.
#include <doctest/doctest.h>

#include <string>

#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/config/toml_depth.h"

namespace rpb::h2_toml_depth_tests {

using testing::contains;
using testing::error_of;
using testing::in_child;

// "a.a. ... .a": `parts` dotted parts.
std::string dotted(int parts) {
  std::string s = "a";
  for (int i = 1; i < parts; ++i) s += ".a";
  return s;
}

// Runs `parse` in a child (a stack overflow kills the child, not the tests) and returns its error.
std::string child_error(const std::function<void()>& parse) {
  const testing::ChildRun r = in_child(parse, 5);
  REQUIRE_MESSAGE(r.finished, "the parser crashed or hung");
  return r.error;
}

TEST_CASE("toml depth: a key or header of 50,000 dotted parts is refused by file and line, not a crash") {
  const std::string key = dotted(50000);  // 100 KB: deep enough to overflow toml++'s stack
  const std::string bound = "TOML nesting deeper than " + std::to_string(kMaxTomlDepth) + " levels";
  CHECK(contains(child_error([&] { parse_config("[run]\n" + key + " = 1\n", "key.toml"); }), "key.toml:2: " + bound));
  CHECK(contains(child_error([&] { parse_config("# header\n[" + key + "]\n", "h.toml"); }), "h.toml:2: " + bound));
  CHECK(contains(child_error([&] { parse_config("[[" + key + "]]\n", "a.toml"); }), "a.toml:1: " + bound));
  CHECK(contains(child_error([&] { parse_config("", "c.toml", {key + "=1"}); }), "more than 64 dotted parts"));
  CHECK(contains(child_error([&] { parse_config("", "c.toml", {"run.x=" + std::string(50000, '[')}); }), bound));
  // A shared checkpoint's stored config: what inspect, eval and generate parse first.
  CHECK(contains(child_error([&] { parse_stored_config("[" + key + "]\n", "ck.h5 (stored config)"); }),
                 "ck.h5 (stored config):1: " + bound));
}

TEST_CASE("toml depth: arrays and inline tables count, strings, comments and numbers do not") {
  auto depth_error = [](const std::string& text) { return error_of([&] { check_toml_depth(text, "t.toml"); }); };
  // At the bound: passes; one deeper: refused.
  CHECK(depth_error("[run]\n" + dotted(kMaxTomlDepth - 1) + " = 1\n").empty());
  CHECK(contains(depth_error("[run]\n" + dotted(kMaxTomlDepth) + " = 1\n"), "t.toml:2:"));
  CHECK(contains(depth_error("x = " + std::string(kMaxTomlDepth, '[') + "]"), "t.toml:1:"));
  CHECK(depth_error("x = " + std::string(kMaxTomlDepth - 1, '[') + std::string(kMaxTomlDepth - 1, ']')).empty());
  std::string inline_tables = "x = ";
  for (int i = 0; i < kMaxTomlDepth; ++i) inline_tables += "{ a = ";
  CHECK(contains(depth_error(inline_tables + "1"), "t.toml:1:"));
  CHECK(contains(depth_error("[a]\nb = { c.d = [[1], { e.f.g = 2 }] }\n[" + dotted(kMaxTomlDepth - 2) + "]\nx.y.z = 1\n"),
                 "t.toml:4:"));

  const std::string many = dotted(1000), brackets(1000, '[');
  for (const std::string& text :
       {"s = \"" + many + brackets + "\"\n", "s = '" + many + brackets + "'\n", "# " + many + brackets + "\n",
        "s = \"\"\"\n" + many + "\n\\\"\"\" " + brackets + "\n\"\"\"\n", "s = '''" + many + "\n" + brackets + "''''\n",
        "[run]\n\"" + many + "\" = 1\n", "x = [1.5, 2.25, 1e-3, 1979-05-27T07:32:00Z]\n" + many.substr(0, 40) + " = 1\n"})
    CHECK_MESSAGE(depth_error(text).empty(), text.substr(0, 60));
  // The line counts past multi-line strings and escaped newlines.
  CHECK(contains(depth_error("a = \"\"\"\n\n\"\"\"\nb = '''\n'''\n" + dotted(100) + " = 1\n"), "t.toml:6:"));
}

}  // namespace rpb::h2_toml_depth_tests
