#include "crdt/byte_codec.hpp"

namespace tally {

void byte_writer::varint(std::uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void byte_writer::svarint(std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  varint((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0));
}

void byte_writer::bytes(std::string_view v) {
  varint(v.size());
  out_.append(v);
}

void byte_reader::fail(std::string what) {
  if (failed_.empty())
    failed_ = std::move(what);
  pos_ = in_.size();
}

std::uint8_t byte_reader::u8() {
  if (!ok())
    return 0;
  if (remaining() < 1) {
    fail("truncated: a byte is missing at offset " + std::to_string(pos_));
    return 0;
  }
  return static_cast<std::uint8_t>(in_[pos_++]);
}

std::uint64_t byte_reader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (!ok())
      return 0;
    if (remaining() < 1) {
      fail("truncated varint at offset " + std::to_string(pos_));
      return 0;
    }
    const auto b = static_cast<std::uint8_t>(in_[pos_++]);
    // The tenth byte may carry only the top bit of a 64-bit value.
    if (shift == 63 && b > 1) {
      fail("varint longer than 64 bits at offset " + std::to_string(pos_ - 1));
      return 0;
    }
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      // One encoding per value: a last byte of 0 after others is padding.
      if (b == 0 && shift > 0) {
        fail("overlong varint at offset " + std::to_string(pos_ - 1));
        return 0;
      }
      return v;
    }
  }
  fail("varint longer than 10 bytes at offset " + std::to_string(pos_));
  return 0;
}

std::int64_t byte_reader::svarint() {
  const auto u = varint();
  return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

bool byte_reader::boolean() {
  const auto b = u8();
  if (b > 1)
    fail("boolean byte " + std::to_string(b) + " is neither 0 nor 1");
  return b == 1;
}

std::string byte_reader::bytes() {
  const auto len = varint();
  if (!ok())
    return {};
  if (len > remaining()) {
    fail("byte string of length " + std::to_string(len) + " but only "
         + std::to_string(remaining()) + " bytes remain");
    return {};
  }
  std::string out{in_.substr(pos_, len)};
  pos_ += len;
  return out;
}

std::size_t byte_reader::count(std::size_t min_item_bytes) {
  const auto n = varint();
  if (!ok())
    return 0;
  const auto room = remaining() / (min_item_bytes == 0 ? 1 : min_item_bytes);
  if (n > room) {
    fail("count " + std::to_string(n) + " cannot fit in the "
         + std::to_string(remaining()) + " bytes that remain");
    return 0;
  }
  return static_cast<std::size_t>(n);
}

bool byte_reader::enter() {
  if (++depth_ > max_depth) {
    fail("nesting deeper than " + std::to_string(max_depth) + " levels");
    return false;
  }
  return true;
}

status byte_reader::finish() const {
  if (!failed_.empty())
    return make_error(errc::corrupt, "malformed CRDT encoding: " + failed_);
  if (pos_ != in_.size())
    return make_error(errc::corrupt,
                      "malformed CRDT encoding: "
                        + std::to_string(in_.size() - pos_)
                        + " trailing bytes");
  return {};
}

} // namespace tally
