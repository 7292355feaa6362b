// The rpb binary: exit codes and output.
#include <doctest/doctest.h>

#include <string>

#include "test_util.h"

using rpb::testing::run_rpb;

TEST_CASE("rpb --version prints the version") {
  const auto r = run_rpb("--version");
  CHECK(r.code == 0);
  CHECK(r.out.find("rpb 0.1.0") != std::string::npos);
}

TEST_CASE("rpb --help lists the subcommands") {
  const auto r = run_rpb("--help");
  CHECK(r.code == 0);
  CHECK(r.out.find("demo") != std::string::npos);
}

TEST_CASE("usage errors exit 2 with a message") {
  auto r = run_rpb("no-such-command");
  CHECK(r.code == 2);
  CHECK(r.out.find("no-such-command") != std::string::npos);
  r = run_rpb("demo --steps -3");
  CHECK(r.code == 2);
  CHECK(r.out.find("--steps") != std::string::npos);
  r = run_rpb("");
  CHECK(r.code == 2);
}

TEST_CASE("rpb demo trains the MLP to fit the spirals") {
  const auto r = run_rpb("demo --steps 1500 --log-every 500");
  CHECK(r.code == 0);
  CHECK(r.out.find("demo done") != std::string::npos);
  // The final line reports accuracy; the engine must actually learn (chance is 50%).
  const auto pos = r.out.find("training accuracy ");
  REQUIRE(pos != std::string::npos);
  const double acc = std::stod(r.out.substr(pos + 18));
  CHECK(acc > 95.0);
}
