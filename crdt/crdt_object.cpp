#include "crdt/crdt_object.hpp"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/variant.hpp>

#include "crdt/crdt_codec.hpp"

namespace tally {

namespace {

// Format versions (docs/FORMAT.md). Bump on any layout change and keep the
// decoder for every version ever written. Format 1 is Cereal's portable
// binary archive, whose first byte (the endianness flag) is 1; it holds
// counters and fatcounters only and is still what they are written in, so
// that counter records stay byte for byte what they were. Format 2 is
// crdt/crdt_codec.hpp, whose first byte is its version, 2.
constexpr std::uint8_t object_format_version = 1;
constexpr std::uint8_t effect_format_version = 1;
constexpr char cereal_first_byte = 1;

// Format 1's layouts: Cereal variants of the counter alternatives only.
using v1_state = std::variant<pn_counter>;
using v1_effect = std::variant<counter_effect>;

template <class F>
auto decode_with(std::string_view bytes, F&& body)
  -> decltype(body(std::declval<cereal::PortableBinaryInputArchive&>())) {
  std::istringstream in{std::string{bytes}};
  try {
    cereal::PortableBinaryInputArchive ar{in};
    auto result = body(ar);
    if (in.peek() != std::char_traits<char>::eof())
      return make_error(errc::corrupt, "trailing bytes after a CRDT encoding");
    return result;
  } catch (const cereal::Exception& e) {
    return make_error(errc::corrupt,
                      std::string{"truncated CRDT encoding: "} + e.what());
  }
}

bool is_counter_type(crdt_type t) noexcept {
  return t == crdt_type::counter || t == crdt_type::fatcounter;
}

} // namespace

expected<crdt_object> crdt_object::make(crdt_type type) {
  if (!is_known_type(type))
    return make_error(errc::wrong_type, "CRDT type number "
                                          + std::to_string(static_cast<int>(type))
                                          + " is no type");
  return crdt_object{type, make_state(type)};
}

expected<crdt_effect> crdt_object::prepare(const crdt_update& update,
                                           downstream_context& ctx) const {
  auto eff = tally::prepare(type_, state_, update, ctx);
  if (!eff && eff.err().code() == errc::wrong_type)
    return make_error(errc::wrong_type, "update does not fit an object of type "
                                          + std::string{to_string(type_)});
  return eff;
}

expected<crdt_effect> crdt_object::prepare(const crdt_update& update) const {
  if (!is_counter_type(type_))
    return make_error(errc::invalid_argument,
                      "a " + std::string{to_string(type_)}
                        + " update needs a downstream context (tokens, clock)");
  // A counter's prepare draws no token and reads no clock.
  downstream_context unused{token_source{0}, 0};
  return prepare(update, unused);
}

status crdt_object::apply(const crdt_effect& effect) {
  auto st = tally::apply(type_, state_, effect);
  if (!st && st.err().code() == errc::wrong_type)
    return make_error(errc::wrong_type, "effect does not fit an object of type "
                                          + std::string{to_string(type_)});
  return st;
}

crdt_value crdt_object::value() const { return value_of(state_); }

std::string crdt_object::encode() const {
  if (!is_counter_type(type_))
    return encode_typed_state(type_, state_);
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar{out};
    v1_state s{std::get<pn_counter>(state_)};
    ar(object_format_version, static_cast<std::uint8_t>(type_), s);
  }
  return std::move(out).str();
}

expected<crdt_object> crdt_object::decode(std::string_view bytes) {
  if (!bytes.empty() && bytes[0] != cereal_first_byte) {
    auto t = decode_typed_state(bytes);
    if (!t)
      return t.err();
    return crdt_object{t->type, std::move(t->state)};
  }
  return decode_with(bytes, [](auto& ar) -> expected<crdt_object> {
    std::uint8_t version = 0;
    std::uint8_t type_byte = 0;
    ar(version, type_byte);
    if (version != object_format_version)
      return make_error(errc::corrupt, "unknown CRDT object format version "
                                         + std::to_string(version));
    crdt_type type;
    if (!crdt_type_from_wire(type_byte, type) || !is_counter_type(type))
      return make_error(errc::corrupt, "unknown CRDT type id "
                                         + std::to_string(type_byte));
    v1_state s;
    ar(s);
    return crdt_object{type, std::get<pn_counter>(s)};
  });
}

