// `rpb inspect` prints the digest of a checkpoint's stored config beside the config_digest the checkpoint recorded,
// and flags a difference: a stored config edited after the checkpoint was written (issue 24); `eval` and `generate`
// flag it too (issue 39).
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cli/inspect.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/run_identity.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using namespace rpb::testing;  // TempDir, contains, tiny_t5_overrides

namespace inspect_digest_test {

std::string report_of(const std::string& file) {
  std::ostringstream out;
  inspect_checkpoint(file, out);
  return out.str();
}

// A tiny t5 run's checkpoint (`file`), and a copy (`edited`) whose stored config has `key`'s line set to `line`, the
// recorded config_digest kept, as an edit of the file leaves it.
struct Edited {
  std::string file, edited;
  std::string stored, recomputed;  // the recorded digest and the edited config's
};

Edited edited_checkpoint(const fs::path& dir, const std::string& key, const std::string& line) {
  const RunConfig cfg = load_config(RPB_SOURCE_DIR "/configs/t5.toml", tiny_t5_overrides(dir, "run", 2));
  Run(cfg).train(false);
  Edited e;
  e.file = (dir / "run" / "step_00000002.h5").string();
  Checkpoint c = load_checkpoint(e.file);
  e.stored = c.config_digest;
  REQUIRE(e.stored == config_digest(cfg));
  const std::size_t at = c.config_text.find("\n" + key + " = ");
  REQUIRE(at != std::string::npos);
  c.config_text.replace(at + 1, c.config_text.find('\n', at + 1) - at - 1, line);
  e.edited = (dir / "edited.h5").string();
  save_checkpoint(e.edited, c);
  e.recomputed = config_digest(parse_stored_config(c.config_text, "edited"));
  REQUIRE(e.recomputed != e.stored);
  return e;
}

}  // namespace inspect_digest_test

using inspect_digest_test::edited_checkpoint;
using inspect_digest_test::report_of;

TEST_CASE("inspect: a stored config edited after the checkpoint was written is flagged, with both digests") {
  TempDir tmp("inspect_digest");
  const auto e = edited_checkpoint(tmp.path, "lr", "lr = 0.5");  // the learning rate edited
  const std::string intact = report_of(e.file);
  CHECK(contains(intact, "config digest " + e.stored + " (recomputed from the stored config; "
                         "train/config/run_identity.h), equal to the stored config_digest\n"));
  CHECK_FALSE(contains(intact, "MISMATCH"));
  const std::string report = report_of(e.edited);
  CHECK(contains(report, "config digest " + e.recomputed + " (recomputed from the stored config"));
  CHECK(contains(report, "stored config_digest " + e.stored + "\n  MISMATCH: the stored config_digest differs from the "
                         "digest of the stored config: the config was edited after the checkpoint was written"));
}

TEST_CASE("eval and generate: a stored config edited after the checkpoint was written is flagged, as inspect does") {
  TempDir tmp("eval_digest");
  // The T5 buckets' max_distance edited: the same parameters, another model.
  const auto e = edited_checkpoint(tmp.path, "max_distance", "max_distance = 40");
  const std::string warning = e.edited + ": the stored config_digest " + e.stored +
                              " differs from the digest of the stored config " + e.recomputed +
                              ": the config was edited after the checkpoint was written";
  for (const std::string verb : {"eval", "generate"}) {
    CAPTURE(verb);
    const std::string flags = verb == "eval" ? " --no-record" : " --prompt 1 --tokens 2";
    const CommandResult r = run_rpb(verb + " " + e.edited + flags);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "[warning] " + verb + ": " + warning));
    const CommandResult intact = run_rpb(verb + " " + e.file + flags);
    CHECK(intact.code == 0);
    CHECK(!contains(intact.out, "[warning]"));
  }
}
