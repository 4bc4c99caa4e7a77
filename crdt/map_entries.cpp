#include "crdt/map_entries.hpp"

#include <algorithm>

namespace tally::map_entries {

namespace {

template <class Entries>
auto position(Entries& entries, const map_key& key) {
  return std::lower_bound(entries.begin(), entries.end(), key,
                          [](const keyed_state& e, const map_key& k) {
                            return e.key < k;
                          });
}

/// True when `u`, counted as one level, nests maps more than `levels` deep;
/// recurses at most `levels` deep whatever the input.
bool deeper_than(const map_update& u, int levels) {
  if (levels <= 0)
    return true;
  for (const auto& ku : u.updates)
    if (const auto* inner = std::get_if<map_update>(&ku.update))
      if (deeper_than(*inner, levels - 1))
        return true;
  return false;
}

} // namespace

status check_depth(const map_update& update) {
  if (deeper_than(update, byte_reader::max_depth))
    return make_error(errc::invalid_argument,
                      "maps nested deeper than "
                        + std::to_string(byte_reader::max_depth)
                        + " levels");
  return {};
}

const keyed_state* find(const std::vector<keyed_state>& entries,
                        const map_key& key) {
  auto it = position(entries, key);
  return it != entries.end() && it->key == key ? &*it : nullptr;
}

status check_distinct(std::vector<map_key> keys) {
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end())
    return make_error(errc::invalid_argument,
                      "map key " + dup->key.substr(0, 64) + " of type "
                        + std::string{to_string(dup->type)}
                        + " is named twice in one map operation");
  return {};
}

expected<std::vector<keyed_effect>>
prepare_nested(const std::vector<keyed_state>& entries,
               const std::vector<keyed_update>& updates,
               downstream_context& ctx) {
  std::vector<keyed_effect> out;
  out.reserve(updates.size());
  for (const auto& u : updates) {
    if (!is_known_type(u.key.type))
      return make_error(errc::wrong_type, "map key " + u.key.key.substr(0, 64)
                                            + " names an unknown CRDT type");
    const auto* entry = find(entries, u.key);
    auto e = entry ? prepare(u.key.type, entry->state, u.update, ctx)
                   : prepare(u.key.type, make_state(u.key.type), u.update, ctx);
    if (!e)
      return e.err();
    out.push_back({u.key, std::move(*e)});
  }
  std::sort(out.begin(), out.end(),
            [](const keyed_effect& a, const keyed_effect& b) {
              return a.key < b.key;
            });
  return out;
}

expected<std::vector<keyed_state>>
stage(const std::vector<keyed_state>& entries,
      const std::vector<keyed_effect>& effects, bool create) {
  std::vector<keyed_state> out;
  out.reserve(effects.size());
  for (const auto& e : effects) {
    const auto* entry = find(entries, e.key);
    if (!entry && !create)
      continue;
    keyed_state next{e.key, entry ? entry->state : make_state(e.key.type)};
    if (auto st = apply(e.key.type, next.state, e.effect); !st)
      return st.err();
    out.push_back(std::move(next));
  }
  return out;
}

void commit(std::vector<keyed_state>& entries, std::vector<keyed_state> staged,
            bool drop_bottom) {
  for (auto& s : staged) {
    auto it = position(entries, s.key);
    const bool present = it != entries.end() && it->key == s.key;
    if (drop_bottom && is_bottom(s.state)) {
      if (present)
        entries.erase(it);
    } else if (present) {
      it->state = std::move(s.state);
    } else {
      entries.insert(it, std::move(s));
    }
  }
}

map_value value(const std::vector<keyed_state>& entries) {
  map_value out;
  out.entries.reserve(entries.size());
  for (const auto& e : entries)
    out.entries.push_back({e.key, value_of(e.state)});
  return out;
}

void write_key(byte_writer& out, const map_key& key) {
  out.bytes(key.key);
  write_type(out, key.type);
}

map_key read_key(byte_reader& in) {
  map_key k;
  k.key = in.bytes();
  k.type = read_type(in);
  return k;
}

void write_entries(byte_writer& out, const std::vector<keyed_state>& entries) {
  out.varint(entries.size());
  for (const auto& e : entries) {
    write_key(out, e.key);
    encode_state(out, e.key.type, e.state);
  }
}

std::vector<keyed_state> read_entries(byte_reader& in, bool refuse_bottom) {
  std::vector<keyed_state> out;
  if (!in.enter())
    return out;
  const auto n = in.count(3); // key length, type, a one-byte state at least
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto key = read_key(in);
    if (!in.ok())
      break;
    if (!out.empty() && !(out.back().key < key)) {
      in.fail("map keys out of order or repeated");
      break;
    }
    auto state = decode_state(in, key.type);
    if (in.ok() && refuse_bottom && is_bottom(state)) {
      in.fail("rrmap entry at its initial state");
      break;
    }
    out.push_back({std::move(key), std::move(state)});
  }
  in.leave();
  return out;
}

void write_effects(byte_writer& out, const std::vector<keyed_effect>& effects) {
  out.varint(effects.size());
  for (const auto& e : effects) {
    write_key(out, e.key);
    encode_effect(out, e.key.type, e.effect);
  }
}

std::vector<keyed_effect> read_effects(byte_reader& in) {
  std::vector<keyed_effect> out;
  if (!in.enter())
    return out;
  const auto n = in.count(3);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto key = read_key(in);
    if (!in.ok())
      break;
    if (!out.empty() && !(out.back().key < key)) {
      in.fail("map effect keys out of order or repeated");
      break;
    }
    auto effect = decode_effect(in, key.type);
    out.push_back({std::move(key), std::move(effect)});
  }
  in.leave();
  return out;
}

} // namespace tally::map_entries