std::optional<crdt_type> effect_type(const crdt_effect& effect) noexcept {
  return std::visit(
    [](const auto& e) -> std::optional<crdt_type> {
      using T = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<T, flag_ew_effect>) return crdt_type::flag_ew;
      else if constexpr (std::is_same_v<T, flag_dw_effect>) return crdt_type::flag_dw;
      else if constexpr (std::is_same_v<T, lww_effect>) return crdt_type::lwwreg;
      else if constexpr (std::is_same_v<T, mv_effect>) return crdt_type::mvreg;
      else if constexpr (std::is_same_v<T, aw_set_effect>) return crdt_type::orset;
      else if constexpr (std::is_same_v<T, rw_set_effect>) return crdt_type::rwset;
      else if constexpr (std::is_same_v<T, g_set_effect>) return crdt_type::gset;
      else if constexpr (std::is_same_v<T, b_counter_effect>) return crdt_type::bcounter;
      else if constexpr (std::is_same_v<T, g_map_effect>) return crdt_type::gmap;
      else if constexpr (std::is_same_v<T, rr_map_effect>) return crdt_type::rrmap;
      else return std::nullopt;
    },
    effect);
}

std::string encode_effect(const crdt_effect& effect) {
  if (auto t = effect_type(effect))
    return encode_typed_effect(*t, effect);
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar{out};
    v1_effect e{std::get<counter_effect>(effect)};
    ar(effect_format_version, e);
  }
  return std::move(out).str();
}

expected<crdt_effect> decode_effect(std::string_view bytes) {
  if (!bytes.empty() && bytes[0] != cereal_first_byte) {
    auto t = decode_typed_effect(bytes);
    if (!t)
      return t.err();
    return std::move(t->effect);
  }
  return decode_with(bytes, [](auto& ar) -> expected<crdt_effect> {
    std::uint8_t version = 0;
    ar(version);
    if (version != effect_format_version)
      return make_error(errc::corrupt, "unknown CRDT effect format version "
                                         + std::to_string(version));
    v1_effect e;
    ar(e);
    return crdt_effect{std::get<counter_effect>(e)};
  });
}

namespace {

enum class value_kind : std::uint8_t { integer = 0, boolean = 1, bytes = 2, list = 3, map = 4 };

void write_value(byte_writer& out, const crdt_value& v) {
  std::visit(
    [&out](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, std::int64_t>) {
        out.u8(static_cast<std::uint8_t>(value_kind::integer));
        out.svarint(x);
      } else if constexpr (std::is_same_v<T, bool>) {
        out.u8(static_cast<std::uint8_t>(value_kind::boolean));
        out.boolean(x);
      } else if constexpr (std::is_same_v<T, std::string>) {
        out.u8(static_cast<std::uint8_t>(value_kind::bytes));
        out.bytes(x);
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        out.u8(static_cast<std::uint8_t>(value_kind::list));
        out.varint(x.size());
        for (const auto& s : x)
          out.bytes(s);
      } else {
        out.u8(static_cast<std::uint8_t>(value_kind::map));
        out.varint(x.entries.size());
        for (const auto& e : x.entries) {
          out.bytes(e.key.key);
          write_type(out, e.key.type);
          write_value(out, e.value);
        }
      }
    },
    v);
}

crdt_value read_value(byte_reader& in) {
  switch (static_cast<value_kind>(in.u8())) {
    case value_kind::integer: return in.svarint();
    case value_kind::boolean: return in.boolean();
    case value_kind::bytes: return in.bytes();
    case value_kind::list: {
      std::vector<std::string> out(in.count(1));
      for (auto& s : out)
        s = in.bytes();
      return out;
    }
    case value_kind::map: {
      if (!in.enter())
        return std::int64_t{0};
      map_value m;
      m.entries.resize(in.count(3));
      for (auto& e : m.entries) {
        e.key.key = in.bytes();
        e.key.type = read_type(in);
        e.value = read_value(in);
        if (!in.ok())
          break;
      }
      in.leave();
      return m;
    }
  }
  if (in.ok())
    in.fail("unknown value kind");
  return std::int64_t{0};
}

} // namespace

std::string encode_value(const crdt_value& value) {
  byte_writer out;
  write_value(out, value);
  return std::move(out).take();
}

expected<crdt_value> decode_value(std::string_view bytes) {
  byte_reader in{bytes};
  auto v = read_value(in);
  if (auto st = in.finish(); !st)
    return st.err();
  return v;
}

} // namespace tally
