// rpb/train/io/version.h
#pragma once

namespace rpb {
/// The library version, e.g. "0.1.0".
const char* version();
}  // namespace rpb
