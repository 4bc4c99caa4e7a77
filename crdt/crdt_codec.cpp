#include "crdt/crdt_codec.hpp"

namespace tally {

namespace {

// Bump on any layout change and keep decoding every version ever written.
// 1 is taken: it is the first byte of the Cereal crdt_object encoding.
constexpr std::uint8_t format_version = 2;

/// Reads the version and type header; fails `in` on a bad one.
crdt_type read_header(byte_reader& in) {
  const auto version = in.u8();
  if (in.ok() && version != format_version) {
    in.fail("unknown CRDT format version " + std::to_string(version));
    return crdt_type::counter;
  }
  return read_type(in);
}

} // namespace

std::string encode_typed_state(crdt_type type, const any_state& state) {
  byte_writer out;
  out.u8(format_version);
  write_type(out, type);
  encode_state(out, type, state);
  return std::move(out).take();
}

expected<typed_state> decode_typed_state(std::string_view bytes) {
  byte_reader in{bytes};
  const auto type = read_header(in);
  if (!in.ok())
    return in.finish().err();
  expected<typed_state> out{typed_state{type, decode_state(in, type)}};
  if (auto st = in.finish(); !st)
    return st.err();
  return out;
}

std::string encode_typed_effect(crdt_type type, const any_effect& effect) {
  byte_writer out;
  out.u8(format_version);
  write_type(out, type);
  encode_effect(out, type, effect);
  return std::move(out).take();
}

expected<typed_effect> decode_typed_effect(std::string_view bytes) {
  byte_reader in{bytes};
  const auto type = read_header(in);
  if (!in.ok())
    return in.finish().err();
  expected<typed_effect> out{typed_effect{type, decode_effect(in, type)}};
  if (auto st = in.finish(); !st)
    return st.err();
  return out;
}

} // namespace tally
