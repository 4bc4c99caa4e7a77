#include "crdt/any_crdt.hpp"

#include <string>
#include <type_traits>

namespace tally {

namespace {

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

error wrong_type(crdt_type type, const char* what) {
  return make_error(errc::wrong_type, std::string{what}
                                        + " does not fit an object of type "
                                        + std::string{to_string(type)});
}

/// Calls `call(state, update)` when both hold the alternatives of `type`.
template <class State, class Update, class Call>
expected<any_effect> prepare_as(crdt_type type, const any_state& s,
                                const any_update& u, Call call) {
  const auto* st = std::get_if<State>(&s);
  if (!st)
    return wrong_type(type, "the stored state");
  const auto* up = std::get_if<Update>(&u);
  if (!up)
    return wrong_type(type, "the update");
  auto e = call(*st, *up);
  if (!e)
    return e.err();
  return any_effect{std::move(*e)};
}

template <class State, class Effect>
status apply_as(crdt_type type, any_state& s, const any_effect& e) {
  auto* st = std::get_if<State>(&s);
  if (!st)
    return wrong_type(type, "the stored state");
  const auto* ef = std::get_if<Effect>(&e);
  if (!ef)
    return wrong_type(type, "the effect");
  return st->apply(*ef);
}

} // namespace

bool is_known_type(crdt_type type) noexcept {
  crdt_type wire;
  return type == crdt_type::gset
         || (crdt_type_from_wire(static_cast<std::uint32_t>(type), wire)
             && wire == type);
}

any_state make_state(crdt_type type) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter: return pn_counter{};
    case crdt_type::orset: return aw_set{};
    case crdt_type::lwwreg: return lww_register{};
    case crdt_type::mvreg: return mv_register{};
    case crdt_type::gmap: return g_map{};
    case crdt_type::rwset: return rw_set{};
    case crdt_type::rrmap: return rr_map{};
    case crdt_type::flag_ew: return flag_ew{};
    case crdt_type::flag_dw: return flag_dw{};
    case crdt_type::bcounter: return b_counter{};
    case crdt_type::gset: return g_set{};
  }
  return pn_counter{}; // unreachable for a valid crdt_type
}

expected<any_effect> prepare(crdt_type type, const any_state& state,
                             const any_update& update, downstream_context& ctx) {
  auto with_ctx = [&ctx](const auto& st, const auto& up) {
    return st.prepare(up, ctx);
  };
  auto without_ctx = [](const auto& st, const auto& up) {
    return st.prepare(up);
  };
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter:
      return prepare_as<pn_counter, counter_update>(type, state, update,
                                                    without_ctx);
    case crdt_type::orset:
      return prepare_as<aw_set, set_update>(type, state, update, with_ctx);
    case crdt_type::lwwreg:
      return prepare_as<lww_register, register_update>(type, state, update,
                                                       with_ctx);
    case crdt_type::mvreg:
      return prepare_as<mv_register, register_update>(type, state, update,
                                                      with_ctx);
    case crdt_type::gmap:
      return prepare_as<g_map, map_update>(type, state, update, with_ctx);
    case crdt_type::rwset:
      return prepare_as<rw_set, set_update>(type, state, update, with_ctx);
    case crdt_type::rrmap:
      return prepare_as<rr_map, map_update>(type, state, update, with_ctx);
    case crdt_type::flag_ew:
      return prepare_as<flag_ew, flag_update>(type, state, update, with_ctx);
    case crdt_type::flag_dw:
      return prepare_as<flag_dw, flag_update>(type, state, update, with_ctx);
    case crdt_type::bcounter:
      return prepare_as<b_counter, b_counter_update>(type, state, update,
                                                     without_ctx);
    case crdt_type::gset:
      return prepare_as<g_set, set_update>(type, state, update, with_ctx);
  }
  return wrong_type(type, "an unknown type number");
}

