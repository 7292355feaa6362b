// SentencePiece a piece at a time (Tokenizer::encode_pieces, encode_piece_end): the pieces rpb cuts a text into, the
// ids against SentencePiece's own whole-text encoding (the reference), and the memory a large document takes against
// its estimate.
#include <doctest/doctest.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hostile_files.h"
#include "test_util.h"
#include "train/data/kjv.h"
#include "train/data/task.h"
#include "train/data/task_registry.h"
#include "train/data/text.h"
#include "train/data/tokenizer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;

namespace sentencepiece_pieces_test {

// Debian's GPL-3 text (base-files), as in tests/test_text_task.cpp.
std::string gpl_text() {
  std::ifstream in("/usr/share/common-licenses/GPL-3", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The KJV text as the kjv task writes it (Debian's bible-kjv).
std::string kjv_text(const TempDir& dir) {
  const std::string path = dir.file("kjv.txt");
  data::generate_kjv_text(path);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A SentencePiece model of `vocab` pieces trained by rpb on `text` (its first 4000 lines).
std::unique_ptr<data::Tokenizer> trained(const std::string& text, const std::string& type, int64_t vocab) {
  data::TokenizerOptions o;
  o.vocab = vocab;
  o.model_type = type;
  o.max_sentences = 4000;
  o.seed = 3;
  const std::vector<std::string_view> docs = {text};
  const std::vector<int> splits = {0};
  return data::tokenizer_info("sentencepiece").build(data::TokenizerCorpus::of(docs, splits), o);
}

// Where rpb's ids and SentencePiece's whole-text ids of the same text differ: stretches of the text they segment
// differently, each with both segmentations' scores (SentencePiece's own piece scores, summed in double).
struct Difference {
  double rpb = 0, whole = 0;
};

std::vector<Difference> differences(const sentencepiece::SentencePieceProcessor& sp, const data::Tokenizer& t,
                                    const std::vector<int32_t>& ours, const std::vector<int>& whole) {
  std::vector<Difference> out;
  std::size_t i = 0, j = 0, at_i = 0, at_j = 0;
  Difference d;
  bool open = false;
  while (i < ours.size() || j < whole.size()) {
    if (!open && at_i == at_j && i < ours.size() && j < whole.size() && ours[i] == whole[j]) {
      at_i += t.token_bytes(ours[i++]).size();
      at_j = at_i;
      ++j;
      continue;
    }
    open = true;
    if (j >= whole.size() || (i < ours.size() && at_i <= at_j)) {
      d.rpb += sp.GetScore(ours[i]);
      at_i += t.token_bytes(ours[i++]).size();
    } else {
      d.whole += sp.GetScore(whole[j]);
      at_j += t.token_bytes(whole[j++]).size();
    }
    if (at_i == at_j) {
      out.push_back(d);
      d = {};
      open = false;
    }
  }
  return out;
}

// rpb's ids of `text` against SentencePiece's Encode of the whole of it: BPE gives the same ids; unigram the same
// but where SentencePiece's whole-text Viterbi, summing its path score in single precision from the text's start,
// misses the best segmentation: there rpb's (each piece's score summed from 0) scores higher, or ties (equal scores,
// such as "ww"+"w" against "w"+"ww"). Adds the stretches that differ, and those where rpb's scores higher, to
// `counts`.
struct Counts {
  std::size_t differ = 0, better = 0, tokens = 0;
};

void compare_with_whole(const data::Tokenizer& t, const std::string& text, Counts& counts) {
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.LoadFromSerializedProto(t.record().model).ok());
  std::vector<int> whole;
  REQUIRE(sp.Encode(text, &whole).ok());
  std::vector<int32_t> ours;
  std::size_t bytes = 0;
  t.encode_pieces(text, [&](const std::vector<int32_t>& ids, std::size_t n) {
    ours.insert(ours.end(), ids.begin(), ids.end());
    bytes += n;
  });
  CHECK(bytes == text.size());
  CHECK(t.decode(ours) == text);
  for (const Difference& d : differences(sp, t, ours, whole)) {
    CHECK_MESSAGE(d.rpb > d.whole - 1e-3, "rpb ", d.rpb, ", whole text ", d.whole);  // ties aside, never worse
    ++counts.differ;
    counts.better += d.rpb > d.whole + 1e-3;
  }
  counts.tokens += ours.size();
}

}  // namespace sentencepiece_pieces_test

using namespace sentencepiece_pieces_test;

TEST_CASE("sentencepiece pieces: a line is a piece, a long line is cut before a space, a run without one at 64 KiB") {
  const auto ends = [](const std::string& text) {
    std::vector<std::size_t> out;
    for (std::size_t at = 0; at < text.size(); at = out.back()) out.push_back(data::encode_piece_end(text, at));
    return out;
  };
  CHECK(ends("one\ntwo\n\nthree") == std::vector<std::size_t>{4, 8, 9, 14});
  const std::string words = std::string(1000, 'a') + " " + std::string(100, 'b') + " c\n";  // 1104 bytes
  CHECK(ends(words) == std::vector<std::size_t>{1000, 1104});  // before the last space within 1024 bytes
  const std::string run = std::string(70000, 'x') + " y";
  CHECK(ends(run) == std::vector<std::size_t>{65536, 70000, 70002});
  const std::string long_word = " " + std::string(2000, 'z') + " w\n";  // a space at the start cuts nothing
  CHECK(ends(long_word) == std::vector<std::size_t>{2001, 2004});
  std::string wide;  // a run of 3-byte characters: cut at a character boundary
  while (wide.size() < 70000) wide += "\xe4\xb8\xad";
  CHECK(ends(wide) == std::vector<std::size_t>{65535, wide.size()});
  // A piece is a piece of itself: handed over alone, it is not cut again.
  for (const std::string& text : {words, run, long_word, wide, gpl_text()})
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = data::encode_piece_end(text, at);
      REQUIRE(data::encode_piece_end(text.substr(at, end - at), 0) == end - at);
      at = end;
    }
}

TEST_CASE("sentencepiece pieces: the ids are SentencePiece's whole-text ids, where those are the best segmentation") {
  TempDir dir("sp_pieces");
  const std::string kjv = kjv_text(dir);
  std::string long_lines;  // the GPL with a line end every 40 lines: lines of about 2.5 KB, cut before a space
  int n = 0;
  for (char c : gpl_text()) long_lines += c == '\n' && ++n % 40 != 0 ? ' ' : c;
  for (const std::string type : {"bpe", "unigram"}) {
    INFO(type);
    const auto t = trained(kjv, type, 1000);
    // BPE's whole-text encoding takes SentencePiece 9 s for the KJV: its first megabyte here.
    const std::string text = type == "bpe" ? kjv.substr(0, kjv.find('\n', 1 << 20) + 1) : kjv;
    Counts as_one, lines, books;
    compare_with_whole(*t, text, as_one);
    compare_with_whole(*t, long_lines, lines);
    std::vector<int32_t> pieces;  // whole or a piece at a time, the same pieces
    t->encode_pieces(long_lines, [&](const std::vector<int32_t>& ids, std::size_t) {
      pieces.insert(pieces.end(), ids.begin(), ids.end());
    });
    CHECK(t->encode(long_lines) == pieces);
    if (type == "bpe") {  // merges, no sums: the same ids
      CHECK(as_one.differ == 0);
      CHECK(lines.differ == 0);
      continue;
    }
    // The KJV's books, the documents of configs/extrapolation_text.toml: whole, as rpb encoded them before.
    for (const data::TextDocument& book : data::read_documents(dir.file("kjv.txt"), "blank_lines"))
      compare_with_whole(*t, book.text, books);
    MESSAGE("unigram: the KJV as one text (", as_one.tokens, " ids) differs from SentencePiece's whole-text ids in ",
            as_one.differ, " stretches (rpb's higher-scoring in ", as_one.better, "); book by book in ", books.differ,
            " (", books.better, "); the long lines in ", lines.differ);
  }
}

TEST_CASE("sentencepiece pieces: a 4 MB document stays within its memory estimate") {
  TempDir dir("sp_memory");
  const std::string gpl = gpl_text();
  std::string big;
  while (big.size() < (std::size_t{4} << 20)) big += gpl;
  const fs::path corpus = dir.path / "corpus";
  fs::create_directories(corpus);
  { std::ofstream(corpus / "big.txt", std::ios::binary) << big; }  // one document of 4 MB
  for (int i = 0; i < 12; ++i)
    std::ofstream(corpus / ("small" + std::to_string(i) + ".txt")) << "Document " << i << ".\n";
  data::TaskOptions o;
  o.kind = "text";
  o.path = corpus.string();
  o.tokenizer = "sentencepiece";
  o.vocab = 500;
  o.sentencepiece_sentences = 2000;
  o.valid_fraction = 0.3;
  o.test_fraction = 0.3;
  o.token_cache = dir.file("cache");
  const int64_t estimate = data::task_info("text").memory(o, data::DataUse::train).bytes;
  const testing::ChildRun r = testing::in_child([&] { data::make_task(o); }, 60);
  REQUIRE(r.finished);
  CHECK(r.error == "no error");
  INFO("peak growth ", r.memory_growth_kb, " KiB, estimate ", estimate / 1024, " KiB");
  MESSAGE("a 4 MB document: peak growth ", r.memory_growth_kb, " KiB, estimate ", estimate / 1024, " KiB");
  // AddressSanitizer keeps freed memory in quarantine (256 MB), so a sanitized build's peak is not rpb's.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPB_SP_PIECES_ASAN 1
#endif
#endif
#if !defined(__SANITIZE_ADDRESS__) && !defined(RPB_SP_PIECES_ASAN)
  CHECK(r.memory_growth_kb * 1024 <= estimate);
#endif
}
