// Seed inputs of fuzz_crdt (fuzz/fuzz_crdt.cpp): for every CRDT type a state
// and an effect with some content, each prefixed by the selector byte the
// target reads (0 state, 1 effect). Used by fuzz/gen_corpus.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "crdt/crdt_codec.hpp"

namespace tally::fuzz {

inline any_update sample_update(crdt_type type) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter: return counter_update{5};
    case crdt_type::flag_ew:
    case crdt_type::flag_dw: return flag_update::enable;
    case crdt_type::lwwreg:
    case crdt_type::mvreg: return register_update{register_assign{"v", {}}};
    case crdt_type::orset:
    case crdt_type::rwset:
    case crdt_type::gset: return set_update{set_add{{"a", "b"}}};
    case crdt_type::bcounter: return b_counter_update{b_counter_increment{3, 1}};
    case crdt_type::gmap:
    case crdt_type::rrmap: {
      map_update m;
      m.updates.push_back({{"s", crdt_type::orset}, set_update{set_add{{"x"}}}});
      m.updates.push_back({{"c", crdt_type::counter}, counter_update{-2}});
      m.updates.push_back({{"f", crdt_type::flag_dw}, flag_update::disable});
      return m;
    }
  }
  return counter_update{1};
}

/// <file name, bytes> for every type.
inline std::vector<std::pair<std::string, std::string>> crdt_corpus() {
  const crdt_type types[] = {
    crdt_type::counter, crdt_type::orset,      crdt_type::lwwreg,
    crdt_type::mvreg,   crdt_type::gmap,       crdt_type::rwset,
    crdt_type::rrmap,   crdt_type::fatcounter, crdt_type::flag_ew,
    crdt_type::flag_dw, crdt_type::bcounter,   crdt_type::gset};
  std::vector<std::pair<std::string, std::string>> out;
  for (auto type : types) {
    auto state = make_state(type);
    downstream_context ctx{token_source{7}, 1'700'000'000'000'000};
    for (int i = 0; i < 2; ++i) {
      auto e = prepare(type, state, sample_update(type), ctx);
      if (e)
        (void)apply(type, state, *e);
    }
    auto effect = prepare(type, state, sample_update(type), ctx);
    const std::string name{to_string(type)};
    out.emplace_back("state_" + name,
                     std::string(1, '\0') + encode_typed_state(type, state));
    if (effect)
      out.emplace_back("effect_" + name,
                       std::string(1, '\1') + encode_typed_effect(type, *effect));
  }
  return out;
}

} // namespace tally::fuzz
