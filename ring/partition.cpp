#include "ring/partition.hpp"

#include <string>

#include "common/hash.hpp"

namespace tally {

status check_partition_count(std::uint32_t q) {
  if (q == 0 || (q & (q - 1)) != 0 || q > max_partition_count)
    return make_error(errc::invalid_argument,
                      "ring size " + std::to_string(q)
                        + " is not a power of two between 1 and 65536.");
  return {};
}

std::uint32_t partition_bits(std::uint32_t q) noexcept {
  std::uint32_t bits = 0;
  while ((std::uint32_t{1} << bits) < q)
    ++bits;
  return bits;
}

std::uint64_t ring_position(std::string_view bucket,
                            std::string_view key) noexcept {
  return hash_bytes(key, hash_bytes(bucket));
}

std::uint32_t partition_index(std::uint64_t position, std::uint32_t q) noexcept {
  const auto bits = partition_bits(q);
  if (bits == 0)
    return 0; // a shift by 64 would be undefined
  return static_cast<std::uint32_t>(position >> (64 - bits));
}

expected<std::uint32_t> partition_for(std::string_view bucket,
                                      std::string_view key, std::uint32_t q) {
  if (auto st = check_partition_count(q); !st)
    return st.err();
  return partition_index(ring_position(bucket, key), q);
}

} // namespace tally
