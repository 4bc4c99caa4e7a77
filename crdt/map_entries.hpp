// The parts both maps share: the sorted entry vector, nested prepare,
// all-or-nothing application of nested effects, and the entry encodings.
// Internal to g_map.cpp and rr_map.cpp.
#pragma once

#include <vector>

#include "crdt/any_crdt.hpp"

namespace tally::map_entries {

/// The entry under `key` in `entries` (sorted by key), or nullptr.
const keyed_state* find(const std::vector<keyed_state>& entries,
                        const map_key& key);

/// errc::invalid_argument when `update` nests maps deeper than
/// byte_reader::max_depth levels (itself included): a state or effect that
/// deep could not be decoded again, so it is never prepared.
status check_depth(const map_update& update);

/// errc::invalid_argument naming the first key that appears twice.
status check_distinct(std::vector<map_key> keys);

/// The nested effect of each update, generated against the entry's state
/// (or the type's initial state), sorted by key.
expected<std::vector<keyed_effect>>
prepare_nested(const std::vector<keyed_state>& entries,
               const std::vector<keyed_update>& updates, downstream_context& ctx);

/// The states the entries of `effects` reach, computed on copies so that the
/// map is untouched when one fails. A missing entry starts from bottom when
/// `create` holds and is skipped otherwise.
expected<std::vector<keyed_state>>
stage(const std::vector<keyed_state>& entries,
      const std::vector<keyed_effect>& effects, bool create);

/// Stores staged states; with `drop_bottom`, an entry back at bottom goes.
void commit(std::vector<keyed_state>& entries, std::vector<keyed_state> staged,
            bool drop_bottom);

map_value value(const std::vector<keyed_state>& entries);

void write_key(byte_writer& out, const map_key& key);
map_key read_key(byte_reader& in);

void write_entries(byte_writer& out, const std::vector<keyed_state>& entries);
/// Fails `in` on unordered or repeated keys, and with `refuse_bottom` on an
/// entry at its initial state (a remove-resets map never stores one).
std::vector<keyed_state> read_entries(byte_reader& in, bool refuse_bottom);

void write_effects(byte_writer& out, const std::vector<keyed_effect>& effects);
std::vector<keyed_effect> read_effects(byte_reader& in);

} // namespace tally::map_entries
