// tests/fuzz/fuzz_checkpoint.cpp: libFuzzer target for the HDF5 checkpoint reader (train/checkpoint/checkpoint.h)
// and what `rpb inspect` does with a checkpoint that loads (the stored config, the parameters
// against the model it describes, the bias tables).
//
// The first input byte chooses the mode:
//   'L'   links and storage: the rest chooses hostile edits of a valid template checkpoint (soft,
//         external and hard links, contiguous / compact / chunked / external / virtual datasets with
//         declared sizes, string and step attributes), made with the HDF5 C API (checkpoint_edits.h);
//   'C'   the stored config: a valid checkpoint whose `config` attribute is the rest of the input;
//   'T'   a text run's tokenizer (data/tokenizer.h): a valid checkpoint whose /data names tokenizer data[1] (mod the
//         registry's count) with the rest of the input as its model; what loads also encodes and decodes a text;
//   'S'   the rest of the input straight to the reader of stored SentencePiece models (data/sentencepiece_model.h),
//         no checkpoint: what it accepts, SentencePiece must load, and the tokenizer encode and decode a text
//         (SentencePiece is Debian's, not instrumented: libFuzzer's coverage is of rpb's reader);
//   'K'   a text run's token cache entry (data/token_cache.h): a valid entry (a chars tokenizer and three splits)
//         whose file data[1] (mod 5: manifest.json, tokenizer, train.u16, valid.u16, test.u16) is the rest of the
//         input; the lookup must find the entry sound or say why not, and a sound entry's ids lie in its vocabulary;
//   'N'   numbers: a valid checkpoint (CRCs right, as anyone editing a file would leave them) whose parameter
//         number data[1] (mod their count) has its first values replaced by the rest of the input's bytes
//         (float32 NaN, inf, huge values): `inspect` must list the non-finite ones, not fail;
//   other raw bytes: the whole input is the file (the committed HDF5 seeds start with "\x89HDF").
// The reader takes a path, so each file is written on tmpfs (/dev/shm, else /tmp) and loaded from
// there. The only acceptable outcome besides success is rpb::Error; any other exception, a crash, a
// sanitizer report, a hang (an external link to the FIFO the 'L' mode offers), an HDF5 handle left
// open or HDF5 printing its error stack (its "HDF5-DIAG" dump) is a finding. libhdf5 itself is
// Debian's, not instrumented: ASan sees its reads and writes only through what it hands back to rpb,
// and its leaks are suppressed.
// Build: CC=clang-14 CXX=clang++-14 cmake -B build-fuzz -DRPB_FUZZ=ON && cmake --build build-fuzz
// Run:   build-fuzz/fuzz_checkpoint -max_total_time=60 /tmp/new tests/fuzz/corpus/checkpoint
// RPB_FUZZ_VERBOSE=1 prints the rpb::Error of each input (build-fuzz/fuzz_checkpoint <files> replays them).
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "checkpoint_edits.h"
#include "cli/inspect.h"
#include "core/error.h"
#include "train/checkpoint/checkpoint.h"
#include "train/data/sentencepiece_model.h"
#include "train/data/token_cache.h"
#include "train/data/tokenizer.h"

