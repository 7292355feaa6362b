// A run folder's files are the ones rpb made (issue 24): a step file that is a link to another run's checkpoint, or
// that shares its data with another name, is refused wherever a run folder's checkpoint is chosen; train.log, lock
// and `latest` with another hard link are refused before anything is written through them; and the run lock is the
// folder's own, so deleting `lock` does not let a second writer in.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/run/checkpoint_path.h"
#include "train/run/run_lock.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, error_of, file_text

namespace run_folder_files_test {

const std::string kConfig = std::string(RPB_SOURCE_DIR) + "/configs/t5.toml";

RunConfig tiny(const fs::path& out, const std::string& name) { return load_config(kConfig, tiny_t5_overrides(out, name, 2)); }

// A run folder `name` beside the trained run `own`: its config.toml, a `latest` naming step_00000002.h5, and that
// step file made by `make_step(own's step file, the new name)` (a symbolic or a hard link).
fs::path borrowing_folder(const fs::path& out, const std::string& own, const std::string& name,
                          void (*make_step)(const fs::path&, const fs::path&)) {
  const fs::path dir = out / name;
  fs::create_directories(dir);
  fs::copy_file(out / own / "config.toml", dir / "config.toml");
  std::ofstream(dir / "latest") << "step_00000002.h5\n";
  make_step(out / own / "step_00000002.h5", dir / "step_00000002.h5");
  return dir;
}

void symlink_to(const fs::path& target, const fs::path& link) { fs::create_symlink(target, link); }
void hard_link_to(const fs::path& target, const fs::path& link) { fs::create_hard_link(target, link); }

}  // namespace run_folder_files_test

using namespace run_folder_files_test;

TEST_CASE("run folder files: a step file that is a link to another run's checkpoint is never read through") {
  TempDir tmp("own_steps");
  Run(tiny(tmp.path, "own")).train(false);
  const struct {
    const char* name;
    void (*make)(const fs::path&, const fs::path&);
    const char* problem;
  } cases[] = {{"symlinked", symlink_to, " is a symbolic link, which rpb does not follow in a run folder"},
               {"hardlinked", hard_link_to, " has 2 hard links; a file of a run folder is rpb's own"}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const fs::path dir = borrowing_folder(tmp.path, "own", c.name, c.make);
    const std::string step = (dir / "step_00000002.h5").string(), expected = step + c.problem;
    // train --resume (through `latest`) and --resume-from.
    CHECK(contains(error_of([&] { Run(tiny(tmp.path, c.name)).train(true); }), "train: " + expected));
    CHECK(contains(error_of([&] { Run(tiny(tmp.path, c.name)).train(false, step); }), "train: " + expected));
    // eval, generate and inspect of the run folder, of its `latest` and of the step file itself.
    for (const std::string& arg : {dir.string(), (dir / "latest").string(), step}) {
      CAPTURE(arg);
      CHECK(contains(error_of([&] { resolve_checkpoint(arg); }), "checkpoint: " + expected));
    }
    CHECK_FALSE(fs::exists(dir / "train.log"));
    fs::remove_all(dir);  // the hard link shares own's file: own's step file is rpb's own again
  }
  // A checkpoint outside any run folder is the user's to link: it is read through the link.
  symlink_to(tmp.path / "own" / "step_00000002.h5", tmp.path / "shared.h5");
  CHECK(resolve_checkpoint((tmp.path / "shared.h5").string()).file == (tmp.path / "shared.h5").string());
  CHECK(resolve_checkpoint((tmp.path / "own").string()).file == (tmp.path / "own" / "step_00000002.h5").string());
}

TEST_CASE("run folder files: a train.log, lock or latest with another hard link is refused, never written through") {
  TempDir tmp("own_links");
  for (const std::string name : {"train.log", "lock", "latest"}) {
    CAPTURE(name);
    const fs::path dir = tmp.path / ("run_" + name), outside = tmp.path / (name + ".outside");
    fs::create_directories(dir);
    // `latest` names a checkpoint that does not exist: the link is what is refused, before the name is looked at.
    const std::string precious = name == "latest" ? "step_00000002.h5\n" : "precious\n";
    std::ofstream(outside) << precious;
    fs::create_hard_link(outside, dir / name);
    const std::string err = error_of([&] { Run(tiny(tmp.path, dir.filename().string())).train(true); });
    CHECK(contains(err, (dir / name).string()));
    CHECK(contains(err, "has 2 hard links; a file of a run folder is rpb's own and has one"));
    CHECK(file_text(outside) == precious);
    CHECK_FALSE(fs::exists(dir / "step_00000002.h5"));
  }
}

TEST_CASE("run lock: the lock is the run folder's, which deleting or replacing `lock` does not void") {
  TempDir tmp("own_lock");
  const fs::path dir = tmp.path / "run";
  fs::create_directories(dir);
  {
    const RunLock holder(dir.string());
    CHECK(file_text(dir / "lock") == std::to_string(::getpid()) + "\n");
    fs::remove(dir / "lock");
    CHECK(contains(error_of([&] { RunLock second(dir.string()); }),
                   "run folder " + dir.string() + " is in use by another process"));
    std::ofstream(dir / "lock") << "1\n";  // a planted lock file names a pid, but locks nothing
    CHECK(contains(error_of([&] { RunLock second(dir.string()); }), "is in use by pid 1 "));
    CHECK(file_text(dir / "lock") == "1\n");  // the refused process writes nothing
    // --overwrite moves the folder aside: the lock goes with it, and the folder made afresh is free.
    fs::rename(dir, tmp.path / "run.old");
    CHECK(contains(error_of([&] { RunLock second((tmp.path / "run.old").string()); }), "is in use by"));
    fs::create_directories(dir);
    CHECK(error_of([&] { RunLock fresh(dir.string()); }).empty());
  }
  CHECK(error_of([&] { RunLock after((tmp.path / "run.old").string()); }).empty());
  // A run folder that is a symbolic link is not locked through it.
  fs::create_directory_symlink(dir, tmp.path / "linked");
  CHECK(contains(error_of([&] { RunLock linked((tmp.path / "linked").string()); }),
                 "run folder " + (tmp.path / "linked").string() + " is a symbolic link, which rpb does not follow"));
}
