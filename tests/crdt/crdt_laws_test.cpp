// The CRDT laws, checked for every type through the type-generic interface
// (crdt/any_crdt.hpp): convergence under any causal delivery order,
// commutativity of concurrent effects, idempotent re-application, and
// encodings that round-trip and refuse malformed bytes. Seeded: a failure
// prints TALLY_TEST_SEED to replay it.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "crdt/crdt_codec.hpp"
#include "tests/crdt/causal_simulation.hpp"

using namespace tally;
using namespace tally::test;

namespace {

void check_state_round_trip(crdt_type type, const any_state& s) {
  const auto bytes = encode_typed_state(type, s);
  auto back = decode_typed_state(bytes);
  TALLY_REQUIRE_OK(back);
  BOOST_TEST_REQUIRE((back->type == type));
  BOOST_TEST_REQUIRE((back->state == s), "state changed in a round trip");
  BOOST_TEST_REQUIRE(encode_typed_state(type, back->state) == bytes);
}

/// A state of `type` reached by a short random history.
any_state random_state(crdt_type type, seeded_rng& rng, std::size_t steps) {
  causal_simulation sim{type, 3, rng};
  for (std::size_t i = 0; i < steps; ++i)
    sim.step(0.6);
  return sim.states()[rng.uniform(0, 2)];
}

/// The bytes of a random state of `type` and of an effect prepared at it.
std::vector<std::string> random_encodings(crdt_type type, seeded_rng& rng) {
  const auto state = random_state(type, rng, rng.uniform(1, 30));
  downstream_context ctx{token_source{999}, 1};
  auto effect = prepare(type, state, random_update(type, state, 0, rng, {}), ctx);
  TALLY_REQUIRE_OK(effect);
  return {encode_typed_state(type, state), encode_typed_effect(type, *effect)};
}

/// Decodes `bytes` as what the i-th entry of random_encodings holds and
/// re-encodes the result: the error, or the bytes again.
expected<std::string> decode_reencode(std::size_t i, std::string_view bytes) {
  if (i == 0) {
    auto s = decode_typed_state(bytes);
    if (!s)
      return s.err();
    return encode_typed_state(s->type, s->state);
  }
  auto e = decode_typed_effect(bytes);
  if (!e)
    return e.err();
  return encode_typed_effect(e->type, e->effect);
}

} // namespace

BOOST_AUTO_TEST_SUITE(crdt_laws)

