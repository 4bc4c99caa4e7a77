// What a partition's primary ships to its replicas (docs/REPLICATION.md,
// "Log shipping"): one flushed journal batch and the LSN of its first record.
//
// Rule: a replica's journal is a prefix of its primary's, record for record
// and LSN for LSN. A replica appends a batch only when it starts at the end
// of its own journal (partition_core::apply_replicated); a replica that is
// behind is sent what it misses first (partition_core::records_from).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.hpp"
#include "journal/record.hpp"

namespace tally {

struct replication_batch {
  lsn first = 0;                        // LSN of records[0]
  std::vector<journal_record> records;  // consecutive LSNs from `first`

  /// One past the last LSN: a replica that applied the batch has every
  /// LSN below it.
  lsn end() const noexcept { return first + records.size(); }
  bool empty() const noexcept { return records.empty(); }
};

/// Most records one encoded batch may say it holds: a decoder never
/// reserves more (a flush batch is far smaller; catch-up sends slices).
constexpr std::uint32_t max_batch_records = 1u << 20;

/// The batch as bytes for a node link: a frame (journal/codec.hpp) of
/// version replication_batch_version whose payload is the first LSN
/// (u64 big-endian), the record count (u32 big-endian) and each record as
/// its length (u32 big-endian) and its journal frame (encode_record).
constexpr std::uint8_t replication_batch_version = 1;
std::string encode_batch(const replication_batch& b);

/// errc::corrupt for anything encode_batch() cannot have written: a bad
/// frame or checksum, a count above max_batch_records or above what the
/// bytes can hold, a bad record, trailing bytes, LSN overflow. Never throws.
expected<replication_batch> decode_batch(std::string_view bytes);

} // namespace tally
