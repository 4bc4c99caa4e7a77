// A few replicas of one object that prepare random operations and exchange
// their effects with causal delivery in a random (seeded) order: the setting
// AntidoteDB's CRDTs are specified for. Effects that are concurrent (neither
// saw the other) arrive in different orders at different replicas; once
// every effect is everywhere, the replicas must agree.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "crdt/crdt_codec.hpp"
#include "crdt/op_id.hpp"
#include "tests/crdt/random_updates.hpp"

/// Fails the test with the error's text unless `result` (an expected<T> or
/// status) holds a value. (BOOST_TEST's message argument is evaluated even
/// when the check passes, so it cannot call err() itself.)
#define TALLY_REQUIRE_OK(result)                                              \
  do {                                                                        \
    if (!(result))                                                            \
      BOOST_FAIL((result).err().to_string());                                 \
  } while (false)

namespace tally::test {

class causal_simulation {
public:
  struct sent_effect {
    op_id id; // <origin, index in the origin's log>
    std::vector<std::size_t> deps; // effects of each origin seen at prepare
    any_effect effect;
  };

  causal_simulation(crdt_type type, std::size_t replicas, seeded_rng& rng,
                    update_options opts = {})
      : type_(type), rng_(rng), opts_(opts),
        states_(replicas, make_state(type)),
        seen_(replicas, std::vector<std::size_t>(replicas, 0)),
        applied_(replicas), log_(replicas) {
    opts_.replicas = replicas;
  }

  /// With probability `p` per step, a replica receives again an effect it
  /// already applied (a client retry, a journal replay, a replica resend)
  /// and must recognise it by its op id, as the partition does.
  void redeliver(double p) { p_redeliver_ = p; }

  /// Re-applies each delivered effect once more and checks that nothing
  /// changes (for types whose effects are idempotent).
  void check_idempotence(bool on) { check_idempotence_ = on; }

  /// One step: a random replica prepares an operation (probability
  /// `p_prepare`) or receives one effect that is causally ready.
  void step(double p_prepare) {
    const auto r = rng_.uniform(0, states_.size() - 1);
    if (p_redeliver_ > 0 && rng_.chance(p_redeliver_))
      redeliver_one(r);
    else if (rng_.chance(p_prepare))
      prepare_at(r);
    else
      deliver_one(r);
  }

  /// Delivers everything everywhere, in random causal order.
  void drain() {
    for (;;) {
      std::vector<std::size_t> behind;
      for (std::size_t r = 0; r < states_.size(); ++r)
        if (!ready(r).empty())
          behind.push_back(r);
      if (behind.empty())
        return;
      deliver_one(behind[rng_.uniform(0, behind.size() - 1)]);
    }
  }

  const std::vector<any_state>& states() const { return states_; }
  std::size_t prepared() const { return prepared_; }
  std::size_t refused() const { return refused_; }
  std::size_t duplicates() const { return duplicates_; }

private:
  void prepare_at(std::size_t r) {
    auto update = random_update(type_, states_[r], r, rng_, opts_);
    // Small clock steps, shared across replicas: equal timestamps happen.
    downstream_context ctx{token_source{next_origin_++}, now_us_};
    now_us_ += rng_.uniform(0, 1);
    auto effect = prepare(type_, states_[r], update, ctx);
    if (!effect) {
      ++refused_;
      BOOST_TEST_REQUIRE((effect.err().code() == errc::no_permissions));
      return;
    }
    ++prepared_;
    check_round_trip(*effect);
    log_[r].push_back({op_id{r, log_[r].size()}, seen_[r], *effect});
    receive(r, log_[r].back());
    ++seen_[r][r];
  }

  /// Origins whose next effect replica r can apply now.
  std::vector<std::size_t> ready(std::size_t r) const {
    std::vector<std::size_t> out;
    for (std::size_t o = 0; o < log_.size(); ++o) {
      if (o == r || seen_[r][o] >= log_[o].size())
        continue;
      const auto& deps = log_[o][seen_[r][o]].deps;
      bool ok = true;
      for (std::size_t i = 0; i < deps.size() && ok; ++i)
        ok = i == o || seen_[r][i] >= deps[i];
      if (ok)
        out.push_back(o);
    }
    return out;
  }

  void deliver_one(std::size_t r) {
    auto origins = ready(r);
    if (origins.empty())
      return;
    const auto o = origins[rng_.uniform(0, origins.size() - 1)];
    receive(r, log_[o][seen_[r][o]]);
    ++seen_[r][o];
  }

  void redeliver_one(std::size_t r) {
    const auto o = rng_.uniform(0, log_.size() - 1);
    if (seen_[r][o] == 0)
      return;
    receive(r, log_[o][rng_.uniform(0, seen_[r][o] - 1)]);
  }

  /// Applies an effect unless its op id was applied here before.
  void receive(std::size_t r, const sent_effect& e) {
    if (!applied_[r].insert(e.id).second) {
      ++duplicates_;
      return;
    }
    apply_checked(r, e.effect);
  }

  void apply_checked(std::size_t r, const any_effect& e) {
    auto st = apply(type_, states_[r], e);
    TALLY_REQUIRE_OK(st);
    if (check_idempotence_) {
      auto again = states_[r];
      BOOST_TEST_REQUIRE(apply(type_, again, e).has_value());
      BOOST_TEST_REQUIRE((again == states_[r]),
                         "applying an effect twice changed the state");
    }
    if (type_ == crdt_type::bcounter)
      BOOST_TEST_REQUIRE(std::get<std::int64_t>(value_of(states_[r])) >= 0);
  }

  void check_round_trip(const any_effect& e) const {
    const auto bytes = encode_typed_effect(type_, e);
    auto back = decode_typed_effect(bytes);
    if (!back)
      BOOST_FAIL("effect of " << type_ << " refused after encoding: "
                              << back.err().to_string());
    BOOST_TEST_REQUIRE((back->type == type_));
    BOOST_TEST_REQUIRE((back->effect == e), "effect changed in a round trip");
  }

  crdt_type type_;
  seeded_rng& rng_;
  update_options opts_;
  std::vector<any_state> states_;
  std::vector<std::vector<std::size_t>> seen_; // [replica][origin]
  std::vector<std::set<op_id>> applied_;       // [replica]
  std::vector<std::vector<sent_effect>> log_;  // [origin]
  std::uint64_t next_origin_ = 1;
  std::uint64_t now_us_ = 1;
  std::size_t prepared_ = 0;
  std::size_t refused_ = 0;
  bool check_idempotence_ = false;
  double p_redeliver_ = 0;
  std::size_t duplicates_ = 0;
};

} // namespace tally::test
