// A kjv checkpoint records its text (/data: the vocabulary in id order and the text's SHA-256); eval and generate
// refuse another text unless --other-text, and the eval record says which text it scored (issue 24).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/data_identity.h"
#include "train/data/kjv.h"
#include "train/data/task.h"
#include "train/io/sha256.h"

namespace fs = std::filesystem;

namespace rpb_test_data_identity {

using rpb::testing::CommandResult;
using rpb::testing::contains;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

// A small text in kjv's layout (12 books of three verses, an empty line between books).
std::string kjv_text() {
  std::string t;
  for (int b = 0; b < 12; ++b)
    t += std::string(b ? "\n" : "") + "Book " + char('A' + b) + " verse one.\nAnd the second verse of it!\nThe third.\n";
  return t;
}

void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

// A 10-step kjv run on dir/kjv.txt, in dir/kjv.
std::string train_kjv(const TempDir& dir) {
  write(dir.path / "kjv.txt", kjv_text());
  write(dir.path / "kjv.toml",
        "[run]\nname = \"kjv\"\nout_dir = \"" + dir.path.string() +
            "\"\nsteps = 10\nbatch = 4\nlog_every = 10\nlength = 8\neval_multipliers = [1, 2]\neval_tokens = 32\n"
            "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n[task]\nkind = \"kjv\"\nkjv_path = \"" +
            dir.file("kjv.txt") + "\"\n[optim]\nwarmup_steps = 1\n");
  REQUIRE(run_rpb("train " + dir.file("kjv.toml")).code == 0);
  return dir.file("kjv");
}

}  // namespace rpb_test_data_identity

using namespace rpb_test_data_identity;

TEST_CASE("kjv text identity: the digest of the text as the splits read it, the file's own for rpb's layout") {
  TempDir dir("text_digest");
  write(dir.path / "a.txt", kjv_text());
  rpb::data::TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = dir.file("a.txt");
  const auto task = rpb::data::make_task(o);
  const rpb::DataIdentity id = rpb::data_identity(*task);
  CHECK(id.text_sha256 == rpb::sha256_file(dir.file("a.txt")));
  CHECK(id.vocab == dynamic_cast<const rpb::data::KjvTask&>(*task).chars());
  o.kind = "markov";
  CHECK(rpb::data_identity(*rpb::data::make_task(o)).empty());  // the config fixes generated data

  // One letter replaced by another of the vocabulary: same characters, another digest.
  rpb::DataIdentity other = id;
  other.text_sha256 = std::string(64, 'f');
  other.path = "b.txt";
  const std::string refused = rpb::testing::error_of(
      [&] { rpb::check_data_identity(id, other, "ck.h5", /*other_text=*/false, "eval"); });
  CHECK(contains(refused, "eval: the kjv text b.txt is not the one ck.h5 was trained on: its sha256 is " +
                              std::string(64, 'f') + ", the training text's " + id.text_sha256));
  CHECK(contains(refused, "--other-text"));
  CHECK_THROWS_AS(rpb::check_data_identity(id, other, "ck.h5", false, "eval"), rpb::UsageError);
  const rpb::DataVerdict v = rpb::check_data_identity(id, other, "ck.h5", /*other_text=*/true, "eval");
  CHECK(v.match == rpb::TextMatch::other);
  CHECK(contains(v.note, "another text than the training text (sha256 " + std::string(64, 'f')));
  // Other characters are refused even with --other-text: the ids would mean other characters.
  other.vocab[5] = 'Z';
  const std::string chars = rpb::testing::error_of([&] { rpb::check_data_identity(id, other, "ck.h5", true, "generate"); });
  CHECK(contains(chars, "generate: the kjv text b.txt is not the one ck.h5 was trained on: character id 5 is \"" +
                            id.vocab.substr(5, 1) + "\" in the checkpoint and \"Z\" in the text"));
  // A checkpoint of before the record: unverified, not refused.
  CHECK(rpb::check_data_identity({}, other, "old.h5", false, "eval").match == rpb::TextMatch::unverified);
}

