// Clocks and transaction descriptors as the opaque bytes clients carry
// (docs/PROTOCOL.md, "Clock and transaction-descriptor bytes").
//
// To a client these are opaque `bytes` fields (ApbStartTransaction.timestamp,
// ApbCommitResp.commit_time, every transaction_descriptor). AntidoteDB fills
// them with Erlang term_to_binary terms; Tally uses its own tagged encodings
// below and only has to accept its own bytes back. Each encoding starts with
// a tag byte that is never 0x83 (the first byte of every term_to_binary
// output), so foreign bytes are recognised and refused with a clear error
// instead of being misread.
//
// Plain functions, no I/O, never throw (except std::bad_alloc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "common/ids.hpp" // tx_id

namespace tally {

/// First byte of Tally's clock bytes ('T').
constexpr std::uint8_t clock_bytes_tag = 0x54;
/// First byte of Tally's transaction descriptors ('X').
constexpr std::uint8_t tx_descriptor_tag = 0x58;
/// First byte of every Erlang external term (term_to_binary).
constexpr std::uint8_t erlang_term_tag = 0x83;

/// True for snapshot bytes that mean "no snapshot": empty bytes, or the
/// Erlang atom `ignore` in any of its external-term encodings:
///   83 64 00 06 "ignore"   ATOM_EXT (term_to_binary, OTP 25 and older)
///   83 77 06 "ignore"      SMALL_ATOM_UTF8_EXT (term_to_binary, OTP 26+)
///   83 76 00 06 "ignore"   ATOM_UTF8_EXT
///   83 73 06 "ignore"      SMALL_ATOM_EXT
/// (An absent field means the same; decode_request folds all of these into
/// an absent timestamp.)
bool is_no_snapshot(std::string_view bytes) noexcept;

/// Tally's clock bytes: the tag, then vector_clock::encode().
std::string encode_clock(const vector_clock& clock);

/// Reads encode_clock() bytes. Errors:
/// - errc::invalid_argument for bytes that are not Tally's: empty, an Erlang
///   term (an AntidoteDB clock), or another first byte; the message says what
///   to send instead;
/// - errc::corrupt for Tally-tagged bytes that do not decode.
expected<vector_clock> decode_clock(std::string_view bytes);

/// What a Tally server needs to find an interactive transaction again from
/// the descriptor a client sends back with every read, update, commit and
/// abort.
struct tx_descriptor {
  /// Format version written by encode_tx_descriptor().
  static constexpr std::uint8_t format_version = 2;

  /// The transaction (coordinator node hash, per-coordinator sequence).
  tx_id tx;
  /// The node whose coordinator holds the transaction's state (ring node
  /// name, e.g. "tally@127.0.0.1:9100"): a request reaching another node is
  /// forwarded there.
  std::string owner;
  /// The owner's incarnation (e.g. its start time in microseconds): after a
  /// restart the owner's sequence numbers start over, so a stale descriptor
  /// is recognised by its old incarnation instead of naming a new
  /// transaction.
  std::uint64_t owner_incarnation = 0;
  /// The transaction's snapshot time.
  vector_clock snapshot;
  /// 64 random bits the owner keeps with the transaction (version 2): the
  /// descriptor names the transaction only with them, so that no client can
  /// name another's transaction by counting (its sequence number counts
  /// up). Never 0 in a descriptor the owner issued; 0 when read from a
  /// version 1 descriptor, which then names no transaction.
  std::uint64_t secret = 0;

  friend bool operator==(const tx_descriptor& a, const tx_descriptor& b) {
    return a.tx == b.tx && a.owner == b.owner
           && a.owner_incarnation == b.owner_incarnation
           && a.snapshot == b.snapshot && a.secret == b.secret;
  }
  friend bool operator!=(const tx_descriptor& a, const tx_descriptor& b) {
    return !(a == b);
  }
};

/// The descriptor's bytes (layout in docs/PROTOCOL.md):
///   tag:u8(0x58) version:u8(2) origin:u64 seq:u64 secret:u64 incarnation:u64
///   owner_len:u32 owner:bytes clock_len:u32 clock:vector_clock::encode()
/// integers little-endian. Version 1 (before stop 33) had no secret; it is
/// still read.
std::string encode_tx_descriptor(const tx_descriptor& d);

/// Reads encode_tx_descriptor() bytes. Errors: errc::invalid_argument for
/// bytes that are not a Tally descriptor (empty, an Erlang term, another
/// tag); errc::corrupt for an unknown version, truncated or trailing bytes,
/// or a bad clock.
expected<tx_descriptor> decode_tx_descriptor(std::string_view bytes);

} // namespace tally
