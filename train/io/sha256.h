// rpb/train/io/sha256.h: SHA-256 digests (FIPS 180-4) of bytes and of files, as lowercase hex: a run config's
// digest (train/config/run_identity.h) and a checkpoint's in evaluation records (train/run/eval_record.h).
#pragma once

#include <string>
#include <string_view>

namespace rpb {

/// The SHA-256 of `bytes`, 64 lowercase hex digits: sha256_hex("abc") is
/// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string sha256_hex(std::string_view bytes);

/// The SHA-256 of the bytes of the file at `path`, read in blocks; throws rpb::Error naming `path` when it cannot be
/// read. Reads only.
std::string sha256_file(const std::string& path);

/// Whether `text` is a digest as sha256_hex writes it: 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);

}  // namespace rpb
