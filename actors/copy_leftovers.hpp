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
// At the start:
//   - .copy-for-* and .copy-in are scratch: deleted (a copy is sent again
//     from the start);
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

} // namespace tally
