// Versioned, self-describing bytes of one state (for checkpoints) or one
// effect (for the journal and replication) of any CRDT type
// (docs/DATATYPES.md, "Encodings"):
//
//   state  := version:u8(=2) type:u8 payload     ; encode_state
//   effect := version:u8(=2) type:u8 payload     ; encode_effect
//
// Version 2 on purpose: today's crdt_object bytes (docs/FORMAT.md) start with
// Cereal's endianness byte, 1, so a decoder can tell the two formats apart by
// their first byte when crdt_object moves to this one.
//
// Decoding refuses, with errc::corrupt, truncated input, trailing bytes, an
// unknown version or type, unordered or repeated elements and keys, and
// nesting deeper than byte_reader::max_depth; any bytes it accepts re-encode
// to themselves.
#pragma once

#include <string>
#include <string_view>

#include "crdt/any_crdt.hpp"

namespace tally {

struct typed_state {
  crdt_type type;
  any_state state;
};
struct typed_effect {
  crdt_type type;
  any_effect effect;
};

std::string encode_typed_state(crdt_type type, const any_state& state);
expected<typed_state> decode_typed_state(std::string_view bytes);

std::string encode_typed_effect(crdt_type type, const any_effect& effect);
expected<typed_effect> decode_typed_effect(std::string_view bytes);

} // namespace tally