status apply(crdt_type type, any_state& state, const any_effect& effect) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter:
      return apply_as<pn_counter, counter_effect>(type, state, effect);
    case crdt_type::orset: return apply_as<aw_set, aw_set_effect>(type, state, effect);
    case crdt_type::lwwreg:
      return apply_as<lww_register, lww_effect>(type, state, effect);
    case crdt_type::mvreg:
      return apply_as<mv_register, mv_effect>(type, state, effect);
    case crdt_type::gmap: return apply_as<g_map, g_map_effect>(type, state, effect);
    case crdt_type::rwset: return apply_as<rw_set, rw_set_effect>(type, state, effect);
    case crdt_type::rrmap: return apply_as<rr_map, rr_map_effect>(type, state, effect);
    case crdt_type::flag_ew:
      return apply_as<flag_ew, flag_ew_effect>(type, state, effect);
    case crdt_type::flag_dw:
      return apply_as<flag_dw, flag_dw_effect>(type, state, effect);
    case crdt_type::bcounter:
      return apply_as<b_counter, b_counter_effect>(type, state, effect);
    case crdt_type::gset: return apply_as<g_set, g_set_effect>(type, state, effect);
  }
  return wrong_type(type, "an unknown type number");
}

any_value value_of(const any_state& state) {
  return std::visit([](const auto& s) -> any_value { return s.value(); }, state);
}

bool is_bottom(const any_state& state) {
  return std::visit(
    overloaded{[](const pn_counter& c) { return c.value() == 0; },
               [](const auto& s) { return s.is_bottom(); }},
    state);
}

std::optional<any_update> reset_update(crdt_type type) {
  switch (type) {
    case crdt_type::flag_ew:
    case crdt_type::flag_dw: return any_update{flag_update::reset};
    case crdt_type::lwwreg:
    case crdt_type::mvreg: return any_update{register_update{register_reset{}}};
    case crdt_type::orset:
    case crdt_type::rwset: return any_update{set_update{set_reset{}}};
    case crdt_type::rrmap: {
      map_update u;
      u.reset = true;
      return any_update{std::move(u)};
    }
    default: return std::nullopt;
  }
}

void encode_state(byte_writer& out, crdt_type, const any_state& state) {
  std::visit(overloaded{[&](const pn_counter& c) { out.svarint(c.value()); },
                        [&](const auto& s) { s.encode(out); }},
             state);
}

any_state decode_state(byte_reader& in, crdt_type type) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter: return pn_counter{in.svarint()};
    case crdt_type::orset: return aw_set::decode(in);
    case crdt_type::lwwreg: return lww_register::decode(in);
    case crdt_type::mvreg: return mv_register::decode(in);
    case crdt_type::gmap: return g_map::decode(in);
    case crdt_type::rwset: return rw_set::decode(in);
    case crdt_type::rrmap: return rr_map::decode(in);
    case crdt_type::flag_ew: return flag_ew::decode(in);
    case crdt_type::flag_dw: return flag_dw::decode(in);
    case crdt_type::bcounter: return b_counter::decode(in);
    case crdt_type::gset: return g_set::decode(in);
  }
  in.fail("unknown type number");
  return pn_counter{};
}

void encode_effect(byte_writer& out, crdt_type, const any_effect& effect) {
  std::visit(overloaded{[&](const counter_effect& c) { out.svarint(c.delta); },
                        [&](const auto& e) { e.encode(out); }},
             effect);
}

any_effect decode_effect(byte_reader& in, crdt_type type) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter: return counter_effect{in.svarint()};
    case crdt_type::orset: return aw_set_effect::decode(in);
    case crdt_type::lwwreg: return lww_effect::decode(in);
    case crdt_type::mvreg: return mv_effect::decode(in);
    case crdt_type::gmap: return g_map_effect::decode(in);
    case crdt_type::rwset: return rw_set_effect::decode(in);
    case crdt_type::rrmap: return rr_map_effect::decode(in);
    case crdt_type::flag_ew: return flag_ew_effect::decode(in);
    case crdt_type::flag_dw: return flag_dw_effect::decode(in);
    case crdt_type::bcounter: return b_counter_effect::decode(in);
    case crdt_type::gset: return g_set_effect::decode(in);
  }
  in.fail("unknown type number");
  return counter_effect{};
}

crdt_type read_type(byte_reader& in) {
  const auto b = in.u8();
  const auto type = static_cast<crdt_type>(b);
  if (!in.ok())
    return crdt_type::counter;
  if (!is_known_type(type)) {
    in.fail("unknown CRDT type number " + std::to_string(b));
    return crdt_type::counter;
  }
  return type;
}

void write_type(byte_writer& out, crdt_type type) {
  out.u8(static_cast<std::uint8_t>(type));
}

} // namespace tally
