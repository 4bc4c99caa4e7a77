// Key space of the ring (docs/RING.md, "Hashing" and "Partition index"):
// a (bucket, key) pair hashes to a position on a ring of 2^64 positions, cut
// into Q equal arcs, the partitions. Pure functions: the same input gives the
// same position on every node and in every run, because partition indices
// are persisted (journals and checkpoints live per partition).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/expected.hpp"

namespace tally {

/// Riak Core's default ring size: enough partitions to spread a cluster of a
/// dozen nodes within one partition per node, few enough that a node keeps
/// only a handful of journals open.
constexpr std::uint32_t default_partition_count = 64;

/// The largest ring size Tally accepts: 2^16 partitions already give every
/// node of a 1,000-node cluster 65 partitions, and owner indices stay small.
constexpr std::uint32_t max_partition_count = std::uint32_t{1} << 16;

/// Success when `q` is a power of two in [1, 2^16]; errc::invalid_argument
/// otherwise (0, non-powers, larger sizes), with the offending value in the
/// message.
status check_partition_count(std::uint32_t q);

/// log2(q) for a valid partition count `q` (precondition: check_partition_count).
std::uint32_t partition_bits(std::uint32_t q) noexcept;

/// Position of (bucket, key) on the 2^64 ring: hash_bytes(key, seed =
/// hash_bytes(bucket)). Hashing the bucket on its own and using it as the
/// seed keeps the pair unambiguous: ("ab", "c") and ("a", "bc") differ.
/// Fixed forever: positions decide where stored data lives.
std::uint64_t ring_position(std::string_view bucket, std::string_view key) noexcept;

/// The partition holding `position`: its top log2(q) bits, so partition i
/// covers the arc [i * 2^64/q, (i+1) * 2^64/q). Precondition: `q` is valid
/// (check_partition_count); q == 1 maps everything to partition 0.
std::uint32_t partition_index(std::uint64_t position, std::uint32_t q) noexcept;

/// partition_index(ring_position(bucket, key), q); errc::invalid_argument
/// for an invalid `q`.
expected<std::uint32_t> partition_for(std::string_view bucket,
                                      std::string_view key, std::uint32_t q);

} // namespace tally
