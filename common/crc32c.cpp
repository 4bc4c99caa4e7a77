#include "common/crc32c.hpp"

#include <array>
#include <cstring>

namespace tally {

namespace {

// Reflected Castagnoli polynomial: bit i of the register holds x^(31-i).
constexpr std::uint32_t poly = 0x82F63B78u;

// Slicing-by-8 (Kounavis and Berry, "A Systematic Approach to Building High
// Performance Software-based CRC Generators", 2005): table[0] is the classic
// byte-at-a-time table; table[k][b] is the CRC of byte b followed by k zero
// bytes, so eight input bytes are folded with eight lookups per step.
using tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr tables make_tables() {
  tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1u) ? (crc >> 1) ^ poly : crc >> 1;
    t[0][b] = crc;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b)
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}

constexpr tables table = make_tables();

inline std::uint32_t load_le32(const unsigned char* p) noexcept {
  return static_cast<std::uint32_t>(p[0])
         | static_cast<std::uint32_t>(p[1]) << 8
         | static_cast<std::uint32_t>(p[2]) << 16
         | static_cast<std::uint32_t>(p[3]) << 24;
}

} // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data,
                            std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint32_t lo = c ^ load_le32(p);
    std::uint32_t hi = load_le32(p + 4);
    c = table[7][lo & 0xffu] ^ table[6][(lo >> 8) & 0xffu]
        ^ table[5][(lo >> 16) & 0xffu] ^ table[4][lo >> 24]
        ^ table[3][hi & 0xffu] ^ table[2][(hi >> 8) & 0xffu]
        ^ table[1][(hi >> 16) & 0xffu] ^ table[0][hi >> 24];
  }
  for (; n > 0; --n, ++p)
    c = (c >> 8) ^ table[0][(c ^ *p) & 0xffu];
  return ~c;
}

} // namespace tally
