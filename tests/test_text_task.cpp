// The text task (train/data/text.h) and its tokenizers (train/data/tokenizer.h): the split rule, the documents of a
// folder, the tokenizers' round trips, SentencePiece's reproducibility, and the errors a user meets.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "train/data/kjv.h"
#include "train/data/task_registry.h"
#include "train/data/text.h"
#include "train/data/tokenizer.h"
#include "train/sweep/sweep.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;
using rpb::testing::TempDir;

namespace text_task_test {

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// A text with spaces of every kind, line ends, and characters of one to four UTF-8 bytes.
const std::string kMixed = "  In the beginning\tGod created the heaven and the earth.\n\nCafé, naïve, 中文 and 🙂.\r\n";

// Debian's GPL-3 text (base-files): a corpus every Debian machine has.
const char* kLicense = "/usr/share/common-licenses/GPL-3";

data::TokenizerOptions sentencepiece_options(int64_t vocab, const std::string& type = "unigram") {
  data::TokenizerOptions o;
  o.vocab = vocab;
  o.model_type = type;
  o.seed = 5;
  return o;
}

std::unique_ptr<data::Tokenizer> license_sentencepiece(const std::string& type, std::string* text = nullptr) {
  const std::vector<data::TextDocument> docs = data::read_documents(kLicense, "blank_lines");
  std::vector<std::string_view> views;
  std::vector<int> splits;
  for (const data::TextDocument& d : docs) views.emplace_back(d.text), splits.push_back(0);
  if (text)
    for (const data::TextDocument& d : docs) *text += d.text;
  return data::tokenizer_info("sentencepiece").build(data::TokenizerCorpus::of(views, splits), sentencepiece_options(600, type));
}

// A text task over the folder `corpus` with the chars tokenizer, `fraction` of the documents in valid and in test.
data::TaskOptions chars_task(const fs::path& corpus, double fraction) {
  data::TaskOptions o;
  o.kind = "text";
  o.path = corpus.string();
  o.tokenizer = "chars";
  o.valid_fraction = fraction;
  o.test_fraction = fraction;
  return o;
}

}  // namespace text_task_test

using namespace text_task_test;

TEST_CASE("text: the split rule reads a document's SHA-256, so a document keeps its split whatever else the corpus holds") {
  // sha256("eta\n") starts 157268265e4f35cc: 0.0838 of 2^64; "zeta\n" 2088d0c4b41022d9: 0.1271; "delta\n" 0.4032.
  CHECK(data::split_of_document("eta\n", 0.1, 0.1) == 2);
  CHECK(data::split_of_document("zeta\n", 0.1, 0.1) == 1);
  CHECK(data::split_of_document("delta\n", 0.1, 0.1) == 0);
  CHECK(data::split_of_document("zeta\n", 0.1, 0.2) == 2);  // the boundaries move, not the document's value
  CHECK(data::split_of_document("eta\n", 0.0, 0.05) == 0);
  // The corpus digest is of the documents' digests in order: another order is another corpus.
  const std::vector<data::TextDocument> ab = {{"a\n", "x"}, {"b\n", "y"}}, ba = {{"b\n", "y"}, {"a\n", "x"}};
  CHECK(data::corpus_sha256(ab) != data::corpus_sha256(ba));
  CHECK(data::corpus_sha256(ab) == data::corpus_sha256({{"a\n", "elsewhere"}, {"b\n", "too"}}));
}

