// Passkey retrieval with filler from one's own text (task.kind = "passkey_text", train/data/passkey.h over
// train/data/text.h): train on a folder with SentencePiece, generate from the checkpoint alone with the key and the
// question written in the prompt, eval --data, another text refused by its digest, and a held-out split too short for
// the longest sample refused before training.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/data/passkey.h"
#include "train/data/passkey_prompt.h"
#include "train/data/tokenizer.h"

namespace passkey_text_test {

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// A config of a tiny passkey_text run on `corpus` (SentencePiece, 400 pieces), its evaluation at `multipliers`.
std::string write_config(const TempDir& dir, const fs::path& corpus, const std::string& multipliers) {
  const std::string config = dir.file("pk.toml");
  std::ofstream(config) << "[run]\nname = \"pk\"\nout_dir = \"" << dir.path.string()
                        << "\"\nsteps = 4\nbatch = 4\nlength = 32\nlog_every = 2\neval_every = 2\n"
                           "eval_multipliers = " << multipliers << "\neval_diagnostics = false\n"
                           "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                           "[position]\nscheme = \"alibi\"\n[task]\nkind = \"passkey_text\"\npath = \""
                        << corpus.string()
                        << "\"\ndocuments = \"blank_lines\"\ntokenizer = \"sentencepiece\"\nvocab = 400\n"
                           "valid_fraction = 0.1\ntest_fraction = 0.1\npasskey_digits = 3\npasskey_samples = 2\n"
                           "[optim]\nwarmup_steps = 1\n";
  return config;
}

}  // namespace passkey_text_test

using namespace passkey_text_test;

TEST_CASE("passkey_text end to end: train on a folder, generate from the checkpoint alone, eval --data, another text "
          "refused by its digest") {
  TempDir dir("passkey_text_cli");
  const fs::path corpus = dir.path / "corpus";
  fs::create_directories(corpus);
  fs::copy_file("/usr/share/common-licenses/GPL-3", corpus / "gpl-3.txt");
  const std::string config = write_config(dir, corpus, "[1, 2]");
  const rpb::testing::CommandResult train = run_rpb("train " + config);
  REQUIRE_MESSAGE(train.code == 0, train.out);
  CHECK(contains(train.out, "filler from one's own text"));
  CHECK(contains(train.out, "tokenizer sentencepiece (400 pieces, byte fallback)"));
  CHECK(contains(train.out, "| 0.9-1.0 |"));  // the depth grid
  const std::string run = (dir.path / "pk").string();

  // The checkpoint holds the tokenizer: generate reads no text; the prompt writes the key and the question, and the
  // output prints the task's own ids as the digits and markers.
  fs::rename(corpus, dir.path / "moved");
  const rpb::testing::CommandResult gen =
      run_rpb("generate " + run + " --prompt \"The licenses <key>482 for most software <query>\" --tokens 3");
  CHECK_MESSAGE(gen.code == 0, gen.out);
  CHECK(contains(gen.out, "The licenses <key>482 for most software <query>"));
  // A prompt the task's samples never hold (a key of two digits for a model of three): exit 2, naming the marker.
  const rpb::testing::CommandResult bad = run_rpb("generate " + run + " --prompt \"The <key>48 and <query>\"");
  CHECK(bad.code == 2);
  CHECK(contains(bad.out, "--prompt: <key> at byte 4 is followed by 2 digits; expected the key's 3"));
  CHECK(contains(run_rpb("inspect " + run).out, "tokenizer sentencepiece (400 pieces"));
  // Another tokenizer is blamed, not the embedding, counting the task's ids: 256 bytes and 12 against 412 rows.
  Checkpoint bytes = load_checkpoint((dir.path / "pk" / "step_00000004.h5").string());
  bytes.data.tokenizer = {"bytes", ""};
  save_checkpoint(dir.file("bytes.h5"), bytes);
  const rpb::testing::CommandResult other_tokenizer = run_rpb("inspect " + dir.file("bytes.h5"));
  CHECK(other_tokenizer.code == 1);
  CHECK(contains(other_tokenizer.out, "the stored tokenizer (/data/tokenizer_model) has 256 ids and the passkey_text "
                                      "task adds 12 (268 in all), but the model's embedding (/params/tok.weight) has "
                                      "412 rows"));

  // eval reads the text (the recorded task.path, moved away: --data) and scores accuracy with the stored tokenizer;
  // another text is refused by its digest.
  const rpb::testing::CommandResult none = run_rpb("eval " + run);
  CHECK(none.code == 2);
  CHECK(contains(none.out, "was trained on task.path " + corpus.string()));
  CHECK(contains(none.out, "which does not exist now; pass the text to evaluate on with --data PATH"));
  const std::string moved = (dir.path / "moved").string();
  const rpb::testing::CommandResult eval = run_rpb("eval " + run + " --data " + moved + " --no-record");
  CHECK_MESSAGE(eval.code == 0, eval.out);
  CHECK(contains(eval.out, "accuracy (%)"));
  std::ofstream(dir.path / "moved" / "more.txt") << "A paragraph the training text did not hold.\n";
  const rpb::testing::CommandResult other = run_rpb("eval " + run + " --data " + moved + " --no-record");
  CHECK(other.code == 2);
  CHECK(contains(other.out, "is not the one"));
  CHECK(run_rpb("eval " + run + " --data " + moved + " --other-text --no-record").code == 0);
  // Back at the recorded path, with a paragraph more: refused by its digest, naming --data and --other-text.
  fs::rename(dir.path / "moved", corpus);
  const rpb::testing::CommandResult recorded = run_rpb("eval " + run + " --no-record");
  CHECK(recorded.code == 2);
  CHECK(contains(recorded.out, "the corpus " + corpus.string() + " (task.path) is not the one"));
  CHECK(contains(recorded.out, "pass the training text with --data, or --other-text"));
  // A resumed run continues on its own data.
  const rpb::testing::CommandResult resume = run_rpb("train " + config + " --resume");
  CHECK(resume.code == 1);
  CHECK(contains(resume.out, "a resumed run continues on its own data"));
}

