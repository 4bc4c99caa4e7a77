#include "crdt/g_map.hpp"

#include "crdt/map_entries.hpp"

namespace tally {

void g_map_effect::encode(byte_writer& out) const {
  map_entries::write_effects(out, updates);
}

g_map_effect g_map_effect::decode(byte_reader& in) {
  return {map_entries::read_effects(in)};
}

expected<g_map_effect> g_map::prepare(const map_update& update,
                                      downstream_context& ctx) const {
  if (!update.removes.empty() || update.reset)
    return make_error(errc::wrong_type, "a grow-only map (gmap) takes "
                                        "updates only, not remove or reset");
  if (auto st = map_entries::check_depth(update); !st)
    return st.err();
  std::vector<map_key> keys;
  for (const auto& u : update.updates)
    keys.push_back(u.key);
  if (auto st = map_entries::check_distinct(std::move(keys)); !st)
    return st.err();
  auto effects = map_entries::prepare_nested(entries_, update.updates, ctx);
  if (!effects)
    return effects.err();
  return g_map_effect{std::move(*effects)};
}

status g_map::apply(const g_map_effect& effect) {
  auto staged = map_entries::stage(entries_, effect.updates, true);
  if (!staged)
    return staged.err();
  map_entries::commit(entries_, std::move(*staged), false);
  return {};
}

map_value g_map::value() const { return map_entries::value(entries_); }

const keyed_state* g_map::find(const map_key& key) const {
  return map_entries::find(entries_, key);
}

void g_map::encode(byte_writer& out) const {
  map_entries::write_entries(out, entries_);
}

g_map g_map::decode(byte_reader& in) {
  g_map m;
  m.entries_ = map_entries::read_entries(in, false);
  return m;
}

} // namespace tally