TEST_CASE("text: documents are a folder's regular files in path order, or its paragraphs, and links are not followed") {
  TempDir dir("text_documents");
  write(dir.path / "b.txt", "second\n");
  write(dir.path / "a" / "z.txt", "first\n\n\nfirst again\nstill\n");
  write(dir.path / "c.txt", "");  // empty: no document
  write(dir.path / "outside.txt", "never read\n");
  fs::create_directory(dir.path / "corpus");
  fs::rename(dir.path / "a", dir.path / "corpus" / "a");
  fs::rename(dir.path / "b.txt", dir.path / "corpus" / "b.txt");
  fs::rename(dir.path / "c.txt", dir.path / "corpus" / "c.txt");
  fs::create_symlink(dir.path / "outside.txt", dir.path / "corpus" / "link.txt");
  fs::create_directory_symlink(dir.path, dir.path / "corpus" / "loop");
  const std::string corpus = (dir.path / "corpus").string();
  int64_t skipped = 0;
  const std::vector<data::TextDocument> files = data::read_documents(corpus, "files", &skipped);
  REQUIRE(files.size() == 2);
  CHECK(files[0].text == "first\n\n\nfirst again\nstill\n");
  CHECK(files[0].source == (dir.path / "corpus" / "a" / "z.txt").string());
  CHECK(files[1].text == "second\n");
  CHECK(skipped == 2);
  const std::vector<data::TextDocument> blocks = data::read_documents(corpus, "blank_lines");
  REQUIRE(blocks.size() == 3);
  CHECK(blocks[0].text == "first\n\n");
  CHECK(blocks[1].text == "first again\nstill\n\n");
  CHECK(blocks[1].source == (dir.path / "corpus" / "a" / "z.txt").string() + ":4");
  CHECK(data::corpus_size(corpus).bytes == 33);
  CHECK(data::corpus_size(corpus).largest_file == 26);
  // A file: itself, whatever its name.
  CHECK(data::read_documents((dir.path / "outside.txt").string(), "files").size() == 1);

  // Errors name the file and where.
  write(dir.path / "bad" / "latin1.txt", "ok\ncaf\xe9\n");
  CHECK(contains(error_of([&] { data::read_documents((dir.path / "bad").string(), "files"); }),
                 "latin1.txt is not UTF-8 text: byte 0xe9 (invalid UTF-8) at line 2, byte 4"));
  CHECK(contains(error_of([&] { data::read_documents((dir.path / "nothing").string(), "files"); }),
                 "task.path " + (dir.path / "nothing").string() + ": No such file or directory"));
  fs::create_directory(dir.path / "empty");
  CHECK(contains(error_of([&] { data::read_documents((dir.path / "empty").string(), "files"); }), "holds no text"));
}

TEST_CASE("text: every tokenizer gives the text back, byte for byte") {
  const std::vector<std::string_view> docs = {kMixed};
  const std::vector<int> splits = {0};
  for (const std::string& kind : data::tokenizer_names()) {
    INFO("tokenizer: ", kind);
    if (kind == "sentencepiece") continue;  // below, on a corpus large enough to train it
    const auto t = data::tokenizer_info(kind).build(data::TokenizerCorpus::of(docs, splits), {});
    const std::vector<int32_t> ids = t->encode(kMixed);
    CHECK(t->decode(ids) == kMixed);
    int64_t bytes = 0;
    for (const int32_t id : ids) bytes += static_cast<int64_t>(t->token_bytes(id).size());
    CHECK(bytes == static_cast<int64_t>(kMixed.size()));
    // Stored and loaded: the same tokenizer.
    const auto back = data::load_tokenizer(t->record(), "test");
    CHECK(back->encode(kMixed) == ids);
    CHECK(back->vocab() == t->vocab());
  }
  const auto chars = data::tokenizer_info("chars").build(data::TokenizerCorpus::of(docs, splits), {});
  CHECK(chars->vocab() == 28);  // the distinct characters of kMixed, by code point
  CHECK(chars->token_bytes(0) == "\t");
  CHECK(chars->token_bytes(27) == "🙂");
  CHECK(contains(error_of([&] { chars->encode("CafZ"); }), "character U+005A (\"Z\") at byte 3 is not in the vocabulary"));
  const auto bytes = data::tokenizer_info("bytes").build(data::TokenizerCorpus::of(docs, splits), {});
  CHECK(bytes->encode("é") == std::vector<int32_t>{0xc3, 0xa9});

  // A stored model is untrusted: errors, not crashes.
  CHECK(contains(error_of([] { data::load_tokenizer({"chars", "ba"}, "ck.h5"); }), "increasing order"));
  CHECK(contains(error_of([] { data::load_tokenizer({"chars", "a\xff"}, "ck.h5"); }), "invalid UTF-8 at byte 1"));
  CHECK(contains(error_of([] { data::load_tokenizer({"bytes", "x"}, "ck.h5"); }), "has no model"));
  CHECK(contains(error_of([] { data::load_tokenizer({"wordpiece", ""}, "ck.h5"); }), "unknown tokenizer"));
  CHECK(contains(error_of([] { data::load_tokenizer({"sentencepiece", "not a model"}, "ck.h5"); }),
                 "ck.h5: not a SentencePiece model"));
}

