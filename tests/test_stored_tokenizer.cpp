// A stored tokenizer is untrusted input (issue 39): check_sentencepiece_model (train/data/sentencepiece_model.h) reads
// a stored SentencePiece model before SentencePiece does and refuses what rpb does not train, so a checkpoint holding
// one that crashed SentencePiece (a 9-byte precompiled normalizer map, a 256 KiB piece) is refused by `inspect`,
// `eval --data` and `generate` with exit 1 and a message; so is a tokenizer that is not its embedding's, naming
// /data/tokenizer_model and both sizes, and a /data naming a tokenizer without its model dataset.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"
#include "train/data/sentencepiece_model.h"
#include "train/data/text.h"
#include "train/data/tokenizer.h"

namespace stored_tokenizer_test {

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

const char* kGpl3 = "/usr/share/common-licenses/GPL-3";

// ---- protobuf's encoding, to append fields to a model: a message field given again merges into the one before
// (the later value of a scalar wins), and a repeated field (the pieces) gains an element.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7F) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}
std::string bytes_field(uint32_t number, const std::string& bytes) {
  return varint(uint64_t{number} << 3 | 2) + varint(bytes.size()) + bytes;
}
std::string varint_field(uint32_t number, uint64_t v) { return varint(uint64_t{number} << 3) + varint(v); }
std::string float_field(uint32_t number, float v) {
  const auto bits = std::bit_cast<uint32_t>(v);
  std::string out = varint(uint64_t{number} << 3 | 5);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  return out;
}
// ModelProto's fields: 1 a piece, 2 trainer_spec, 3 normalizer_spec, 4 self_test_data, 5 denormalizer_spec.
std::string piece(const std::string& text, float score = -20, uint64_t type = 1) {
  return bytes_field(1, bytes_field(1, text) + float_field(2, score) + varint_field(3, type));
}
std::string normalizer(const std::string& fields) { return bytes_field(3, fields); }
std::string trainer(const std::string& fields) { return bytes_field(2, fields); }

// The precompiled normalizer map of 9 bytes that crashed SentencePiece's encoder: a trie of one unit that leads
// outside itself, and one byte of normalized text.
const std::string kBadCharsmap("\x04\x00\x00\x00\xff\xff\xff\xffx", 9);

// A unigram or BPE model of 350 pieces, as rpb trains it, on Debian's GPL-3 (trained once per kind).
const std::string& rpb_model(const std::string& type = "unigram") {
  static std::map<std::string, std::string> models;
  std::string& model = models[type];
  if (model.empty()) {
    const std::vector<data::TextDocument> docs = data::read_documents(kGpl3, "blank_lines");
    std::vector<std::string_view> views;
    std::vector<int> splits;
    for (const data::TextDocument& d : docs) views.emplace_back(d.text), splits.push_back(0);
    data::TokenizerOptions o;
    o.vocab = 350;
    o.model_type = type;
    model = data::tokenizer_info("sentencepiece").build(data::TokenizerCorpus::of(views, splits), o)->record().model;
  }
  return model;
}

// The message check_sentencepiece_model gives for `model`, "" when it accepts it.
std::string refusal(const std::string& model) {
  return error_of([&] { data::check_sentencepiece_model(model, "ck.h5: /data/tokenizer_model"); });
}

// `model` in a buffer of exactly its size, so that AddressSanitizer reports a read past its end.
std::string refusal_exact(std::string_view model) {
  const auto buffer = std::make_unique<char[]>(model.size());
  std::copy(model.begin(), model.end(), buffer.get());
  return error_of([&] { data::check_sentencepiece_model({buffer.get(), model.size()}, "m"); });
}

// The test cases stay in the namespace: in a unity build, other test files' helpers of the same names are in scope.

TEST_CASE("stored SentencePiece model: rpb's own models are read, unigram and bpe") {
  for (const std::string type : {"unigram", "bpe"}) {
    INFO("model: ", type);
    const data::SentencePieceModelFacts facts = data::check_sentencepiece_model(rpb_model(type), "m");
    CHECK(facts.pieces == 350);
    CHECK(facts.model_type == type);
  }
  // A piece of kMaxSentencePieceBytes is read, by the reader and by SentencePiece.
  const std::string longest = rpb_model() + piece(std::string(data::kMaxSentencePieceBytes, 'a'));
  CHECK(refusal(longest).empty());
  CHECK(data::load_tokenizer({"sentencepiece", longest}, "m")->vocab() == 351);
}

TEST_CASE("stored SentencePiece model: a normalizer rpb does not train is refused before SentencePiece reads it") {
  const std::string& m = rpb_model();
  const std::string where = "ck.h5: /data/tokenizer_model";
  // NormalizerSpec's fields: 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
  // 5 escape_whitespaces, 6 normalization_rule_tsv.
  CHECK(contains(refusal(m + normalizer(bytes_field(2, kBadCharsmap))),
                 where + ": the normalizer carries a precompiled map of 9 bytes"));
  CHECK(contains(refusal(m + normalizer(bytes_field(2, "x"))), "a precompiled map of 1 bytes"));
  CHECK(contains(refusal(m + normalizer(bytes_field(1, "nmt_nfkc"))), "the normalizer is \"nmt_nfkc\""));
  CHECK(contains(refusal(m + normalizer(bytes_field(6, "a\tb\n"))), "carries normalization rules (4 bytes)"));
  CHECK(contains(refusal(m + normalizer(varint_field(3, 1))), "adds a space before the text (add_dummy_prefix)"));
  CHECK(contains(refusal(m + normalizer(varint_field(4, 1))), "folds runs of spaces"));
  CHECK(contains(refusal(m + normalizer(varint_field(5, 0))), "leaves spaces unescaped"));
  CHECK(contains(refusal(m + bytes_field(5, bytes_field(2, kBadCharsmap))),
                 "the denormalizer carries a precompiled map of 9 bytes"));
  CHECK(refusal(m + bytes_field(5, bytes_field(1, "identity"))).empty());  // a denormalizer without a map: unused
  // Self-test samples are encoded while SentencePiece loads the model (with the map above: a crash in `inspect`).
  CHECK(contains(refusal(m + normalizer(bytes_field(2, kBadCharsmap)) +
                         bytes_field(4, bytes_field(1, bytes_field(1, "abc") + bytes_field(2, "a b c")))),
                 "the model carries self-test samples (14 bytes at byte "));
  // TrainerSpec: 3 model_type (1 unigram, 2 bpe, 3 word, 4 char), 35 byte_fallback.
  CHECK(contains(refusal(m + trainer(varint_field(3, 3))), "model type 3; rpb reads unigram (1) and bpe (2)"));
  CHECK(contains(refusal(m + trainer(varint_field(35, 0))), "a model without byte fallback"));
  // Without a normalizer_spec, the defaults (a dummy prefix, folded spaces) are not rpb's either.
  CHECK(contains(refusal(piece("a") + trainer(varint_field(35, 1))), "the normalizer is \"\""));
  // A message given twice is read as protobuf merges it: the later value wins.
  CHECK(refusal(m + normalizer(varint_field(3, 1)) + normalizer(varint_field(3, 0))).empty());
  // The sentencepiece tokenizer reads the model first, so SentencePiece never sees these.
  CHECK(contains(error_of([&] { data::load_tokenizer({"sentencepiece", m + normalizer(bytes_field(2, kBadCharsmap))}, where); }),
                 "tokenizer: " + where + ": the normalizer carries a precompiled map of 9 bytes"));
}

TEST_CASE("stored SentencePiece model: pieces past 1 KiB, empty, with a NUL, of a score or a type rpb does not train") {
  const std::string& m = rpb_model();
  CHECK(contains(refusal(m + piece(std::string(data::kMaxSentencePieceBytes + 1, 'a'))),
                 "piece 350 (at byte "));
  CHECK(contains(refusal(m + piece(std::string(data::kMaxSentencePieceBytes + 1, 'a'))),
                 "is 1025 bytes long; rpb reads pieces of 1 to 1024 bytes"));
  CHECK(contains(refusal(m + piece(std::string(256 << 10, 'a'))), "is 262144 bytes long"));
  CHECK(contains(error_of([&] { data::load_tokenizer({"sentencepiece", m + piece(std::string(256 << 10, 'a'))}, "m"); }),
                 "is 262144 bytes long"));
  CHECK(contains(refusal(m + piece("")), "is 0 bytes long"));
  CHECK(contains(refusal(m + piece(std::string("a\0b", 3))), "holds a NUL byte"));
  CHECK(contains(refusal(m + piece("ab", std::numeric_limits<float>::quiet_NaN())), "has score nan"));
  CHECK(contains(refusal(m + piece("ab", -std::numeric_limits<float>::infinity())), "has score -inf"));
  CHECK(contains(refusal(m + piece("ab", 3e9f)), "rpb reads finite scores of magnitude at most"));
  CHECK(contains(refusal(m + piece("ab", -1, 4)), "is of type 4"));  // user-defined
  CHECK(contains(refusal(m + piece("ab", -1, 3)), "is of type 3"));  // control
  // What the reader lets through and SentencePiece still refuses: SentencePiece's reason, without its source location.
  const std::string twice = error_of([&] { data::load_tokenizer({"sentencepiece", m + piece("<0x41>", 0, 6)}, "m"); });
  CHECK(contains(twice, "m: not a SentencePiece model: SentencePiece reports \"<0x41> is already defined.\""));
  CHECK_FALSE(contains(twice, ".cc("));
  // 65536 pieces at most, counted as they are read.
  std::string many = m;
  for (int i = 350; i <= 65536; ++i) many += piece("p" + std::to_string(i));
  CHECK(contains(refusal(many), "more than 65536 pieces"));
  CHECK(contains(refusal(""), "a SentencePiece model of no pieces"));
}

TEST_CASE("stored SentencePiece model: malformed protobuf is refused where it goes wrong, never read past its end") {
  const std::string& m = rpb_model();
  CHECK(contains(refusal("\x0b"), "byte 0 (in the model) holds a group (field 1)"));
  CHECK(contains(refusal("\x0f"), "wire type 7"));
  CHECK(contains(refusal(std::string("\x00\x01", 2)), "a field number of 0"));
  CHECK(contains(refusal("\x0a\x05" "abc"), "byte 1 (in the model) holds a length of 5 past the end (3 bytes left)"));
  CHECK(contains(refusal("\x08" + std::string(10, '\xff') + "\x01"), "a varint of more than 64 bits"));
  CHECK(contains(refusal("\x08" + std::string(9, '\xff') + "\x02"), "a varint of more than 64 bits"));
  CHECK(refusal("\x48" + std::string(9, '\xff') + "\x01" + m).empty());  // 2^64 - 1 in field 9, unknown: read
  CHECK(contains(refusal("\x08\xff"), "a varint cut by the end"));
  CHECK(contains(refusal("\x0d\x01\x02"), "a 4-byte value past the end (2 bytes left)"));
  CHECK(contains(refusal(varint_field(1, 7)), "pieces (field 1) at byte 1 is a varint, expected a "
                                              "length-delimited value"));
  CHECK(contains(refusal(m + bytes_field(1, "\x0a\x09" "ab")), "(in pieces) holds a length of 9 past the end"));
  CHECK(contains(refusal(m + normalizer("\x1b")), "(in normalizer_spec) holds a group (field 3)"));
  // Every prefix of a model, and the model with random bytes changed, is refused or read: never a crash, never a
  // read past its end, never another exception.
  std::size_t refused = 0;
  for (std::size_t n = 0; n < m.size(); ++n) refused += !refusal_exact(std::string_view(m).substr(0, n)).empty();
  CHECK(refused == m.size());  // the normalizer comes last: no prefix is a whole model
  std::mt19937 gen(39);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = m;
    for (int k = 0; k < 4; ++k) damaged[gen() % damaged.size()] = static_cast<char>(gen());
    refusal_exact(damaged);
  }
}

