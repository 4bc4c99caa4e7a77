// Non-cryptographic 64-bit hashing shared by the Bloom filters, the Bloom
// clock and the ring. Pure functions; the same input gives the same output on
// every node and every run (ring positions and filter bits depend on it).
#pragma once

#include <cstdint>
#include <string_view>

namespace tally {

/// SplitMix64 finalizer: a bijective 64-bit mixer (Steele, Lea, Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// MurmurHash64A (Austin Appleby, public-domain algorithm) of a byte string.
std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0) noexcept;

/// Hash of an ordered pair of 64-bit words, e.g. an operation id
/// <client id, sequence number>. Cheaper than hashing their bytes.
constexpr std::uint64_t hash_pair(std::uint64_t a, std::uint64_t b,
                                  std::uint64_t seed = 0) noexcept {
  return mix64(mix64(a ^ seed) + 0x9e3779b97f4a7c15ULL * (b + 1));
}

/// Two independent-looking 64-bit hashes of one element, for double hashing
/// g_i(x) = h1 + i*h2 (Kirsch and Mitzenmacher, "Less hashing, same
/// performance", 2006). h2 is odd so that it never degenerates to 0.
struct hash128 {
  std::uint64_t h1;
  std::uint64_t h2;
};

constexpr hash128 split_hash(std::uint64_t h) noexcept {
  return {h, mix64(h ^ 0x5851f42d4c957f2dULL) | 1ULL};
}

/// Maps a uniformly distributed 64-bit value onto [0, n) without a division
/// (Lemire, "fast alternative to the modulo reduction").
inline std::uint64_t reduce(std::uint64_t x, std::uint64_t n) noexcept {
  __extension__ using u128 = unsigned __int128; // GCC/Clang; -Wpedantic-clean
  return static_cast<std::uint64_t>((static_cast<u128>(x) * n) >> 64);
}

} // namespace tally
