// What a partition's primary ships to its replicas (docs/REPLICATION.md,
// "Log shipping"): one flushed journal batch, the LSN of its first record,
// and what the batch depends on, summarized by the Bloom clock
// (docs/REPLICATION.md, "Dependency check"; replication/dependency_check.hpp).
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

#include <optional>

#include "clock/bloom_clock.hpp"
#include "common/expected.hpp"
#include "common/ids.hpp"
#include "journal/record.hpp"

namespace tally {

/// What a batch starting at LSN `first` depends on: every record below
/// `first`. A commit is a Bloom clock event (seed 002, section 3,
/// Algorithm 1: the primary ticks its clock at each commit and writes the
/// result into the commit record), so the batch's dependency is the last
/// commit record y before `first`, with B_y, its Bloom timestamp: the
/// primary's Bloom clock after the record at first - 1.
struct batch_dependency {
  /// B_y; the zero clock when the journal holds no commit before `first`
  /// and never folded any (the clock of Algorithm 1, line 1).
  bloom_clock clock;
  /// y's LSN and transaction, to tell exactly whether a copy holds y (only
  /// the counters' classification of a refused positive needs it); 0 when
  /// there is no commit before `first`, or it is folded away on the
  /// primary and its LSN is not known.
  lsn commit_at = 0;
  tx_id commit_tx;
};

/// The dependency at LSN `at` of a stretch of journal: `base` is the
/// dependency at `first`, and the commits among `records` below `at`
/// (records[i] is at LSN first + i) move it on. nullopt when `at` is not in
/// [first, first + records.size()] or a commit's Bloom timestamp cannot be
/// decoded. A commit record without a timestamp ticks nothing.
std::optional<batch_dependency> dependency_within(const batch_dependency& base, lsn first,
                                                  const std::vector<journal_record>& records,
                                                  lsn at);

struct replication_batch {
  lsn first = 0;                        // LSN of records[0]
  std::vector<journal_record> records;  // consecutive LSNs from `first`
  /// What the batch depends on (everything below `first`); nullopt when the
  /// sender does not know it (the commit before `first` is folded into its
  /// checkpoint, or a sender of version 1): the copy then checks exactly only.
  std::optional<batch_dependency> deps;

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
/// its length (u32 big-endian) and its journal frame (encode_record); then
/// (version 2) the dependency: a byte 0 (none) or 1 followed by the commit's
/// LSN, transaction origin and sequence (u64 big-endian each), the Bloom
/// clock's length (u32 big-endian) and bytes (bloom_clock::encode).
/// Version 1 (no dependency) is still read.
constexpr std::uint8_t replication_batch_version = 2;
std::string encode_batch(const replication_batch& b);

/// errc::corrupt for anything encode_batch() cannot have written: a bad
/// frame or checksum, a count above max_batch_records or above what the
/// bytes can hold, a bad record, a bad dependency or Bloom clock, trailing
/// bytes, LSN overflow. Never throws.
expected<replication_batch> decode_batch(std::string_view bytes);

} // namespace tally
