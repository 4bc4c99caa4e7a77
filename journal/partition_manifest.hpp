// <data-dir>/partitions/MANIFEST: the partitions whose data this node holds
// on disk (issue 18, "storage that fails loudly"). Without it a deleted
// partition folder or data file looked like a partition never created: the
// node created it empty and served 0 for every key it held. With it, a
// partition listed here must have its data file, whole (check_lmdb_file),
// or the node refuses to start, naming it (docs/NODE.md, "Damaged
// storage"). Plain C++ and POSIX file I/O, no CAF.
//
// Written with each change, atomically (a temporary file, synced, renamed
// over the old one, the folder synced), in the order that keeps a crash
// harmless: a received partition is added after its folder is renamed into
// place (a crash between leaves a whole folder not listed yet, added at the
// next start); a partition that goes is removed from the list before its
// folder is deleted. Format (text): the line "tally partition manifest 1",
// then one line "partition N" per partition, ascending.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/expected.hpp"

namespace tally {

/// <root>/partitions/MANIFEST
std::string manifest_path(const std::string& root);

/// The listed partitions; nullopt when there is no manifest (a data dir
/// from before it existed, or a new one). errc::corrupt for a file that is
/// not a manifest (naming the line); errc::io_error.
expected<std::optional<std::set<std::uint32_t>>> load_manifest(const std::string& root);

/// Replaces the manifest with `parts`. errc::io_error.
status save_manifest(const std::string& root, const std::set<std::uint32_t>& parts);

/// The partitions present under <root>/partitions (folders named by a
/// number below q), ascending.
expected<std::vector<std::uint32_t>> present_partitions(const std::string& root,
                                                         std::uint32_t q);

/// Adds / removes one partition (read, change, save; serialized within the
/// process). A missing manifest counts as empty.
status manifest_add(const std::string& root, std::uint32_t p);
status manifest_remove(const std::string& root, std::uint32_t p);

} // namespace tally
