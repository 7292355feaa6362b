// rpb/train/checkpoint/data_identity.h: telling a checkpoint's training data from other data.
//
// A run's config fixes its data except for the kjv task's text, a file the user passes (task.kjv_path,
// --kjv-path): markov, lag and grid2d generate every token from the config and its seeds, so their identity is the
// config (train/config/run_identity.h) and nothing more is recorded. A kjv checkpoint records its text's vocabulary (the
// characters in id order) and the text's digest (data::KjvTask::text_sha256) in /data (train/checkpoint/checkpoint.h);
// `rpb eval` and `rpb generate` compare the text they are given with it.
#pragma once

#include <string>

#include "train/checkpoint/checkpoint.h"
#include "train/data/task.h"
#include "train/data/text.h"

namespace rpb {

/// The identity of the data of `task` (of its data_source(): a passkey task's filler) as a checkpoint records it:
/// kjv's characters and text digest, or a text's digest and tokenizer; empty for generated data.
DataIdentity data_identity(const data::Task& task);

/// How the text an evaluation or a generation reads relates to the checkpoint's training text.
enum class TextMatch {
  generated,   // a generated task: the config fixes the data
  same,        // the training text (same characters and digest)
  other,       // another text with the same characters, accepted with --other-text
  unverified,  // a kjv checkpoint written before rpb recorded its text: only the vocabulary size was checked
};

/// "generated", "training", "other", "unverified": the names eval records use (train/run/eval_record.h).
const char* text_match_name(TextMatch match);

/// What check_data_identity found.
struct DataVerdict {
  TextMatch match = TextMatch::generated;
  /// One sentence for logs and records: "the training text", "another text than the training text (sha256 ...,
  /// --other-text)", "the text could not be verified: ...". "" for a generated task.
  std::string note;
};

/// Compares the data `given` (the task just built, read from given.path) with what checkpoint `file` recorded
/// (`trained`). Throws rpb::UsageError (the CLI exits 2) starting "<op>: the kjv text <given.path> is not the one
/// <file> was trained on" when the characters differ (naming the first id that differs, the checkpoint's character
/// and the text's), always: ids would mean other characters; and when only the digests differ (naming both) unless
/// `other_text` (--other-text) says another text is intended. A checkpoint without a record (written before rpb kept
/// one) passes as TextMatch::unverified: the vocabulary size is checked where the parameters are loaded. Another or
/// an unverified text is logged as a warning ("<op>: <note>").
DataVerdict check_data_identity(const DataIdentity& trained, const DataIdentity& given, const std::string& file,
                                bool other_text, const std::string& op);

/// Refuses to resume from checkpoint `file` (trained on `trained`) on other data (`given`, the task just built): a
/// text with another digest, or another tokenizer (ids that would mean other text). Checkpoints that record no data
/// (generated tasks, older files) pass.
void check_resumed_data(const DataIdentity& trained, const DataIdentity& given, const std::string& file);

}  // namespace rpb
