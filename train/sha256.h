// rpb/train/sha256.h: SHA-256 (FIPS 180-4), for the digest of a run's config (train/run_identity.h).
#pragma once

#include <string>
#include <string_view>

namespace rpb {

/// The SHA-256 digest of `bytes` as 64 lowercase hex digits
/// (sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad").
std::string sha256_hex(std::string_view bytes);

}  // namespace rpb
