// Output flags never destroy a file (train/run/output_file.h): `inspect --plot` (alias --svg) and `eval --out` write
// only regular files, never an input, a device or a file rpb manages in a run or sweep folder; a refusal exits 2
// before any work and leaves every file byte-identical. (`rpb plot --out`: tests/test_plot.cpp.)
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/run/output_file.h"
#include "train/run/run_folder.h"

namespace rpb::output_file_tests {

namespace fs = std::filesystem;
using testing::contains;
using testing::file_text;
using testing::run_rpb;
using testing::TempDir;

// The message of the rpb::UsageError that check_output_file throws for `path` ("" when it accepts the path).
std::string refusal(const std::string& path, const OutputOptions& o = {"--out", {}}) {
  try {
    check_output_file(path, o);
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

// Every regular file under `dir` with its content: compared before and after a command, it shows that nothing
// was written, replaced or added.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files[e.path().string()] = e.is_regular_file() ? file_text(e.path()) : std::string("<not a regular file>");
  return files;
}

// A tiny trained run <dir>/run (4 steps, one checkpoint, an eval record) and its checkpoint copied to <dir>/ck.h5.
fs::path tiny_run(const TempDir& dir) {
  std::string args = std::string("train ") + RPB_SOURCE_DIR + "/configs/t5.toml";
  for (const std::string& o : testing::tiny_t5_overrides(dir.path, "run", 4)) args += " --set '" + o + "'";
  const auto r = run_rpb(args);
  REQUIRE_MESSAGE(r.code == 0, r.out);
  fs::copy_file(dir.path / "run" / checkpoint_name(4), dir.path / "ck.h5");
  return dir.path / "run";
}

TEST_CASE("output file: devices, FIFOs, sockets, folders and links are refused, a regular file is replaced") {
  TempDir tmp("out_kinds");
  const std::string dev = tmp.file("full");
  REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);  // our own /dev/full, never the system's
  CHECK(contains(refusal(dev, {"--svg", {}}), "--svg " + dev + ": is a character device, not a regular file"));
  CHECK(contains(refusal(dev), "; nothing written"));
  const std::string fifo = tmp.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(contains(refusal(fifo), "is a FIFO, not a regular file"));
  const std::string sock = tmp.file("sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
  CHECK(contains(refusal(sock), "is a socket, not a regular file"));
  CHECK(contains(refusal(tmp.path.string()), "is a folder, not a regular file"));
  CHECK(contains(refusal(tmp.path.string() + "/"), "names a folder, expected a file name"));
  CHECK(contains(refusal(tmp.file("missing/x.json")), "folder " + tmp.file("missing") + " does not exist"));
  const std::string target = tmp.file("target.txt"), link = tmp.file("link.svg");
  std::ofstream(target) << "keep";
  fs::create_symlink(target, link);
  CHECK(contains(refusal(link), "is a symbolic link; rpb neither writes through a link nor replaces one"));
  fs::create_symlink(tmp.file("nowhere"), tmp.file("dangling.svg"));
  CHECK(contains(refusal(tmp.file("dangling.svg")), "is a symbolic link"));
  CHECK_THROWS_AS(write_output_file(dev, "x", {"--svg", {}}), UsageError);
  CHECK(fs::is_character_file(dev));  // still the device node, not a regular file renamed over it
  CHECK(file_text(target) == "keep");

  // A regular file the user named is replaced (atomically), as compilers and curl -o do.
  write_output_file(target, "new", {"--out", {}});
  CHECK(file_text(target) == "new");
  CHECK(fs::is_symlink(link));
}

TEST_CASE("output file: an input of the command is refused by device and inode, however it is spelled") {
  TempDir tmp("out_inputs");
  const std::string ck = tmp.file("ck.h5");
  std::ofstream(ck) << "checkpoint bytes";
  const OutputOptions o{"--out", {{"checkpoint", ck}, {"kjv text", tmp.file("absent.txt")}}};
  CHECK(contains(refusal(ck, o), "--out " + ck + ": is the checkpoint this command reads (" + ck + ")"));
  const std::string other_spelling = (tmp.path / "." / ".." / tmp.path.filename() / "ck.h5").string();
  CHECK(contains(refusal(other_spelling, o), "is the checkpoint this command reads"));
  fs::create_hard_link(ck, tmp.file("hard.h5"));
  CHECK(contains(refusal(tmp.file("hard.h5"), o), "is the checkpoint this command reads"));
  CHECK(refusal(tmp.file("other.json"), o).empty());  // a missing input is skipped, a new file is fine
  CHECK(file_text(ck) == "checkpoint bytes");
}

TEST_CASE("output file: the files of a run folder, before and after its first checkpoint, and of a sweep folder") {
  TempDir tmp("out_managed");
  // A run that has not saved yet: rpb wrote its lock and config.toml.
  const fs::path fresh = tmp.path / "fresh";
  fs::create_directories(fresh);
  std::ofstream(fresh / "lock");
  std::ofstream(fresh / "config.toml") << "# config_digest = ...\n";
  for (const std::string name : {"config.toml", "latest", "lock", "train.log", "metrics.csv", "step_00000010.h5",
                                 ".latest.tmp.123", ".step_00000010.h5.tmp.77"})
    CHECK_MESSAGE(contains(refusal((fresh / name).string()), "in the run folder " + fs::canonical(fresh).string() +
                                                                 " (rpb manages the files of a run folder)"),
                  name);
  CHECK(contains(refusal((fresh / "latest").string()), "is the checkpoint pointer in the run folder"));
  CHECK(refusal((fresh / "bias.svg").string()).empty());  // a name of the user's own is fine in a run folder

  // A run folder left with checkpoints alone (config.toml and latest gone) is still one.
  const fs::path bare = tmp.path / "bare";
  fs::create_directories(bare / "eval");
  std::ofstream(bare / "step_00000004.h5");
  CHECK(contains(refusal((bare / "metrics.csv").string()), "is the metrics file in the run folder"));
  CHECK(contains(refusal((bare / "eval" / "mine.json").string()), "is inside " + fs::canonical(bare / "eval").string() +
                                                                      ", the evaluation records of a run folder"));
  fs::create_directories(bare / "eval" / "deeper");
  CHECK(contains(refusal((bare / "eval" / "deeper" / "x.json").string()), "the evaluation records of a run folder"));
  // Reached through a link to the folder: the real folder counts.
  fs::create_directory_symlink(bare, tmp.path / "alias");
  CHECK(contains(refusal((tmp.path / "alias" / "latest").string()), "in the run folder " + fs::canonical(bare).string()));

  // The same names in a folder that is no run folder are the user's.
  const fs::path plain = tmp.path / "plain";
  fs::create_directories(plain / "eval");
  for (const std::string name : {"metrics.csv", "train.log", "results.json", "eval/x.json"})
    CHECK_MESSAGE(refusal((plain / name).string()).empty(), name);

  // A sweep folder: results.* and attention.svg, before (its task folders) and after the sweep wrote them.
  const fs::path sweep = tmp.path / "sweep";
  fs::create_directories(sweep / "markov" / "t5" / "seed0");
  for (const std::string name : {"results.csv", "results.json", "results.svg", "results.pdf", "results.png",
                                 "attention.svg"})
    CHECK_MESSAGE(contains(refusal((sweep / name).string()), "is a result file of the sweep folder"), name);
  CHECK(refusal((sweep / "mine.svg").string()).empty());
}

TEST_CASE("rpb inspect --svg (--plot) and eval --out refuse the checkpoint, the run's files and a device: exit 2, files intact") {
  TempDir tmp("out_cli");
  const fs::path run = tiny_run(tmp);
  const std::string ck = tmp.file("ck.h5"), dev = tmp.file("full"), junk = tmp.file("junk.h5");
  std::ofstream(junk) << "not a checkpoint";
  REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);
  const std::map<std::string, std::string> before = snapshot(tmp.path);
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"inspect " + ck + " --plot " + ck, "--plot " + ck + ": is the checkpoint this command reads"},
      {"inspect " + ck + " --svg " + ck, "--svg " + ck + ": is the checkpoint this command reads"},  // the alias
      {"eval " + ck + " --out " + ck, "--out " + ck + ": is the checkpoint this command reads"},
      {"eval " + run.string() + " --out " + (run / "config.toml").string(), "is the run's config in the run folder"},
      {"eval " + run.string() + " --out " + (run / "latest").string(), "is the checkpoint pointer in the run folder"},
      {"eval " + run.string() + " --out " + (run / "eval" / "x.json").string(), "the evaluation records of a run folder"},
      {"inspect " + run.string() + " --plot " + dev, "--plot " + dev + ": is a character device"},
      {"inspect " + run.string() + " --plot " + (run / "metrics.csv").string(), "is the metrics file in the run folder"},
      {"inspect " + run.string() + " --plot " + tmp.file("bias.txt"), "expected a file name ending in .pdf, .png or .svg"},
      {"eval " + ck + " --out " + dev, "--out " + dev + ": is a character device"},
      // Checked before the checkpoint is read: an unreadable one is refused as the output, not reported as damaged.
      {"inspect " + junk + " --plot " + junk, "--plot " + junk + ": is the checkpoint this command reads"},
      {"eval " + junk + " --out " + junk, "--out " + junk + ": is the checkpoint this command reads"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_rpb(c.args);
    CHECK(r.code == 2);
    CHECK(contains(r.out, c.message));
    CHECK(!contains(r.out, "Perplexity"));  // refused before the evaluation
    CHECK(!contains(r.out, ".cpp:"));       // no source path without -v
    CHECK(fs::is_character_file(dev));
    CHECK(snapshot(tmp.path) == before);  // every file byte-identical, no record in eval/, no temp file
  }
  // A fine path is written, the run's record too.
  const auto ok = run_rpb("eval " + run.string() + " --out " + tmp.file("record.json"));
  REQUIRE_MESSAGE(ok.code == 0, ok.out);
  CHECK(contains(file_text(tmp.file("record.json")), "\"checkpoint\": \"step_00000004.h5\""));
}

}  // namespace rpb::output_file_tests