TEST_CASE("text: SentencePiece trains from memory, reproducibly, and decodes exactly (byte fallback)") {
  for (const std::string type : {"unigram", "bpe"}) {
    INFO("model: ", type);
    std::string license;
    const auto a = license_sentencepiece(type, &license), b = license_sentencepiece(type);
    CHECK(a->vocab() == 600);
    CHECK(a->record().model == b->record().model);  // the same seed and one thread: the same model
    for (const std::string& text : {license, kMixed, std::string("ÿ ⌘ unseen characters become their bytes\n")}) {
      const std::vector<int32_t> ids = a->encode(text);
      CHECK(a->decode(ids) == text);
    }
    CHECK(a->encode(license).size() * 4 < license.size() * 3);  // pieces longer than characters
    const auto back = data::load_tokenizer(a->record(), "test");
    CHECK(back->encode(kMixed) == a->encode(kMixed));
    // SentencePiece writes its own space mark for ' ': a text holding one cannot be decoded exactly, and says so.
    CHECK(contains(error_of([&] { a->encode("a\xe2\x96\x81 b"); }), "cannot encode this text exactly"));
  }
  // Too few pieces for the 256 bytes and the text's characters, or more than the text supports: the reason and what
  // to change, in rpb's terms (task.vocab), without the trainer's source location or its options.
  const auto training_error = [](int64_t vocab) {
    return error_of([vocab] {
      const std::vector<std::string_view> docs = {kMixed};
      const std::vector<int> splits = {0};
      data::tokenizer_info("sentencepiece").build(data::TokenizerCorpus::of(docs, splits), sentencepiece_options(vocab));
    });
  };
  const std::string low = training_error(100), high = training_error(2000);
  CHECK(contains(low, "training a unigram model of task.vocab = 100 pieces failed: a vocabulary holds <unk>, the 256 "
                      "byte pieces and the sampled text's characters: 283 pieces for this text; raise task.vocab to "
                      "at least that"));
  CHECK(contains(high, "training a unigram model of task.vocab = 2000 pieces failed: the text supports at most 288 "
                       "pieces; lower task.vocab to at most that, or train on more text (task.path, "
                       "task.sentencepiece_sentences)"));
  for (const std::string& e : {low, high}) {
    CHECK_FALSE(contains(e, ".cc("));
    CHECK_FALSE(contains(e, "--"));
    CHECK_FALSE(contains(e, "vocab_size"));
  }
}

