// The rpb binary: exit codes and output.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {
struct Run {
  int code;
  std::string out;
};
Run run(const std::string& args) {
  const std::string cmd = std::string(RPB_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}
}  // namespace

TEST_CASE("rpb --version prints the version") {
  const Run r = run("--version");
  CHECK(r.code == 0);
  CHECK(r.out.find("rpb 0.1.0") != std::string::npos);
}

TEST_CASE("rpb --help lists the subcommands") {
  const Run r = run("--help");
  CHECK(r.code == 0);
  CHECK(r.out.find("demo") != std::string::npos);
}

TEST_CASE("usage errors exit 2 with a message") {
  Run r = run("no-such-command");
  CHECK(r.code == 2);
  CHECK(r.out.find("no-such-command") != std::string::npos);
  r = run("demo --steps -3");
  CHECK(r.code == 2);
  CHECK(r.out.find("--steps") != std::string::npos);
  r = run("");
  CHECK(r.code == 2);
}

TEST_CASE("rpb demo trains the MLP to fit the spirals") {
  const Run r = run("demo --steps 1500 --log-every 500");
  CHECK(r.code == 0);
  CHECK(r.out.find("demo done") != std::string::npos);
  // The final line reports accuracy; the engine must actually learn (chance is 50%).
  const auto pos = r.out.find("training accuracy ");
  REQUIRE(pos != std::string::npos);
  const double acc = std::stod(r.out.substr(pos + 18));
  CHECK(acc > 95.0);
}
