// The operations of both registers (AntidoteDB's {assign, V}, {assign, V, T}
// and {reset, {}}; the protocol's ApbRegUpdate serves LWWREG and MVREG
// alike).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace tally {

struct register_assign {
  std::string value;
  /// Last-writer-wins only: the assign's timestamp (microseconds), instead
  /// of the preparing replica's clock. A multi-value register refuses it.
  std::optional<std::uint64_t> timestamp;
};

/// Last-writer-wins: assigns the empty value, newer than what was seen.
/// Multi-value: removes every value the preparing replica saw.
struct register_reset {};

using register_update = std::variant<register_assign, register_reset>;

} // namespace tally
