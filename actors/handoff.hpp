// The files of a partition handoff (docs/CLUSTER.md, "Handoff"): what the
// old owner ships and how the new owner installs it. Plain C++ and POSIX
// file I/O, no CAF: the membership actors move the bytes.
//
// A partition replica is one LMDB environment in <root>/partitions/<p>.
// Once its partition actor has closed it (no prepared or staged work), its
// data file is complete on disk and is shipped as it is, in chunks. The new
// owner writes them under <root>/partitions/<p>.incoming, syncs them, and
// renames the folder to <p> in one step: a crash leaves either no partition
// or a whole one, and an .incoming folder is deleted at startup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.hpp"

namespace tally {

/// Largest chunk of a partition file in one message.
constexpr std::size_t handoff_chunk_size = std::size_t{1} << 20;

/// <root>/partitions/<p>
std::string partition_dir(const std::string& root, std::uint32_t p);

/// The files of a closed partition folder that make up its state (LMDB's
/// data file; the lock file is per process and not shipped), sorted.
/// errc::io_error when the folder cannot be read; errc::not_found when it
/// has no data file.
expected<std::vector<std::string>> partition_files(const std::string& dir);

/// Reads up to handoff_chunk_size bytes of `dir`/`file` at `offset`; an
/// empty string at the end of the file.
expected<std::string> read_chunk(const std::string& dir, const std::string& file,
                                 std::uint64_t offset);

/// A partition being received.
class incoming_partition {
public:
  /// Starts (or restarts, discarding a partial earlier try) the reception
  /// of partition `p` under `root`. errc::io_error when the folder cannot
  /// be made.
  static expected<incoming_partition> begin(const std::string& root,
                                            std::uint32_t p);

  /// Writes `bytes` at `offset` of `file` (a plain name, no '/').
  /// errc::invalid_argument for a bad name; errc::io_error.
  status write(const std::string& file, std::uint64_t offset,
               const std::string& bytes);

  /// Syncs every file and the folder and renames it to <root>/partitions/<p>.
  /// False (and the received files deleted) when that folder exists: the
  /// partition is here already, from an earlier try whose answer was lost.
  /// errc::io_error.
  expected<bool> finish();

  std::uint32_t partition() const noexcept { return p_; }

private:
  incoming_partition(std::string root, std::uint32_t p) : root_(std::move(root)), p_(p) {}
  std::string dir() const;

  std::string root_;
  std::uint32_t p_ = 0;
  std::vector<std::string> files_;
};

/// Deletes <root>/partitions/*.incoming and *.old leftovers of interrupted
/// handoffs. Returns how many it deleted.
expected<std::size_t> remove_handoff_leftovers(const std::string& root);

/// Deletes a partition folder after its handoff (renamed to <p>.old first,
/// so a crash halfway leaves a leftover, never a half partition).
status remove_partition_dir(const std::string& root, std::uint32_t p);

/// Sets the owner's store <root>/partitions/<p> aside, unlisted from the
/// manifest first, as <root>/stale/<p>.partitions.<now_us> (what a stale
/// copy becomes; expire_stale_copies deletes it after --stale-keep-hours).
/// For a node that has another copy of p and so cannot keep this one as
/// its copy. Returns the new path; errc::io_error.
expected<std::string> set_partition_aside(const std::string& root, std::uint32_t p,
                                          std::uint64_t now_us);

/// n_val > 1, after a handoff that leaves this node in the partition's copy
/// set: the handed-off store becomes this node's replica copy instead of
/// being deleted (<root>/partitions/<p> renamed <root>/replicas/<p>, unlisted
/// from the manifest first): it holds everything the new owner received,
/// so it follows the primary from there rather than being filled again
/// from nothing (docs/REPLICATION.md, "Fills after joins").
/// errc::invalid_argument when <root>/replicas/<p> exists; errc::io_error
/// when the folder cannot be renamed.
status keep_partition_as_copy(const std::string& root, std::uint32_t p);


} // namespace tally