namespace {

/// The folder of this process's files: the input, the template checkpoint and a FIFO.
const std::string& work_dir() {
  static const std::string dir = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                 "/rpb_fuzz_checkpoint_" + std::to_string(::getpid());
  return dir;
}
std::string input_path() { return work_dir() + "/input.h5"; }

// What the 'L' and 'C' modes start from: the committed seed of a two-step AdamW run (make_corpus.sh).
rpb::Checkpoint template_checkpoint;
fuzz::Targets targets;
fuzz::Objects objects;

void make_template() {
  template_checkpoint = rpb::load_checkpoint(RPB_SOURCE_DIR "/tests/fuzz/corpus/checkpoint/tiny_adamw.h5");
  const rpb::Checkpoint& c = template_checkpoint;
  targets = {work_dir() + "/template.h5", work_dir() + "/fifo", work_dir() + "/missing.h5", input_path()};
  rpb::save_checkpoint(targets.template_file, c);
  // Fixed indices first (the seeds of make_corpus.sh use them): 0-6 the groups, 7 /rng/sampler, 8-12 the
  // metrics columns, 13 on the parameters, then the buffers and the optimizer's tensors.
  objects = {"/params", "/buffers", "/optim", "/optim/exp_avg", "/rng", "/state", "/metrics", "/rng/sampler"};
  for (const char* column : {"step", "loss", "lr", "grad_norm", "tokens_per_sec"})
    objects.push_back(std::string("/metrics/") + column);
  for (const auto& [name, t] : c.params) objects.push_back("/params/" + name);
  for (const auto& [name, t] : c.buffers) objects.push_back("/buffers/" + name);
  for (const auto& [name, t] : c.optim.tensors) objects.push_back("/optim/" + name);
}

// HDF5 calls this where it would print its error stack: the reader must have silenced it.
herr_t hdf5_would_print(hid_t stack, void*) {
  std::fprintf(stderr, "fuzz_checkpoint: HDF5 printed its diagnostics:\n");
  H5Eprint2(stack, stderr);
  std::abort();
}

void write_input(const uint8_t* data, std::size_t size) {
  FILE* f = std::fopen(input_path().c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(input_path().c_str());
    std::abort();
  }
}

// 'L': the template, edited as the input says. HDF5 refusing an edit is part of the game, so its
// error printing is off while editing.
void write_edited(const uint8_t* data, std::size_t size) {
  std::filesystem::copy_file(targets.template_file, input_path(), std::filesystem::copy_options::overwrite_existing);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const hid_t file = H5Fopen(input_path().c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (file < 0) std::abort();
  fuzz::Bytes in{data, size};
  for (int i = 0; i < 8 && !in.empty(); ++i) fuzz::apply_edit(file, in, targets, objects);
  if (H5Fclose(file) < 0) std::abort();
  H5Eset_auto2(H5E_DEFAULT, hdf5_would_print, nullptr);
}

// What the 'K' mode starts from: a token cache entry written at start-up, its files' names and bytes.
const char* const kCacheInputs = "fuzz: the inputs of a token cache entry\n";
std::vector<std::pair<std::string, std::string>> cache_files;

std::string cache_dir() { return work_dir() + "/cache"; }

void make_cache_template() {
  const auto chars = rpb::data::load_tokenizer({"chars", "\n .abcdefghijklmnopqrstuvwxyz"}, "fuzz");
  rpb::data::TokenCacheWriter writer(cache_dir(), kCacheInputs, *chars);
  for (int split = 0; split < 3; ++split) writer.append(split, chars->encode("in the beginning.\n"));
  writer.publish();
  const std::string entry = cache_dir() + "/" + rpb::data::token_cache_key(kCacheInputs);
  for (const char* name : {"manifest.json", "tokenizer", "train.u16", "valid.u16", "test.u16"}) {
    std::ifstream in(entry + "/" + name, std::ios::binary);
    cache_files.emplace_back(entry + "/" + name, std::string(std::istreambuf_iterator<char>(in), {}));
  }
}

// 'K': the template entry with one file replaced by `bytes`, looked up.
void look_up_edited_entry(uint8_t which, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(cache_files[0].first).parent_path());
  for (std::size_t i = 0; i < cache_files.size(); ++i) {
    std::ofstream out(cache_files[i].first, std::ios::binary | std::ios::trunc);
    out << (i == which % cache_files.size() ? bytes : cache_files[i].second);
  }
  try {
    const rpb::data::TokenCacheLookup found = rpb::data::open_token_cache(cache_dir(), kCacheInputs, 1 << 20);
    if (!found.entry) return;
    for (const rpb::data::TokenStream& s : found.entry->streams)
      for (int64_t i = 0; i < s.size(); ++i)
        if (s[i] < 0 || s[i] >= found.entry->tokenizer->vocab()) std::abort();  // a sound entry's ids are in range
  } catch (const rpb::Error&) {
  }
}

// A tokenizer a stored model loaded: it encodes a text and gives it back, or throws rpb::Error.
void encode_and_decode(const rpb::data::TokenizerRecord& record) {
  try {
    const auto t = rpb::data::load_tokenizer(record, "fuzz");
    const std::string text = "In the beginning God created the heaven and the earth.\n\xc3\xa9";
    std::vector<int32_t> ids;
    t->encode(text, ids);
    if (t->decode(ids) != text) std::abort();  // what a tokenizer encodes, it gives back
  } catch (const rpb::Error&) {
  }
}

}  // namespace

// libhdf5 1.10 leaks a few hundred bytes when a damaged file fails to open (a bare H5Fopen +
// H5Gopen2 + H5Fclose on such a file leaks the same way); rpb's own leaks are still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5_serial.so\n"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5open();
  std::filesystem::create_directories(work_dir());
  std::atexit([] { std::filesystem::remove_all(work_dir()); });
  if (::mkfifo((work_dir() + "/fifo").c_str(), 0600) != 0) std::abort();
  make_template();
  make_cache_template();
  H5Eset_auto2(H5E_DEFAULT, hdf5_would_print, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char mode = size > 0 ? static_cast<char>(data[0]) : 0;
  if (mode == 'L') {
    write_edited(data + 1, size - 1);
  } else if (mode == 'N' && size > 1) {
    rpb::Checkpoint c = template_checkpoint;
    rpb::Tensor& t = c.params[data[1] % c.params.size()].second;
    t = t.clone();  // the template's own tensor stays as it is
    const std::size_t room = static_cast<std::size_t>(t.numel()) * rpb::dtype_size(t.dtype());
    std::memcpy(t.raw_mutable_data(), data + 2, std::min(room, size - 2));
    rpb::save_checkpoint(input_path(), c);
  } else if (mode == 'T' && size > 1) {
    rpb::Checkpoint c = template_checkpoint;
    const std::vector<std::string> names = rpb::data::tokenizer_names();
    c.data.text_sha256 = std::string(64, 'a');
    c.data.tokenizer = {names[data[1] % names.size()], std::string(data + 2, data + size)};
    rpb::save_checkpoint(input_path(), c);
    encode_and_decode(c.data.tokenizer);
  } else if (mode == 'S') {
    const std::string model(data + 1, data + size);
    try {
      rpb::data::check_sentencepiece_model(model, "fuzz");
    } catch (const rpb::Error&) {
      return 0;
    }
    encode_and_decode({"sentencepiece", model});  // accepted: SentencePiece loads it without a crash
    return 0;
  } else if (mode == 'K' && size > 1) {
    look_up_edited_entry(data[1], std::string(data + 2, data + size));
    return 0;
  } else if (mode == 'C') {
    rpb::Checkpoint c = template_checkpoint;
    c.config_text.assign(reinterpret_cast<const char*>(data + 1), size - 1);
    rpb::save_checkpoint(input_path(), c);
  } else {
    write_input(data, size);
  }
  try {
    std::ostringstream report;
    rpb::inspect_checkpoint(input_path(), report);
  } catch (const rpb::Error& e) {
    if (std::getenv("RPB_FUZZ_VERBOSE")) std::fprintf(stderr, "fuzz_checkpoint: %s\n", e.what());
  }
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) {
    std::fprintf(stderr, "fuzz_checkpoint: %zd HDF5 objects left open\n", open);
    std::abort();
  }
  return 0;
}
