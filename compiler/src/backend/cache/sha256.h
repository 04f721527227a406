// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits. The
// code cache records it when it builds an object and checks it before it
// loads one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tc::detail::cache {

std::string sha256_hex(std::string_view bytes);

}  // namespace tc::detail::cache
