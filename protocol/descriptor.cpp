#include "protocol/descriptor.hpp"

#include <cstdio>

namespace tally {

namespace {

constexpr std::string_view ignore_encodings[] = {
  {"\x83\x64\x00\x06ignore", 10}, // ATOM_EXT
  {"\x83\x77\x06ignore", 9},      // SMALL_ATOM_UTF8_EXT
  {"\x83\x76\x00\x06ignore", 10}, // ATOM_UTF8_EXT
  {"\x83\x73\x06ignore", 9},      // SMALL_ATOM_EXT
};

std::string hex_byte(unsigned char b) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// Why `bytes` (never empty here) is not Tally's `what`, with advice.
error foreign_bytes(std::string_view bytes, const char* what,
                    const char* advice) {
  auto first = static_cast<unsigned char>(bytes.front());
  std::string msg = std::string{what} + " bytes are not Tally's: ";
  if (first == erlang_term_tag)
    msg += "they are an Erlang term, as AntidoteDB issues";
  else
    msg += "unknown first byte " + hex_byte(first);
  msg += "; ";
  msg += advice;
  return make_error(errc::invalid_argument, std::move(msg));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A bounds-checked little-endian reader over a byte string.
class reader {
public:
  explicit reader(std::string_view bytes) : rest_(bytes) {}

  bool u64(std::uint64_t& v) {
    if (rest_.size() < 8)
      return false;
    v = 0;
    for (int i = 7; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(rest_[static_cast<std::size_t>(i)]);
    rest_.remove_prefix(8);
    return true;
  }

  bool u32(std::uint32_t& v) {
    if (rest_.size() < 4)
      return false;
    v = 0;
    for (int i = 3; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(rest_[static_cast<std::size_t>(i)]);
    rest_.remove_prefix(4);
    return true;
  }

  // Length-prefixed bytes; the length is checked against what is left
  // before anything is copied.
  bool bytes(std::string_view& out) {
    std::uint32_t n = 0;
    if (!u32(n) || n > rest_.size())
      return false;
    out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }

  bool done() const noexcept { return rest_.empty(); }

private:
  std::string_view rest_;
};

} // namespace

bool is_no_snapshot(std::string_view bytes) noexcept {
  if (bytes.empty())
    return true;
  for (auto enc : ignore_encodings)
    if (bytes == enc)
      return true;
  return false;
}

std::string encode_clock(const vector_clock& clock) {
  std::string out(1, static_cast<char>(clock_bytes_tag));
  out += clock.encode();
  return out;
}

expected<vector_clock> decode_clock(std::string_view bytes) {
  if (bytes.empty())
    return make_error(errc::invalid_argument,
                      "empty clock bytes: send no clock for no snapshot");
  if (static_cast<unsigned char>(bytes.front()) != clock_bytes_tag)
    return foreign_bytes(bytes, "clock",
                         "send no clock, or a commit time a Tally server "
                         "returned");
  auto clock = vector_clock::decode(bytes.substr(1));
  if (!clock)
    return make_error(errc::corrupt,
                      "Tally clock bytes do not decode: "
                        + clock.err().message());
  return clock;
}

std::string encode_tx_descriptor(const tx_descriptor& d) {
  auto clock = d.snapshot.encode();
  std::string out;
  out.reserve(2 + 4 * 8 + 4 + d.owner.size() + 4 + clock.size());
  out.push_back(static_cast<char>(tx_descriptor_tag));
  out.push_back(static_cast<char>(tx_descriptor::format_version));
  put_u64(out, d.tx.origin);
  put_u64(out, d.tx.seq);
  put_u64(out, d.secret);
  put_u64(out, d.owner_incarnation);
  put_u32(out, static_cast<std::uint32_t>(d.owner.size()));
  out += d.owner;
  put_u32(out, static_cast<std::uint32_t>(clock.size()));
  out += clock;
  return out;
}

expected<tx_descriptor> decode_tx_descriptor(std::string_view bytes) {
  if (bytes.empty())
    return make_error(errc::invalid_argument,
                      "empty transaction descriptor: send the one "
                      "StartTransaction returned");
  if (static_cast<unsigned char>(bytes.front()) != tx_descriptor_tag)
    return foreign_bytes(bytes, "transaction descriptor",
                         "send the descriptor a Tally StartTransaction "
                         "returned");
  if (bytes.size() < 2)
    return make_error(errc::corrupt, "transaction descriptor has no version");
  auto version = static_cast<unsigned char>(bytes[1]);
  if (version != 1 && version != tx_descriptor::format_version)
    return make_error(errc::corrupt, "unknown transaction descriptor version "
                                       + std::to_string(version));
  reader in{bytes.substr(2)};
  tx_descriptor d;
  std::string_view owner;
  std::string_view clock;
  if (!in.u64(d.tx.origin) || !in.u64(d.tx.seq)
      || (version >= 2 && !in.u64(d.secret))
      || !in.u64(d.owner_incarnation) || !in.bytes(owner) || !in.bytes(clock))
    return make_error(errc::corrupt, "transaction descriptor is truncated");
  if (!in.done())
    return make_error(errc::corrupt,
                      "transaction descriptor has trailing bytes");
  auto snapshot = vector_clock::decode(clock);
  if (!snapshot)
    return make_error(errc::corrupt,
                      "transaction descriptor's snapshot does not decode: "
                        + snapshot.err().message());
  d.owner = std::string{owner};
  d.snapshot = std::move(*snapshot);
  return d;
}

} // namespace tally