// A tiny text run on a copy of Debian's GPL-3 with SentencePiece (400 pieces) in dir/t; returns its last checkpoint.
std::string train_text_run(const TempDir& dir) {
  fs::create_directories(dir.path / "corpus");
  fs::copy_file(kGpl3, dir.path / "corpus" / "gpl-3.txt");
  const std::string config = dir.file("text.toml");
  std::ofstream(config) << "[run]\nname = \"t\"\nout_dir = \"" << dir.path.string()
                        << "\"\nsteps = 1\nbatch = 1\nlength = 16\neval_multipliers = [1]\neval_tokens = 32\n"
                           "eval_diagnostics = false\n[model]\nd_model = 8\nheads = 1\nlayers = 1\nd_ff = 8\n"
                           "[task]\nkind = \"text\"\npath = \""
                        << (dir.path / "corpus").string()
                        << "\"\ndocuments = \"blank_lines\"\ntokenizer = \"sentencepiece\"\nvocab = 400\n"
                           "valid_fraction = 0.1\ntest_fraction = 0.1\n";
  const rpb::testing::CommandResult train = run_rpb("train " + config);
  REQUIRE_MESSAGE(train.code == 0, train.out);
  return (dir.path / "t" / "step_00000001.h5").string();
}

// `from` with `tokenizer` in place of its own, saved as dir/<name>.h5 (outside the run folder).
std::string with_tokenizer(const TempDir& dir, const std::string& from, const std::string& name,
                           const data::TokenizerRecord& tokenizer) {
  Checkpoint c = load_checkpoint(from);
  c.data.tokenizer = tokenizer;
  const std::string file = dir.file(name + ".h5");
  save_checkpoint(file, c);
  return file;
}

