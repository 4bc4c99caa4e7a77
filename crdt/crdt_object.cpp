#include "crdt/crdt_object.hpp"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/variant.hpp>

namespace tally {

namespace {

// Format versions (docs/FORMAT.md). Bump on any layout change and keep the
// decoder for every version ever written.
constexpr std::uint8_t object_format_version = 1;
constexpr std::uint8_t effect_format_version = 1;

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

} // namespace

expected<crdt_object> crdt_object::make(crdt_type type) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter:
      return crdt_object{type, pn_counter{}};
    default:
      return make_error(errc::wrong_type,
                        "CRDT type " + std::string{to_string(type)}
                          + " is not supported; Tally stores counter and "
                            "fatcounter");
  }
}

expected<crdt_effect> crdt_object::prepare(const crdt_update& update) const {
  if (auto* u = std::get_if<counter_update>(&update)) {
    auto eff = std::get<pn_counter>(state_).prepare(*u);
    if (!eff)
      return eff.err();
    return crdt_effect{*eff};
  }
  return make_error(errc::wrong_type, "update does not fit an object of type "
                                        + std::string{to_string(type_)});
}

status crdt_object::apply(const crdt_effect& effect) {
  if (auto* e = std::get_if<counter_effect>(&effect))
    return std::get<pn_counter>(state_).apply(*e);
  return make_error(errc::wrong_type, "effect does not fit an object of type "
                                        + std::string{to_string(type_)});
}

crdt_value crdt_object::value() const {
  return std::get<pn_counter>(state_).value();
}

std::string crdt_object::encode() const {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar{out};
    ar(object_format_version, static_cast<std::uint8_t>(type_), state_);
  }
  return std::move(out).str();
}

expected<crdt_object> crdt_object::decode(std::string_view bytes) {
  return decode_with(bytes, [](auto& ar) -> expected<crdt_object> {
    std::uint8_t version = 0;
    std::uint8_t type_byte = 0;
    ar(version, type_byte);
    if (version != object_format_version)
      return make_error(errc::corrupt, "unknown CRDT object format version "
                                         + std::to_string(version));
    crdt_type type;
    if (!crdt_type_from_wire(type_byte, type) || !is_supported(type))
      return make_error(errc::corrupt, "unknown CRDT type id "
                                         + std::to_string(type_byte));
    state s;
    ar(s);
    return crdt_object{type, std::move(s)};
  });
}

std::string encode_effect(const crdt_effect& effect) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar{out};
    ar(effect_format_version, effect);
  }
  return std::move(out).str();
}

expected<crdt_effect> decode_effect(std::string_view bytes) {
  return decode_with(bytes, [](auto& ar) -> expected<crdt_effect> {
    std::uint8_t version = 0;
    ar(version);
    if (version != effect_format_version)
      return make_error(errc::corrupt, "unknown CRDT effect format version "
                                         + std::to_string(version));
    crdt_effect e;
    ar(e);
    return e;
  });
}

} // namespace tally