TEST_CASE("passkey_text: a held-out split too short for the longest sample is refused before training, naming it") {
  TempDir dir("passkey_text_short");
  const fs::path corpus = dir.path / "corpus";
  fs::create_directories(corpus);
  fs::copy_file("/usr/share/common-licenses/GPL-3", corpus / "gpl-3.txt");
  const rpb::testing::CommandResult train = run_rpb("train " + write_config(dir, corpus, "[1, 64]"));
  CHECK(train.code == 1);
  CHECK(contains(train.out, "the longest evaluation length 64 x run.length 32 = 2048 needs 2041 filler tokens"));
  CHECK(contains(train.out, "the test split's filler holds"));
  CHECK_FALSE(fs::exists(dir.path / "pk" / "step_00000000.h5"));
}

TEST_CASE("passkey_text: a generate prompt writes the markers and the key's digits as the task's own ids") {
  const auto bytes = data::tokenizer_info("bytes").build(data::TokenizerCorpus::of({}, {}), {});
  // The bytes tokenizer's 256 ids, then the digits 0-9 (256..265), the key marker 266 and the query marker 267.
  CHECK(data::encode_passkey_prompt(*bytes, "ab<key>12 c<query>", 2) ==
        std::vector<int64_t>{'a', 'b', 266, 257, 258, ' ', 'c', 267});
  // Digits count as the task's only right after a marker; elsewhere they are text. The query may start the answer.
  CHECK(data::encode_passkey_prompt(*bytes, "7<key>12 8<query>3", 2) ==
        std::vector<int64_t>{'7', 266, 257, 258, ' ', '8', 267, 259});
  CHECK(data::encode_passkey_prompt(*bytes, "no markers: filler 12", 2).size() == 21);
  CHECK(data::encode_passkey_prompt(*bytes, "x <key>12 y", 2).size() == 7);  // a key, no question yet
  CHECK(contains(error_of([&] { data::encode_passkey_prompt(*bytes, "", 2); }), "found an empty prompt"));
  CHECK(std::string(data::passkey_marker_text(10)) == "<key>");
  CHECK(std::string(data::passkey_marker_text(11)) == "<query>");
  CHECK(contains(error_of([] { data::passkey_marker_text(3); }), "not a marker"));
}

TEST_CASE("passkey_text: a generate prompt whose markers the task's samples never hold is refused, naming the marker") {
  const auto bytes = data::tokenizer_info("bytes").build(data::TokenizerCorpus::of({}, {}), {});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a <key>1 b<query>", "<key> at byte 2 is followed by 1 digits; expected the key's 3 (task.passkey_digits"},
      {"a <key>1234 b<query>", "<key> at byte 2 is followed by 4 digits; expected the key's 3"},
      {"a <key> 123 b<query>", "<key> at byte 2 is followed by 0 digits"},
      {"<key>123<key>456<query>", "a second <key> at byte 8; expected one key block (<key> and the key's 3 digits)"},
      {"7<query>3", "<query> at byte 1 asks for the key, and no <key> block comes before it"},
      {"a <query> b <key>123", "<query> at byte 2 asks for the key"},
      {"<key>123 a<query>1234", "<query> at byte 10 is followed by 4 digits; expected at most the key's 3"},
      {"<key>123 a<query>12 more", "\" more\" follows <query> at byte 10; expected the prompt to end with the query"},
      {"<key>123 a<query><query>", "\"<query>\" follows <query> at byte 10"},
      {"<key>123 a<query><key>456", "\"<key>456\" follows <query> at byte 10"},
  };
  for (const auto& one : cases) {  // no structured binding: clang 14 cannot capture one in the lambda below
    const std::string prompt = one.first, message = one.second;
    CAPTURE(prompt);
    const std::string e = error_of([&] { data::encode_passkey_prompt(*bytes, prompt, 3); });
    CHECK(contains(e, "--prompt: "));
    CHECK(contains(e, message));
  }
}
