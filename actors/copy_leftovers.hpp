// What an interrupted full copy leaves on disk (docs/REPLICATION.md, "Full
// copies"), tidied at a node's start before any partition opens. Plain C++
// file I/O, no CAF.
//
// A full copy goes through three folders beside a copy's store <p> (under
// <root>/partitions for an owner's copy, <root>/replicas for another
// node's):
//   <p>.copy-for-<n>  a snapshot of the store being sent to node n;
//   <p>.copy-in       the copy being received;
//   <p>.replaced      the store a received copy replaces, for the moment
//                     between the swap's two renames (<p> -> <p>.replaced,
//                     <p>.copy-in -> <p>) and its deletion.
// A retired copy that is dropped (actors/copy_retirement.hpp) is renamed
// <p>.dropped before it is deleted, so that a stop midway leaves no
// half-deleted store under the name <p>.
// At the start:
//   - .copy-for-*, .copy-in and .dropped are scratch: deleted (a copy is
//     sent again from the start; a dropped copy was to go anyway);
//   - <p>.replaced with <p> present: the swap finished, deleted;
//   - <p>.replaced with <p> missing: the node stopped between the two
//     renames; renamed back to <p>, the store as it was before that full
//     copy (with the promise its journal saved before each piece), which the
//     primary then brings up to date as after any restart. Until stop 25 the
//     node refused to start naming that partition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.hpp"

namespace tally {

struct copy_leftovers_report {
  std::vector<std::string> removed;  // folders deleted, relative to the root
  std::vector<std::string> restored; // <folder>/<p>, put back from <p>.replaced
};

/// Tidies <root>/partitions and <root>/replicas as above. errc::io_error
/// when a folder cannot be listed, deleted or renamed.
expected<copy_leftovers_report> tidy_copy_leftovers(const std::string& root);

/// Where a copy of partition `p` from <root>/<folder> is set aside at
/// `now_us`: <root>/stale/<p>.<folder>.<now_us> (expire_stale_copies reads
/// the time back from the name).
std::string stale_copy_path(const std::string& root, std::uint32_t p, const std::string& folder,
                            std::uint64_t now_us);

/// Deletes the copies set aside in <root>/stale/ (a stale copy, a retired
/// copy that could not be proven a prefix of the primary's journal) more
/// than `keep_us` before `now_us`, by the time in their name,
/// "<p>.<folder>.<wall clock us>"; a name without one is left alone.
/// Returns the names deleted. errc::io_error when one cannot be deleted.
expected<std::vector<std::string>> expire_stale_copies(const std::string& root,
                                                       std::uint64_t keep_us,
                                                       std::uint64_t now_us);

/// Removes the replica copy <root>/replicas/<p> (renamed <p>.dropped, then
/// deleted), or, with `keep_aside`, moves it to
/// <root>/stale/<p>.replicas.<now_us> as a stale copy is kept. Returns
/// "deleted" or the stale folder's path. errc::io_error when it cannot be
/// renamed or deleted; errc::not_found when there is no such copy.
expected<std::string> drop_copy_folder(const std::string& root, std::uint32_t p,
                                       bool keep_aside, std::uint64_t now_us);

} // namespace tally
