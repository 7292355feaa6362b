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

}  // namespace inspect_digest_test

TEST_CASE("inspect: a stored config edited after the checkpoint was written is flagged, with both digests") {
  TempDir tmp("inspect_digest");
  const RunConfig cfg = load_config(RPB_SOURCE_DIR "/configs/t5.toml", tiny_t5_overrides(tmp.path, "run", 2));
  Run(cfg).train(false);
  const std::string file = (tmp.path / "run" / "step_00000002.h5").string();
  Checkpoint c = load_checkpoint(file);
  const std::string stored = c.config_digest;
  REQUIRE(stored == config_digest(cfg));

  const std::string intact = inspect_digest_test::report_of(file);
  CHECK(contains(intact, "config digest " + stored + " (recomputed from the stored config; train/config/run_identity.h), "
                         "equal to the stored config_digest\n"));
  CHECK_FALSE(contains(intact, "MISMATCH"));

  // The learning rate edited in the stored config, the recorded digest kept, as an edit of the file leaves it.
  const std::size_t at = c.config_text.find("\nlr = ");
  REQUIRE(at != std::string::npos);
  c.config_text.replace(at + 1, c.config_text.find('\n', at + 1) - at - 1, "lr = 0.5");
  const std::string edited = (tmp.path / "edited.h5").string();
  save_checkpoint(edited, c);
  const std::string recomputed = config_digest(parse_stored_config(c.config_text, "edited"));
  REQUIRE(recomputed != stored);
  const std::string report = inspect_digest_test::report_of(edited);
  CHECK(contains(report, "config digest " + recomputed + " (recomputed from the stored config"));
  CHECK(contains(report, "stored config_digest " + stored + "\n  MISMATCH: the stored config_digest differs from the "
                         "digest of the stored config: the config was edited after the checkpoint was written"));
}

TEST_CASE("eval and generate: a stored config edited after the checkpoint was written is flagged, as inspect does") {
  TempDir tmp("eval_digest");
  const RunConfig cfg = load_config(RPB_SOURCE_DIR "/configs/t5.toml", tiny_t5_overrides(tmp.path, "run", 2));
  Run(cfg).train(false);
  const std::string file = (tmp.path / "run" / "step_00000002.h5").string();
  Checkpoint c = load_checkpoint(file);
  const std::string stored = c.config_digest;
  // The T5 buckets' max_distance edited: the same parameters, another model.
  const std::size_t at = c.config_text.find("\nmax_distance = ");
  REQUIRE(at != std::string::npos);
  c.config_text.replace(at + 1, c.config_text.find('\n', at + 1) - at - 1, "max_distance = 40");
  const std::string edited = (tmp.path / "edited.h5").string();
  save_checkpoint(edited, c);
  const std::string recomputed = config_digest(parse_stored_config(c.config_text, "edited"));
  REQUIRE(recomputed != stored);
  const std::string warning = edited + ": the stored config_digest " + stored +
                              " differs from the digest of the stored config " + recomputed +
                              ": the config was edited after the checkpoint was written";
  for (const std::string verb : {"eval", "generate"}) {
    CAPTURE(verb);
    const std::string flags = verb == "eval" ? " --no-record" : " --prompt 1 --tokens 2";
    const CommandResult r = run_rpb(verb + " " + edited + flags);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "[warning] " + verb + ": " + warning));
    const CommandResult intact = run_rpb(verb + " " + file + flags);
    CHECK(intact.code == 0);
    CHECK(!contains(intact.out, "[warning]"));
  }
}
