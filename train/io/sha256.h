// rpb/train/io/sha256.h: SHA-256 digests (FIPS 180-4) of bytes and of files, as lowercase hex: a run config's
// digest (train/config/run_identity.h) and a checkpoint's in evaluation records (train/run/eval_record.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rpb {

/// A SHA-256 computed as its bytes come: update() any number of times, then hex() once.
class Sha256 {
 public:
  void update(const void* data, std::size_t n);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  /// The digest of the bytes given, 64 lowercase hex digits; the object is spent.
  std::string hex();

 private:
  void compress();

  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t used_ = 0;
  uint64_t total_ = 0;
};

/// The SHA-256 of `bytes`, 64 lowercase hex digits: sha256_hex("abc") is
/// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".
std::string sha256_hex(std::string_view bytes);

/// The SHA-256 of the bytes of the file at `path`, read in blocks; throws rpb::Error naming `path` when it cannot be
/// read. Reads only.
std::string sha256_file(const std::string& path);

/// Whether `text` is a digest as sha256_hex writes it: 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);

}  // namespace rpb
