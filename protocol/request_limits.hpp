// Validation at the door (docs/SECURITY.md): the bounds every client request
// must respect, checked right after decode_request() and before anything
// reaches a coordinator or a partition. A request outside them is answered
// with an ErrorResp naming the limit; nothing of it is applied.
//
// Why here and not deeper: a bound a partition enforces only when it writes
// (the journal's key size, for one) turns one bad request into a failed
// batch; checked at the door it costs nothing and harms no one else.
//
// Plain functions over plain values, no I/O, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/expected.hpp"
#include "protocol/messages.hpp"

namespace tally {

struct request_limits {
  /// Bucket plus key bytes of one object. 509 is what the journal can index
  /// (journal/codec.hpp, max_object_key_bytes: LMDB's 511-byte key minus a
  /// 2-byte bucket length); actors/partition_core.cpp asserts they agree.
  std::size_t max_object_key_bytes = 509;
  /// Objects read or updates sent in one request.
  std::size_t max_objects_per_request = 10000;
  /// Largest |increment| of one counter update. INT64_MIN is always refused:
  /// it has no negation, so a decrement by it cannot be undone or compared.
  std::uint64_t max_increment = static_cast<std::uint64_t>(INT64_MAX);
  /// How far a client clock (a start timestamp or a descriptor's snapshot)
  /// may be ahead of the node's clock, in microseconds (tallyd
  /// --max-clock-skew-ms). A later clock would push commit times into the
  /// future for everyone; 0 turns the check off (tests only).
  std::uint64_t max_clock_skew_us = 5'000'000;
  /// Bytes of an opaque transaction descriptor or clock a client sends back.
  /// Tally's own are a few dozen bytes (docs/PROTOCOL.md).
  std::size_t max_descriptor_bytes = 4096;
  /// Bytes of the owner node id inside a descriptor ("tally@host:port").
  std::size_t max_owner_bytes = 512;
};

/// ok when `req` respects `limits` at node time `now_us` (microseconds since
/// the epoch); otherwise errc::invalid_argument with a message that names
/// the limit and the offending value, e.g. "bucket and key use 600 bytes, at
/// most 509 (max_object_key_bytes)". A clock entry too far ahead, or one so
/// large that a commit time above it would wrap, is refused too. Admin
/// requests have their own bounds (check_admin_req) and pass.
status validate_request(const request& req, const request_limits& limits,
                        std::uint64_t now_us);

/// decode_request() then validate_request(): the server's one entry point.
expected<request> decode_valid_request(std::uint8_t code,
                                       std::string_view body,
                                       const request_limits& limits,
                                       std::uint64_t now_us);

} // namespace tally