TEST_CASE("text task: the splits by content, the stored tokenizer, and a corpus too small to split") {
  TempDir dir("text_task");
  const char* words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
  for (int i = 0; i < 8; ++i) write(dir.path / "c" / (std::string(1, char('a' + i)) + ".txt"), std::string(words[i]) + " é\n");
  data::TaskOptions o = chars_task(dir.path / "c", 0.3);
  const auto task = data::make_task(o);
  const auto* text = dynamic_cast<const data::TextTask*>(task.get());
  REQUIRE(text != nullptr);
  const data::Tokenizer& t = *text->tokenizer();
  // By their digests at valid 0.3, test 0.3: alpha, epsilon, zeta and eta test; beta and theta valid; the rest train.
  CHECK(t.decode(task->test_stream().to_vector()) == "alpha é\nepsilon é\nzeta é\neta é\n");
  CHECK(t.decode(task->valid_stream().to_vector()) == "beta é\ntheta é\n");
  CHECK(t.decode(task->train_stream().to_vector()) == "gamma é\ndelta é\n");
  CHECK(contains(task->describe(), "8 documents (files)"));
  // Adding a document moves no other: the old streams are still there, in order.
  write(dir.path / "c" / "i.txt", "iota é\n");
  const auto more = data::make_task(o);
  std::size_t kept = 0;
  for (const auto* s : {&task->train_stream(), &task->valid_stream(), &task->test_stream()}) kept += s->size();
  std::size_t now = 0;
  for (const auto* s : {&more->train_stream(), &more->valid_stream(), &more->test_stream()}) now += s->size();
  CHECK(now == kept + 7);
  CHECK(dynamic_cast<const data::TextTask*>(more.get())->text_sha256() != text->text_sha256());
  // The stored tokenizer encodes another text the same way, and refuses a character it lacks.
  data::TaskOptions again = o;
  again.stored_tokenizer = std::make_shared<const data::TokenizerRecord>(t.record());
  again.use = data::DataUse::evaluate;
  const auto evaluated = data::make_task(again);
  CHECK(evaluated->test_stream() == more->test_stream());
  // The splits an evaluation does not encode are not built, not of 0 tokens; training counts every split's.
  CHECK(contains(evaluated->describe(), "train 2 documents, 18 bytes, not built; valid 3 documents, 25 bytes, not built; "
                                        "test 4 documents, 35 bytes, 31 tokens"));
  CHECK(contains(more->describe(), "train 2 documents, 18 bytes, 16 tokens; valid 3 documents, 25 bytes, 22 tokens; "
                                   "test 4 documents, 35 bytes, 31 tokens"));
  write(dir.path / "c" / "j.txt", "ü\n");  // a valid document: training encodes it
  again.use = data::DataUse::train;
  CHECK(contains(error_of([&] { data::make_task(again); }), "j.txt: chars tokenizer: character U+00FC"));
  // One document cannot fill three splits.
  data::TaskOptions one = o;
  one.path = (dir.path / "c" / "a.txt").string();
  CHECK(contains(error_of([&] { data::make_task(one); }), "split has no document (1 documents"));
}

