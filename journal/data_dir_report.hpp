// An offline look at a tallyd data directory (`tally inspect`, issue 18):
// which partitions its manifest lists, which folders are there, and whether
// each data file passes the checks tallyd makes before it maps it
// (check_lmdb_file), and what its write-ahead tail file holds. Reads only; never changes a file, so it is safe on a
// damaged directory and next to a running node. With `deep`, every page of
// every database of each file that passed is also read, in a child process
// per partition (LMDB read-only), so a zeroed or garbled page is found
// without stopping the inspector (an LMDB assertion ends only the child).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "journal/lmdb_file_check.hpp"

namespace tally {

struct partition_report {
  std::uint32_t partition = 0;
  bool listed = false;  // in the manifest
  bool present = false; // its folder is there
  lmdb_file_report file;            // when the checks passed
  std::optional<error> problem;     // what tallyd would refuse it for
  std::uint64_t entries_read = 0;   // deep: entries walked
  /// The write-ahead tail file (`tail.log`), if there is one: its whole
  /// entries and their LSNs (a restart takes in those at or above the
  /// log's end), and why reading stopped before its end ("" if it did
  /// not). Neither is damage: a torn last write was never acknowledged.
  std::uint64_t tail_entries = 0;
  std::uint64_t tail_first = 0;
  std::uint64_t tail_last = 0;
  std::string tail_stop_reason;
};

struct data_dir_report {
  std::string root;
  bool has_manifest = false;
  std::optional<error> manifest_problem;
  bool in_use = false; // a running tallyd holds <root>/LOCK
  std::vector<partition_report> partitions; // listed or present, ascending
  std::vector<std::string> leftovers;       // interrupted handoffs
  /// True when tallyd would refuse to start on it.
  bool damaged() const;
};

/// errc::not_found when `root` holds no partitions folder at all.
expected<data_dir_report> inspect_data_dir(const std::string& root, bool deep = false);

/// Reads every entry of every database of the LMDB environment in `dir`
/// (read-only) in a forked child; the number of entries, or errc::corrupt
/// with what LMDB said (an error, an assertion or a signal).
expected<std::uint64_t> walk_every_page(const std::string& dir);

/// Human-readable lines, one per partition.
std::string to_text(const data_dir_report& r);

} // namespace tally
