// The replication part of `tally cluster status` (docs/REPLICATION.md,
// "Operations"): for each partition, its primary (as this node routes it),
// the primary's term and journal end, and each other copy with its lag,
// the distance in journal records from the primary's end to the end the
// primary knows that copy holds. Asked of every primary, local or remote
// (r_status), with a short timeout: a primary that does not answer is
// listed as such.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/node_context.hpp"

namespace tally {

/// What a primary says about its copies (the answer to r_status).
struct copy_status {
  std::string role;                // "primary", "replica", ...
  std::uint64_t end = 0;           // its journal end
  std::uint64_t term = 0;          // the term it leads under
  std::vector<std::string> peers;  // the other copies' nodes
  std::vector<std::uint64_t> ends; // how far each holds, as the primary knows
  std::vector<std::string> states; // "ok", "down", "stale", "full copy", "?"
};

/// One line per partition: "<p> | <primary> | term <t> | end <e> | <node>
/// lag <n>, ..." (lines start with the partition's number, so the parsers
/// of the member table skip them).
std::string format_replication_table(const std::vector<route>& table,
                                     const std::vector<std::optional<copy_status>>& answers);

/// Asks the primary of every partition of `table` for its copy_status
/// (at most `timeout` each) from `self`, then calls `done` with the table
/// (format_replication_table) on `self`'s thread.
void gather_replication_status(caf::event_based_actor* self,
                               std::shared_ptr<const std::vector<route>> table,
                               std::chrono::milliseconds timeout,
                               std::function<void(std::string)> done);

} // namespace tally