// What `inspect`, `eval --data` and `generate` of `file` print; each must exit 1.
std::vector<std::string> refusals(const TempDir& dir, const std::string& file) {
  std::vector<std::string> out;
  for (const std::string& command :
       {"inspect " + file, "eval " + file + " --data " + (dir.path / "corpus").string(),
        "generate " + file + " --prompt \"In the beginning\" --tokens 2"}) {
    const rpb::testing::CommandResult r = run_rpb(command);
    INFO(command, ": ", r.out);
    CHECK(r.code == 1);
    out.push_back(r.out);
  }
  return out;
}

TEST_CASE("stored tokenizer: inspect, eval --data and generate refuse a SentencePiece model that crashed SentencePiece, "
          "one of another vocabulary than the embedding, and a missing one, naming /data/tokenizer_model") {
  TempDir dir("stored_tokenizer_crash");
  const std::string trained = train_text_run(dir);
  const std::string model = load_checkpoint(trained).data.tokenizer.model;
  // A 9-byte precompiled normalizer map: SentencePiece's encoder crashed (SIGSEGV) on it, and inspect called it fine.
  const std::string charsmap =
      with_tokenizer(dir, trained, "charsmap", {"sentencepiece", model + normalizer(bytes_field(2, kBadCharsmap))});
  for (const std::string& out : refusals(dir, charsmap)) {
    CHECK(contains(out, "/data/tokenizer_model: the normalizer carries a precompiled map of 9 bytes"));
    CHECK(contains(out, charsmap));
  }
  // A piece of 256 KiB: SentencePiece's loader overflowed the stack (SIGSEGV) in all three.
  const std::string long_piece =
      with_tokenizer(dir, trained, "piece", {"sentencepiece", model + piece(std::string(256 << 10, 'a'))});
  for (const std::string& out : refusals(dir, long_piece))
    CHECK(contains(out, "/data/tokenizer_model: piece 400 (at byte "));

  // A tokenizer of 350 pieces with parameters trained for 400: /params/tok.weight is right, the tokenizer is not.
  const std::string other = with_tokenizer(dir, trained, "other", {"sentencepiece", rpb_model()});
  for (const std::string& out : refusals(dir, other)) {
    CHECK(contains(out, "the stored tokenizer (/data/tokenizer_model) has 350 ids, but the model's embedding "
                        "(/params/tok.weight) has 400 rows"));
  }
  // /data names a SentencePiece tokenizer, but its model dataset is not there (a bytes tokenizer has none).
  const std::string missing = with_tokenizer(dir, trained, "missing", {"sentencepiece", ""});
  for (const std::string& out : refusals(dir, missing)) {
    CHECK(contains(out, "dataset /data/tokenizer_model is missing: attribute tokenizer of /data names a "
                        "sentencepiece tokenizer"));
    CHECK_FALSE(contains(out, "unk is not defined"));
  }
}

}  // namespace stored_tokenizer_test
