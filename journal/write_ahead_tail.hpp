// The byte layout of a partition replica's write-ahead tail (`tail.log`,
// docs/FORMAT.md, "Write-ahead tail"; docs/STORAGE.md, "The write-ahead
// tail"): the journal's newest records, written there at append time and
// moved into LMDB in bulk later. Pure functions: no I/O, any thread.
//
//   tail  := entry* zero*
//   entry := lsn:u64be record_frame
//
// The zero bytes after the entries are room written ahead
// (lmdb_env::preallocate_tail); the next entry overwrites them.
//
// record_frame is exactly the bytes the journal stores under the LSN in
// LMDB (codec.hpp: version, length, CRC-32C, payload), so an entry is
// checked by the same CRC. LSNs rise by one from entry to entry.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "journal/record.hpp"

namespace tally {

/// Appends the entry of the record at `at` (its frame: encode_record's
/// bytes) to `out`.
void append_tail_entry(std::string& out, lsn at, std::string_view record_frame);

/// What a tail file holds.
struct parsed_tail {
  /// The records of the valid prefix, in order; their LSNs rise by one.
  std::vector<std::pair<lsn, journal_record>> records;
  /// Bytes of that prefix; the rest (a write a crash tore, or bytes of an
  /// earlier file a power loss brought back after a reset) is ignored.
  std::size_t valid_bytes = 0;
  /// Why parsing stopped before the end ("" when it read every byte).
  std::string stop_reason;
};

/// Parses a tail file's bytes up to the first entry that is cut short,
/// fails its CRC or decoding, or breaks the LSN sequence, or up to zeros
/// that run to the end (a clean end: stop_reason ""). Never fails:
/// what follows such an entry was never acknowledged (docs/STORAGE.md).
parsed_tail parse_tail(std::string_view bytes);

} // namespace tally
