// rpb/train/data/task_options.h: the options of every token task ([task] in a run config), which make_task
// (train/data/task.h) builds a task from: a TaskOptions value fixes every stream bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace rpb::data {

struct TokenizerRecord;

/// What a command builds of a task's data (TaskOptions::use), and so what the memory estimate counts.
enum class DataUse {
  train,     // the train, valid and test splits
  evaluate,  // the test split
  generate   // only what gives the vocabulary (a text), no stream
};

/// What `make_task` builds ([task] in a run config).
struct TaskOptions {
  std::string kind = "markov";  // a registered task's name (task_names(); its row: find_task in task_registry.h)
  int64_t vocab = 16;           // markov, lag: number of token ids (kjv: set by the text)
  int64_t order = 2;            // markov: k-gram context
  double concentration = 0.5;   // markov: Dirichlet concentration of each row's next-token distribution (smaller: lower entropy)
  int64_t lag = 8;              // lag: the token `lag` positions back is copied
  double noise = 0.1;           // lag: probability of a fresh uniform token instead of the copy
  uint64_t seed = 0;            // the source's own parameters (the Markov table) and its streams
  int64_t train_tokens = 1 << 20;  // markov, lag: length of the train stream (kjv: the whole train split)
  int64_t eval_tokens = 1 << 16;   // markov, lag: length of the valid and test streams (kjv: whole splits)
  int64_t passkey_digits = 5;       // passkey: K, the key's digits
  int64_t passkey_samples = 100;    // passkey: held-out samples per tenth of depth at every evaluation length
  int64_t alphabet = 0;             // algorithmic tasks with a free alphabet: its symbols; 0: the task's reference size
  int64_t min_length = 0;           // algorithmic tasks: the shortest training length L (each batch draws L uniformly
                                    // from [min_length, run.length]); 0: the task's shortest
  int64_t eval_samples = 512;       // algorithmic tasks: held-out samples at every evaluation length (Delétang et
                                    // al.'s range evaluation: 8 batches of 64)
  std::string kjv_path = "";       // kjv: cached text file; empty = checkpoints/data/kjv.txt (relative to the working dir)
  /// kjv: write the text to kjv_path when it is missing. Not a config key: `rpb eval` turns it off, as reading
  /// a checkpoint must not write files.
  bool generate_missing = true;
  std::string path = "";             // text: a UTF-8 file, or a folder of them (task.path)
  /// text: what messages call `path`: "task.path", or what the user gave instead ("eval --data"). Not a config key.
  std::string path_key = "task.path";
  std::string documents = "files";   // text: each file one document, or "blank_lines": each paragraph (task.documents)
  double valid_fraction = 0.05;      // text: the share of documents in valid and test, by content (split_of_document)
  double test_fraction = 0.05;
  std::string tokenizer = "bytes";   // text: a registered tokenizer (train/data/tokenizer.h; task.tokenizer)
  std::string sentencepiece_model = "unigram";  // text with sentencepiece: "unigram" or "bpe"; its size is task.vocab
  int64_t sentencepiece_sentences = 200000;     // text with sentencepiece: the most train lines it samples
  /// text: the tokenizer to use instead of building one from the corpus (a checkpoint's, for rpb eval). Not a config
  /// key.
  std::shared_ptr<const TokenizerRecord> stored_tokenizer;
  /// text: the folder of the token cache (train/data/token_cache.h) when a run trains: <run.out_dir>/.token_cache,
  /// or a sweep's <out_dir>/<name>/.token_cache for all its runs (run_config); "": none (the ids in memory). Not a
  /// config key.
  std::string token_cache;
  /// text: the seconds between the log lines of a pass over the corpus that lasts (train/data/corpus.h). Not a config
  /// key.
  double progress_every_s = 10;
  /// markov, lag: the train and valid streams are built for DataUse::train only (the test stream always is). Not a
  /// config key: `rpb eval` reads only the test split (DataUse::evaluate), so a large task.train_tokens costs it
  /// nothing; a stream not built is empty, and describe() still names its configured size. kjv builds every split
  /// (its text is bounded).
  DataUse use = DataUse::train;
  /// The model's attention (model.causal), which picks an algorithmic task's framing (train/data/algorithmic.h). Not
  /// a config key of [task]: set from [model] (workload_task_options).
  bool causal = true;
};

}  // namespace rpb::data
