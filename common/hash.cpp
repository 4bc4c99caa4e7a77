#include "common/hash.hpp"

#include <cstring>

namespace tally {

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) noexcept {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const auto len = bytes.size();
  std::uint64_t h = seed ^ (static_cast<std::uint64_t>(len) * m);
  const char* p = bytes.data();
  const char* end = p + (len & ~std::size_t{7});
  for (; p != end; p += 8) {
    std::uint64_t k;
    std::memcpy(&k, p, 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const auto* tail = reinterpret_cast<const unsigned char*>(p);
  switch (len & 7) {
    case 7: h ^= std::uint64_t{tail[6]} << 48; [[fallthrough]];
    case 6: h ^= std::uint64_t{tail[5]} << 40; [[fallthrough]];
    case 5: h ^= std::uint64_t{tail[4]} << 32; [[fallthrough]];
    case 4: h ^= std::uint64_t{tail[3]} << 24; [[fallthrough]];
    case 3: h ^= std::uint64_t{tail[2]} << 16; [[fallthrough]];
    case 2: h ^= std::uint64_t{tail[1]} << 8; [[fallthrough]];
    case 1:
      h ^= std::uint64_t{tail[0]};
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

} // namespace tally
