// The rpb binary: exit codes and output.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/device.h"
#include "test_util.h"

using rpb::testing::run_rpb;

TEST_CASE("rpb --version prints the version") {
  const auto r = run_rpb("--version");
  CHECK(r.code == 0);
  CHECK(r.out.find("rpb 0.1.0") != std::string::npos);
}

TEST_CASE("rpb --version says whether CUDA is in the build") {
  const auto r = run_rpb("--version");
  CHECK(r.code == 0);
  if (rpb::cuda_built()) {
    CHECK(r.out.find("; CUDA 1") != std::string::npos);
    CHECK(r.out.find("(sm_") != std::string::npos);
  } else {
    CHECK(r.out.find("; CUDA not in this build)") != std::string::npos);
  }
}

TEST_CASE("rpb --help lists the subcommands and the exit codes") {
  const auto r = run_rpb("--help");
  CHECK(r.code == 0);
  CHECK(r.out.find("demo") != std::string::npos);
  CHECK(r.out.find("Exit status: 0 done; 1 the run failed") != std::string::npos);
  CHECK(r.out.find("130 / 143 interrupted") != std::string::npos);
}

TEST_CASE("run errors print no source location, --verbose logs it at debug level") {
  rpb::testing::TempDir tmp("cli_verbose");
  const std::string bad = tmp.file("not_hdf5.h5");
  { std::ofstream(bad) << "not an HDF5 file"; }
  auto r = run_rpb("inspect " + bad);
  CHECK(r.code == 1);
  CHECK(r.out.find("cannot open as HDF5") != std::string::npos);
  CHECK(r.out.find(".cpp:") == std::string::npos);
  r = run_rpb("--verbose inspect " + bad);
  CHECK(r.code == 1);
  CHECK(r.out.find("[debug] raised at ") != std::string::npos);
  CHECK(r.out.find(".cpp:") != std::string::npos);  // where the check that refused the file stands
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