TEST_CASE("text task end to end: train on a folder with SentencePiece, generate from the checkpoint alone, eval "
          "--data, another text refused by its digest") {
  TempDir dir("text_cli");
  const fs::path corpus = dir.path / "corpus";
  fs::create_directories(corpus);
  fs::copy_file(kLicense, corpus / "gpl-3.txt");
  write(corpus / "notes" / "genesis.txt", "In the beginning God created the heaven and the earth.\n\n"
                                          "And the earth was without form, and void.\n");
  const std::string config = dir.file("text.toml");
  std::ofstream(config) << "[run]\nname = \"t\"\nout_dir = \"" << dir.path.string()
                        << "\"\nsteps = 3\nbatch = 2\nlength = 32\nlog_every = 1\neval_multipliers = [1, 2]\n"
                           "eval_tokens = 256\n[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                           "[position]\nscheme = \"alibi\"\n[task]\nkind = \"text\"\npath = \""
                        << corpus.string()
                        << "\"\ndocuments = \"blank_lines\"\ntokenizer = \"sentencepiece\"\nvocab = 500\n"
                           "valid_fraction = 0.1\ntest_fraction = 0.1\n[optim]\nwarmup_steps = 1\n";
  const rpb::testing::CommandResult train = rpb::testing::run_rpb("train " + config);
  REQUIRE_MESSAGE(train.code == 0, train.out);
  CHECK(contains(train.out, "tokenizer sentencepiece (500 pieces, byte fallback)"));
  CHECK(contains(train.out, "bits per byte"));
  const std::string run = (dir.path / "t").string();

  // The checkpoint holds the tokenizer: generate reads no text, even with the corpus gone.
  fs::rename(corpus, dir.path / "moved");
  const rpb::testing::CommandResult gen =
      rpb::testing::run_rpb("generate " + run + " --prompt \"In the beginning\" --tokens 20 --seed 1");
  CHECK_MESSAGE(gen.code == 0, gen.out);
  CHECK(contains(gen.out, "In the beginning"));
  const rpb::testing::CommandResult inspect = rpb::testing::run_rpb("inspect " + run);
  CHECK(contains(inspect.out, "tokenizer sentencepiece (500 pieces"));

  // eval reads the text (the recorded task.path, moved away: --data), scores it with the stored tokenizer, and
  // reports bits per byte.
  const rpb::testing::CommandResult none = rpb::testing::run_rpb("eval " + run);
  CHECK(none.code == 2);
  CHECK(contains(none.out, "which does not exist now; pass the text to evaluate on with --data PATH"));
  const std::string moved = (dir.path / "moved").string();
  const rpb::testing::CommandResult eval = rpb::testing::run_rpb("eval " + run + " --data " + moved + " --json");
  CHECK_MESSAGE(eval.code == 0, eval.out);
  CHECK(contains(eval.out, "\"bits_per_byte\""));
  // Another text: refused by its digest unless --other-text says it is intended.
  write(dir.path / "moved" / "notes" / "exodus.txt", "Now these are the names of the children of Israel.\n");
  const rpb::testing::CommandResult other = rpb::testing::run_rpb("eval " + run + " --data " + moved + " --no-record");
  CHECK(other.code == 2);
  CHECK(contains(other.out, "is not the one"));
  CHECK(contains(other.out, "its sha256 is"));
  CHECK(rpb::testing::run_rpb("eval " + run + " --data " + moved + " --other-text --no-record").code == 0);
  // --kjv-path stays an alias of --data.
  CHECK(rpb::testing::run_rpb("eval " + run + " --kjv-path " + moved + " --other-text --no-record").code == 0);
  // A resumed run continues on its own data: the corpus back at its path, but with a document more, is refused.
  fs::rename(dir.path / "moved", corpus);
  const rpb::testing::CommandResult resume = rpb::testing::run_rpb("train " + config + " --resume");
  CHECK(resume.code == 1);
  CHECK(contains(resume.out, "a resumed run continues on its own data"));
}

TEST_CASE("text task: a training run's ids go to the token cache once, later runs read them, a link is refused") {
  TempDir dir("text_cache");
  for (int i = 0; i < 40; ++i) write(dir.path / "c" / ("doc" + std::to_string(100 + i) + ".txt"), "Document " + std::to_string(i) + ": some text é.\n");
  data::TaskOptions o = chars_task(dir.path / "c", 0.2);
  const auto memory = data::make_task(o);  // no cache: the ids in memory
  o.token_cache = (dir.path / "cache").string();
  const auto first = data::make_task(o);
  CHECK(contains(first->describe(), "ids written to the token cache"));
  CHECK(first->train_stream() == memory->train_stream());
  CHECK(first->test_stream() == memory->test_stream());
  const std::vector<std::string> entries = [&] {
    std::vector<std::string> e;
    for (const auto& f : fs::directory_iterator(dir.path / "cache")) e.push_back(f.path().filename().string());
    return e;
  }();
  REQUIRE(entries.size() == 1);  // no temporary folder left
  const fs::path entry = dir.path / "cache" / entries[0];
  CHECK(fs::file_size(entry / "train.u16") == 2 * static_cast<std::uintmax_t>(memory->train_stream().size()));
  const auto second = data::make_task(o);
  CHECK(contains(second->describe(), "ids read from the token cache"));
  CHECK(second->valid_stream() == memory->valid_stream());
  // Another setting is another entry.
  data::TaskOptions bytes = o;
  bytes.tokenizer = "bytes";
  CHECK(contains(data::make_task(bytes)->describe(), "ids written to the token cache"));
  // Evaluation never writes one.
  data::TaskOptions eval = o;
  eval.use = data::DataUse::evaluate;
  eval.tokenizer = "chars";
  eval.valid_fraction = 0.25;
  CHECK(!contains(data::make_task(eval)->describe(), "token cache"));
  // A link in the cache's place is refused, never followed (damaged entries: tests/test_token_cache.cpp).
  fs::remove_all(dir.path / "cache");
  fs::create_directory(dir.path / "elsewhere");
  fs::create_directory_symlink(dir.path / "elsewhere", dir.path / "cache");
  CHECK(contains(error_of([&] { data::make_task(o); }), "is a symbolic link, not a folder"));
  CHECK(fs::is_empty(dir.path / "elsewhere"));
}

