// CRDT type identifiers. The numbers are AntidoteDB's CRDT_type enum
// (ANTIDOTE-PROTOCOL.md, "Types") so that the wire protocol, the journal and
// the checkpoint store share one id. Never renumber: ids are persisted.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

namespace tally {

enum class crdt_type : std::uint8_t {
  counter = 3,     // AntidoteDB COUNTER (antidote_crdt_counter_pn)
  orset = 4,
  lwwreg = 5,
  mvreg = 6,
  gmap = 8,
  rwset = 10,
  rrmap = 11,
  fatcounter = 12, // AntidoteDB FATCOUNTER (antidote_crdt_counter_fat)
  flag_ew = 13,
  flag_dw = 14,
  bcounter = 15,
  // Tally-only ids start at 128 and never travel on AntidoteDB's wire
  // (crdt_type_from_wire refuses them). AntidoteDB's protocol has no number
  // for its grow-only set, antidote_crdt_set_go; Tally stores it inside maps.
  gset = 128,
};

/// "counter", "fatcounter", ...; "unknown(N)" style names are not produced:
/// unknown values return "unknown".
std::string_view to_string(crdt_type type) noexcept;

/// True for the types a client can use: every AntidoteDB type, not gset
/// (no AntidoteDB number).
bool is_supported(crdt_type type) noexcept;

/// Maps a wire number onto a crdt_type; false for numbers that are not an
/// AntidoteDB type at all.
bool crdt_type_from_wire(std::uint32_t wire, crdt_type& out) noexcept;

inline std::ostream& operator<<(std::ostream& os, crdt_type t) {
  return os << to_string(t);
}

} // namespace tally
