// The unique tags that make observed-remove CRDTs work (sets, flags, the
// multi-value register): every add, enable or assign carries a token no other
// operation anywhere ever carries, and a remove names the tokens it observed.
// AntidoteDB draws 20 random bytes per token; Tally's tokens are an `origin`
// the caller makes unique per prepare (for example a random 64-bit number per
// transaction, or <dc, transaction sequence>) and a sequence number within it,
// so that the CRDT layer stays deterministic and testable.
#pragma once

#include <cstdint>
#include <ostream>

#include "crdt/byte_codec.hpp"

namespace tally {

struct unique_token {
  std::uint64_t origin = 0;
  std::uint64_t seq = 0;

  friend bool operator==(const unique_token& a, const unique_token& b) noexcept {
    return a.origin == b.origin && a.seq == b.seq;
  }
  friend bool operator!=(const unique_token& a, const unique_token& b) noexcept {
    return !(a == b);
  }
  friend bool operator<(const unique_token& a, const unique_token& b) noexcept {
    return a.origin != b.origin ? a.origin < b.origin : a.seq < b.seq;
  }
  friend std::ostream& operator<<(std::ostream& os, const unique_token& t) {
    return os << t.origin << '.' << t.seq;
  }
};

/// Hands out tokens <origin, first>, <origin, first+1>, ... The caller owns
/// uniqueness of `origin` across every source that ever exists (replicas,
/// transactions, restarts).
class token_source {
public:
  explicit token_source(std::uint64_t origin, std::uint64_t first = 0)
      : origin_(origin), next_(first) {}

  unique_token next() noexcept { return {origin_, next_++}; }

private:
  std::uint64_t origin_;
  std::uint64_t next_;
};

/// Fixed part of every encoding that holds a token: origin, seq as varints.
inline void write_token(byte_writer& out, const unique_token& t) {
  out.varint(t.origin);
  out.varint(t.seq);
}
inline unique_token read_token(byte_reader& in) {
  unique_token t;
  t.origin = in.varint();
  t.seq = in.varint();
  return t;
}
/// Smallest encoding of one token: two one-byte varints.
constexpr std::size_t min_token_bytes = 2;

} // namespace tally