BOOST_AUTO_TEST_CASE(replicas_converge_under_any_causal_delivery_order) {
  // 2 to 4 replicas, up to 120 steps, every type.
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (auto type : all_types()) {
      BOOST_TEST_CONTEXT("type " << type) {
        std::size_t prepared = 0;
        for (int round = 0; round < 100; ++round) {
          causal_simulation sim{type, rng.uniform(2, 4), rng};
          const auto steps = rng.uniform(1, 120);
          for (std::uint64_t i = 0; i < steps; ++i)
            sim.step(0.5);
          sim.drain();
          prepared += sim.prepared();
          const auto& states = sim.states();
          for (std::size_t r = 1; r < states.size(); ++r) {
            BOOST_TEST_REQUIRE((states[r] == states[0]),
                               "replica " << r << " differs from replica 0");
            BOOST_TEST_REQUIRE((value_of(states[r]) == value_of(states[0])));
          }
          check_state_round_trip(type, states[0]);
        }
        BOOST_TEST(prepared > 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(reapplying_an_effect_changes_nothing_for_token_types) {
  // Counter effects add, so re-applying counts twice: exactly-once for
  // counters comes from op ids (FBF and journal), not from the effect.
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    update_options o;
    o.idempotent_only = true;
    for (auto type : all_types()) {
      if (is_counter_type(type))
        continue;
      BOOST_TEST_CONTEXT("type " << type) {
        for (int round = 0; round < 20; ++round) {
          causal_simulation sim{type, 3, rng, o};
          sim.check_idempotence(true);
          for (int i = 0; i < 60; ++i)
            sim.step(0.5);
          sim.drain();
          BOOST_TEST_REQUIRE((sim.states()[1] == sim.states()[0]));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(replayed_effects_are_applied_once_by_op_id) {
  // Every type, counters included: replicas that receive effects again
  // (retries, journal replays, resends) and drop them by op id converge to
  // the state of a history without duplicates.
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (auto type : all_types()) {
      BOOST_TEST_CONTEXT("type " << type) {
        std::size_t duplicates = 0;
        for (int round = 0; round < 20; ++round) {
          causal_simulation sim{type, 3, rng};
          sim.redeliver(0.2);
          for (int i = 0; i < 60; ++i)
            sim.step(0.5);
          sim.drain();
          duplicates += sim.duplicates();
          const auto& states = sim.states();
          BOOST_TEST_REQUIRE((states[1] == states[0]));
          BOOST_TEST_REQUIRE((states[2] == states[0]));
        }
        BOOST_TEST(duplicates > 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(concurrent_effects_commute) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (auto type : all_types()) {
      BOOST_TEST_CONTEXT("type " << type) {
        for (int round = 0; round < 40; ++round) {
          const auto base = random_state(type, rng, rng.uniform(0, 30));
          // Effects prepared at the same state by different replicas.
          std::vector<any_effect> effects;
          const auto n = rng.uniform(2, 4);
          update_options o;
          o.replicas = n;
          for (std::uint64_t i = 0; i < n; ++i) {
            downstream_context ctx{token_source{1000 + i}, rng.uniform(1, 3)};
            auto u = random_update(type, base, i, rng, o);
            auto e = prepare(type, base, u, ctx);
            TALLY_REQUIRE_OK(e);
            effects.push_back(std::move(*e));
          }
          auto in_order = base;
          for (const auto& e : effects)
            BOOST_TEST_REQUIRE(apply(type, in_order, e).has_value());
          std::shuffle(effects.begin(), effects.end(), rng.gen);
          auto shuffled = base;
          for (const auto& e : effects)
            BOOST_TEST_REQUIRE(apply(type, shuffled, e).has_value());
          BOOST_TEST_REQUIRE((in_order == shuffled));
          BOOST_TEST_REQUIRE((value_of(in_order) == value_of(shuffled)));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(truncated_or_extended_bytes_are_refused) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (auto type : all_types()) {
      BOOST_TEST_CONTEXT("type " << type) {
        for (int round = 0; round < 10; ++round) {
          const auto encodings = random_encodings(type, rng);
          for (std::size_t i = 0; i < encodings.size(); ++i) {
            const auto& bytes = encodings[i];
            BOOST_TEST_REQUIRE((*decode_reencode(i, bytes) == bytes));
            for (std::size_t len = 0; len < bytes.size(); ++len) {
              auto back = decode_reencode(i, std::string_view{bytes}.substr(0, len));
              BOOST_TEST_REQUIRE(!back.has_value(), "prefix of " << len
                                                     << " bytes accepted");
              BOOST_TEST_REQUIRE((back.err().code() == errc::corrupt));
            }
            auto longer = decode_reencode(i, bytes + '\0');
            BOOST_TEST_REQUIRE(!longer.has_value());
            BOOST_TEST_REQUIRE((longer.err().code() == errc::corrupt));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(corrupted_bytes_are_refused_or_decode_canonically) {
  // Without a checksum (the journal adds one) a flipped byte inside a value
  // can still decode; what must hold is that nothing crashes, refusals are
  // errc::corrupt, and whatever decodes re-encodes to exactly those bytes.
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    std::size_t refused = 0;
    for (auto type : all_types()) {
      BOOST_TEST_CONTEXT("type " << type) {
        for (int round = 0; round < 30; ++round) {
          auto encodings = random_encodings(type, rng);
          for (std::size_t i = 0; i < encodings.size(); ++i) {
            auto& bytes = encodings[i];
            const auto flips = rng.uniform(1, 3);
            for (std::uint64_t f = 0; f < flips; ++f)
              bytes[rng.uniform(0, bytes.size() - 1)] ^=
                static_cast<char>(rng.uniform(1, 255));
            auto back = decode_reencode(i, bytes);
            if (!back) {
              ++refused;
              BOOST_TEST_REQUIRE((back.err().code() == errc::corrupt));
              continue;
            }
            BOOST_TEST_REQUIRE((*back == bytes));
          }
        }
      }
    }
    BOOST_TEST(refused > 0u);
  }
}

BOOST_AUTO_TEST_CASE(unknown_version_or_type_is_refused) {
  auto bytes = encode_typed_state(crdt_type::orset, make_state(crdt_type::orset));
  auto wrong_version = bytes;
  wrong_version[0] = 1; // the Cereal crdt_object format starts so
  BOOST_TEST((decode_typed_state(wrong_version).err().code() == errc::corrupt));
  for (std::uint8_t t : {0, 1, 7, 9, 16, 127, 129, 255}) {
    auto wrong_type = bytes;
    wrong_type[1] = static_cast<char>(t);
    BOOST_TEST((decode_typed_state(wrong_type).err().code() == errc::corrupt));
  }
  BOOST_TEST((decode_typed_effect("").err().code() == errc::corrupt));
}

BOOST_AUTO_TEST_CASE(effects_of_another_type_are_refused_unchanged) {
  auto s = make_state(crdt_type::orset);
  downstream_context ctx{token_source{1}, 1};
  auto e = prepare(crdt_type::flag_ew, make_state(crdt_type::flag_ew),
                   flag_update::enable, ctx);
  BOOST_REQUIRE(e.has_value());
  auto st = apply(crdt_type::orset, s, *e);
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST((st.err().code() == errc::wrong_type));
  BOOST_TEST((s == make_state(crdt_type::orset)));
  auto u = prepare(crdt_type::orset, s, flag_update::enable, ctx);
  BOOST_REQUIRE(!u.has_value());
  BOOST_TEST((u.err().code() == errc::wrong_type));
}

BOOST_AUTO_TEST_SUITE_END()
