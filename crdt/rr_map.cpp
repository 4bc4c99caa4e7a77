#include "crdt/rr_map.hpp"

#include "crdt/map_entries.hpp"

namespace tally {

void rr_map_effect::encode(byte_writer& out) const {
  map_entries::write_effects(out, updates);
  map_entries::write_effects(out, removes);
}

rr_map_effect rr_map_effect::decode(byte_reader& in) {
  rr_map_effect e;
  e.updates = map_entries::read_effects(in);
  e.removes = map_entries::read_effects(in);
  if (in.ok()) {
    std::vector<map_key> keys;
    for (const auto* list : {&e.updates, &e.removes})
      for (const auto& k : *list)
        keys.push_back(k.key);
    if (!map_entries::check_distinct(std::move(keys)))
      in.fail("rrmap effect names a key twice");
  }
  return e;
}

expected<rr_map_effect> rr_map::prepare(const map_update& update,
                                        downstream_context& ctx) const {
  if (auto st = map_entries::check_depth(update); !st)
    return st.err();
  std::vector<map_key> removes = update.removes;
  if (update.reset) {
    if (!update.updates.empty() || !update.removes.empty())
      return make_error(errc::invalid_argument,
                        "an rrmap reset takes no updates or removes with it");
    for (const auto& e : entries_)
      removes.push_back(e.key);
  }
  std::vector<map_key> keys = removes;
  for (const auto& u : update.updates)
    keys.push_back(u.key);
  if (auto st = map_entries::check_distinct(std::move(keys)); !st)
    return st.err();

  rr_map_effect out;
  auto updates = map_entries::prepare_nested(entries_, update.updates, ctx);
  if (!updates)
    return updates.err();
  out.updates = std::move(*updates);

  std::vector<keyed_update> resets;
  for (const auto& key : removes) {
    if (!is_known_type(key.type))
      return make_error(errc::wrong_type, "map key " + key.key.substr(0, 64)
                                            + " names an unknown CRDT type");
    // An entry this replica does not hold has nothing to reset; a type
    // without a reset is left as it is (AntidoteDB's `none`).
    auto reset = reset_update(key.type);
    if (reset && find(key))
      resets.push_back({key, std::move(*reset)});
  }
  auto removed = map_entries::prepare_nested(entries_, resets, ctx);
  if (!removed)
    return removed.err();
  out.removes = std::move(*removed);
  return out;
}

status rr_map::apply(const rr_map_effect& effect) {
  auto updated = map_entries::stage(entries_, effect.updates, true);
  if (!updated)
    return updated.err();
  auto removed = map_entries::stage(entries_, effect.removes, false);
  if (!removed)
    return removed.err();
  // Keys are distinct across both lists, so the order of commits is free.
  map_entries::commit(entries_, std::move(*updated), true);
  map_entries::commit(entries_, std::move(*removed), true);
  return {};
}

map_value rr_map::value() const { return map_entries::value(entries_); }

const keyed_state* rr_map::find(const map_key& key) const {
  return map_entries::find(entries_, key);
}

void rr_map::encode(byte_writer& out) const {
  map_entries::write_entries(out, entries_);
}

rr_map rr_map::decode(byte_reader& in) {
  rr_map m;
  m.entries_ = map_entries::read_entries(in, true);
  return m;
}

} // namespace tally
