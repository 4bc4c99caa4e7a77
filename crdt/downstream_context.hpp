// What the "downstream" (prepare) step of an op-based CRDT may draw on besides
// the operation and the current state: fresh unique tokens and the local
// clock. AntidoteDB reads both from the runtime (crypto:strong_rand_bytes,
// os:timestamp); Tally passes them in so that every CRDT stays a pure,
// deterministic function that tests can replay from a seed.
//
// Contract: one context per prepared operation or transaction, used by one
// thread; `tokens` must never repeat an origin used elsewhere.
#pragma once

#include <cstdint>

#include "crdt/unique_token.hpp"

namespace tally {

struct downstream_context {
  token_source tokens;
  /// Microseconds since the Unix epoch at the preparing replica: the
  /// timestamp of a last-writer-wins assign that does not carry its own.
  std::uint64_t now_us = 0;
};

} // namespace tally