TEST_CASE("eval and generate with a kjv text other than the training text: refused unless --other-text, recorded") {
  TempDir dir("data_identity");
  const std::string run = train_kjv(dir);
  const std::string digest = rpb::sha256_file(dir.file("kjv.txt"));
  const rpb::Checkpoint c = rpb::load_checkpoint(run + "/step_00000010.h5");
  CHECK(c.data.text_sha256 == digest);
  CHECK(c.data.vocab.size() == 30);
  CHECK(contains(run_rpb("inspect " + run).out, "  data: kjv text sha256 " + digest + ", 30 characters \"\\n !"));

  std::string text = kjv_text();
  text[text.find("second")] = 'e';  // "eecond": one letter replaced by another of the vocabulary
  write(dir.path / "edited.txt", text);
  const std::string edited = " --kjv-path " + dir.file("edited.txt"), same = " --kjv-path " + dir.file("kjv.txt");

  const CommandResult ok = run_rpb("eval " + run + same + " --json");
  REQUIRE(ok.code == 0);
  CHECK(contains(ok.out, "\"text\": \"training\",\n  \"text_sha256\": \"" + digest + "\""));
  for (const std::string& cmd : {"eval " + run + edited, "generate " + run + edited + " --prompt Book --tokens 4"}) {
    CAPTURE(cmd);
    const CommandResult r = run_rpb(cmd);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "is not the one " + run + "/step_00000010.h5 was trained on: its sha256 is " +
                              rpb::sha256_file(dir.file("edited.txt")) + ", the training text's " + digest));
  }
  CHECK(run_rpb("generate " + run + edited + " --other-text --prompt Book --tokens 4").code == 0);
  const CommandResult other = run_rpb("eval " + run + edited + " --other-text --json");
  REQUIRE(other.code == 0);
  CHECK(contains(other.out, "\"text\": \"other\",\n  \"text_sha256\": \"" +
                                rpb::sha256_file(dir.file("edited.txt")) + "\""));
  CHECK(fs::exists(run + "/eval/step_00000010-32-text" + rpb::sha256_file(dir.file("edited.txt")).substr(0, 12) +
                   ".json"));

  // A text with another character: refused naming it, --other-text or not.
  text = kjv_text();
  text[text.find("second")] = 'x';
  write(dir.path / "x.txt", text);
  const CommandResult x = run_rpb("eval " + run + " --other-text --kjv-path " + dir.file("x.txt"));
  CHECK(x.code == 2);
  CHECK(contains(x.out, "in the checkpoint and \"x\" in the text (the checkpoint has 30 characters, the text 31)"));
}

TEST_CASE("a kjv checkpoint written before /data loads and evaluates, recorded as unverified, /data is checked") {
  TempDir dir("data_identity_old");
  const std::string run = train_kjv(dir);
  const std::string file = run + "/step_00000010.h5";
  rpb::Checkpoint c = rpb::load_checkpoint(file);
  const rpb::DataIdentity recorded = c.data;
  c.data = {};
  rpb::save_checkpoint(file, c);
  const CommandResult old = run_rpb("eval " + run + " --json --kjv-path " + dir.file("kjv.txt"));
  CHECK(old.code == 0);
  CHECK(contains(old.out, "the text could not be verified"));
  CHECK(contains(old.out, "\"text\": \"unverified\""));

  // A /data/vocab of 300 entries (CRC right) is refused by its size, before it is read.
  c.data = recorded;
  rpb::save_checkpoint(file, c);
  const std::vector<int64_t> many(300, 7);
  rpb::testing::edit_hdf5(file, [&](hid_t f) {
    rpb::testing::replace_dataset(f, "/data/vocab", H5T_NATIVE_INT64, {300}, H5P_DEFAULT, many.data(),
                                  rpb::crc32_ieee(many.data(), many.size() * sizeof(int64_t)));
  });
  CHECK(contains(rpb::testing::error_of([&] { rpb::load_checkpoint(file); }),
                 "dataset /data/vocab: expected 1 to 256 int64 values (a byte per id), found [300] int64"));
}