TEST_CASE("text task: the runs of a sweep share one token cache, whatever their method and seed") {
  TempDir dir("text_sweep_cache");
  for (int i = 0; i < 30; ++i)
    write(dir.path / "c" / ("doc" + std::to_string(100 + i) + ".txt"), "Document number " + std::to_string(i) + ".\n");
  const std::string config = "[run]\nname = \"s\"\nout_dir = \"" + dir.path.string() +
                             "\"\nsteps = 2\nbatch = 2\nlength = 8\neval_multipliers = [1]\neval_tokens = 16\n"
                             "eval_diagnostics = false\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n"
                             "[task]\nkind = \"text\"\npath = \"" + (dir.path / "c").string() +
                             "\"\ntokenizer = \"chars\"\nvalid_fraction = 0.2\ntest_fraction = 0.2\n"
                             "[sweep]\nmethods = [\"t5\", \"alibi\"]\nseeds = [0, 1]\n";
  const SweepResult r = run_sweep(parse_config(config, "sweep.toml"));
  REQUIRE(r.rows.size() == 2);
  std::vector<fs::path> caches;
  for (const auto& e : fs::recursive_directory_iterator(dir.path / "s"))
    if (e.path().filename() == ".token_cache") caches.push_back(e.path());
  REQUIRE(caches.size() == 1);
  CHECK(caches[0] == dir.path / "s" / ".token_cache");
  CHECK(std::distance(fs::directory_iterator(caches[0]), fs::directory_iterator()) == 1);
}

TEST_CASE("text task: a missing KJV text at the kjv task's path is written as the kjv task writes it, not when reading") {
  TempDir dir("text_kjv_missing");
  const fs::path before = fs::current_path();
  const std::string path = ::getenv("PATH") ? ::getenv("PATH") : "";
  fs::create_directories(dir.path / "empty");
  fs::current_path(dir.path);
  ::setenv("PATH", (dir.path / "empty").c_str(), 1);  // no `bible`: the attempt to write the text shows in the error
  data::TaskOptions o;
  o.kind = "text";
  o.path = data::kjv_text_path("");
  const std::string writes = error_of([&] { data::TextTask t(o); });
  o.generate_missing = false;  // rpb eval and rpb generate
  const std::string reads = error_of([&] { data::TextTask t(o); });
  o.path = "elsewhere/kjv.txt";  // another missing path is only missing
  const std::string other = error_of([&] { data::TextTask t(o); });
  ::setenv("PATH", path.c_str(), 1);
  fs::current_path(before);
  CHECK(contains(writes, "`bible` program is not installed"));
  CHECK_FALSE(contains(reads, "bible"));
  CHECK(contains(reads, "checkpoints/data/kjv.txt"));
  CHECK_FALSE(contains(other, "bible"));
}
