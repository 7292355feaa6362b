// rpb/train/checkpoint/crc32.h: the CRC-32 that checkpoints store beside every dataset.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rpb {

/// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib and PNG): crc32_ieee("123456789", 9) == 0xCBF43926.
/// Pass a previous result as `crc` to continue over more bytes.
uint32_t crc32_ieee(const void* data, std::size_t bytes, uint32_t crc = 0);

}  // namespace rpb
