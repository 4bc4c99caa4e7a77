// Bounds-checked binary writer and reader for the CRDT encodings of
// docs/DATATYPES.md ("Encodings"). Effects are persisted in the journal and
// received from other nodes, so the reader trusts nothing: every length is
// checked against the bytes that remain before anything is allocated, and
// the first failure sticks (later reads return zeros) so that a decoder reads
// straight through and asks `finish()` once.
//
// Integers are LEB128 varints (signed ones zigzag-encoded): small in the
// common case, one layout on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/expected.hpp"

namespace tally {

class byte_writer {
public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void varint(std::uint64_t v);
  void svarint(std::int64_t v);
  void boolean(bool v) { u8(v ? 1 : 0); }
  /// Length-prefixed bytes.
  void bytes(std::string_view v);

  std::string take() && { return std::move(out_); }

private:
  std::string out_;
};

class byte_reader {
public:
  /// Maximum nesting of maps inside maps a decoder accepts: deeper input is
  /// refused rather than allowed to exhaust the stack (AntidoteDB has no
  /// limit; no client of Tally needs more than a few levels).
  static constexpr int max_depth = 32;

  explicit byte_reader(std::string_view in) : in_(in) {}

  std::uint8_t u8();
  std::uint64_t varint();
  std::int64_t svarint();
  bool boolean();
  std::string bytes();
  /// A count of items that each take at least `min_item_bytes` bytes: refused
  /// when the remaining input cannot hold that many, so a corrupted count
  /// never drives a huge allocation.
  std::size_t count(std::size_t min_item_bytes);

  /// Marks the input bad with `what` (the first failure is kept).
  void fail(std::string what);
  bool ok() const noexcept { return failed_.empty(); }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }

  /// Entering and leaving one level of nesting; fails past max_depth.
  bool enter();
  void leave() noexcept { --depth_; }

  /// errc::corrupt naming the first failure, or the trailing bytes; success
  /// only when the input was read exactly to its end.
  status finish() const;

private:
  std::string_view in_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::string failed_;
};

} // namespace tally
