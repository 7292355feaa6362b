#include "train/checkpoint/data_identity.h"
#include "train/data/kjv.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/text.h"

namespace rpb {

namespace {

// A character of a vocabulary for messages: "q", "\n" (escaped), or "none" past its end.
std::string char_at(const std::string& vocab, std::size_t id) {
  return id < vocab.size() ? "\"" + printable(vocab.substr(id, 1)) + "\"" : "none";
}

// "id 37 is "q" in the checkpoint and "x" in the text" (with the sizes when they differ).
std::string first_difference(const std::string& trained, const std::string& given) {
  const std::size_t n = std::min(trained.size(), given.size());
  std::size_t id = 0;
  while (id < n && trained[id] == given[id]) ++id;
  std::string what = "character id " + std::to_string(id) + " is " + char_at(trained, id) + " in the checkpoint and " +
                     char_at(given, id) + " in the text";
  if (trained.size() != given.size())
    what += " (the checkpoint has " + std::to_string(trained.size()) + " characters, the text " +
            std::to_string(given.size()) + ")";
  return what;
}

}  // namespace

const char* text_match_name(TextMatch match) {
  switch (match) {
    case TextMatch::generated: return "generated";
    case TextMatch::same: return "training";
    case TextMatch::other: return "other";
    case TextMatch::unverified: return "unverified";
  }
  return "?";
}

DataIdentity data_identity(const data::Task& of) {
  const data::Task& task = of.data_source();
  if (const auto* text = dynamic_cast<const data::TextTask*>(&task))
    return {"", text->text_sha256(), text->tokenizer()->record(), text->path(), text->path_key()};
  const auto* kjv = dynamic_cast<const data::KjvTask*>(&task);
  if (!kjv) return {};
  return {kjv->chars(), kjv->text_sha256(), {}, kjv->path(), ""};
}

DataVerdict check_data_identity(const DataIdentity& trained, const DataIdentity& given, const std::string& file,
                                bool other_text, const std::string& op) {
  DataVerdict v;
  if (given.empty()) return v;  // a generated task
  if (trained.empty()) {
    v.match = TextMatch::unverified;
    v.note = "the text could not be verified: " + printable(file) +
             " was written before rpb recorded its training text (only the vocabulary size was checked)";
    spdlog::warn("{}: {}", op, v.note);
    return v;
  }
  const std::string not_it = op + ": the " + (given.tokenizer.empty() ? "kjv text " : "corpus ") +
                             printable(given.path) + (given.path_key.empty() ? "" : " (" + given.path_key + ")") +
                             " is not the one " + printable(file) + " was trained on: ";
  if (trained.tokenizer.kind != given.tokenizer.kind)  // a kjv checkpoint given to a text task's config, or back
    throw UsageError(not_it + "it was tokenized " +
                     (trained.tokenizer.empty() ? "as kjv characters" : "by " + trained.tokenizer.kind) + ", the text " +
                     (given.tokenizer.empty() ? "as kjv characters" : "by " + given.tokenizer.kind));
  if (trained.vocab != given.vocab)
    throw UsageError(not_it + first_difference(trained.vocab, given.vocab) +
                     "; pass the text it was trained on with --data (another text must have the same characters, "
                     "even with --other-text)");
  if (trained.text_sha256 == given.text_sha256) {
    v.match = TextMatch::same;
    v.note = "the training text";
    return v;
  }
  if (!other_text)
    throw UsageError(not_it + "its sha256 is " + given.text_sha256 + ", the training text's " + trained.text_sha256 +
                     " (the same tokens); pass the training text with --data, or --other-text to " + op +
                     " on this one");
  v.match = TextMatch::other;
  v.note = "another text than the training text (sha256 " + given.text_sha256 + ", training text " +
           trained.text_sha256 + "; --other-text)";
  spdlog::warn("{}: {}", op, v.note);
  return v;
}

void check_resumed_data(const DataIdentity& trained, const DataIdentity& given, const std::string& file) {
  if (trained.empty() || given.empty()) return;
  const bool same_tokens = trained.vocab == given.vocab && trained.tokenizer.kind == given.tokenizer.kind &&
                           trained.tokenizer.model == given.tokenizer.model;
  RPB_CHECK(trained.text_sha256 == given.text_sha256 && same_tokens, "train", file, " was trained on the text of sha256 ",
            trained.text_sha256, ", and ", printable(given.path), " holds ",
            trained.text_sha256 == given.text_sha256 ? "the same text with another tokenizer"
                                                     : "the text of sha256 " + given.text_sha256,
            ": a resumed run continues on its own data (train a new run on this text)");
}

}  // namespace rpb
