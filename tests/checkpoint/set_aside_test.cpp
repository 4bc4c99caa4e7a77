// Transactions set aside by checkpoints (issue 13; docs/STORAGE.md,
// "Set-aside transactions"): prepared long ago with their coordinator
// silent, they no longer hold the truncation LSN back. Their records move
// whole to the log's end when the log is truncated under them, and a late
// commit (at a time the checkpoint has passed) is folded straight into the
// checkpoint store, never indexed.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

namespace {

checkpoint_bounds bounds(tally::journal& j, std::uint64_t time, std::set<tx_id> aside) {
  checkpoint_bounds b;
  b.checkpoint_time = vector_clock{{1, time}};
  b.replicated_lsn = j.next_lsn() - 1;
  b.fbf_horizon_us = std::numeric_limits<std::uint64_t>::max();
  b.set_aside = std::move(aside);
  return b;
}

std::int64_t value_of(checkpoint_store& cs, const object_key& k) {
  auto image = cs.load(k);
  BOOST_REQUIRE_MESSAGE(image.has_value(), test::describe(image));
  std::int64_t v = 0;
  if (image->base)
    v = std::get<std::int64_t>(image->base->object.value());
  return v + test::sum(image->effects);
}

const tx_id x{9, 1};

// x: update of key 1 (+4) and prepare (LSNs 1, 2); then tx i = 1..3 adds i
// to key 2 and commits at time 10 i (LSNs 3..8).
void stuck_then_commits(tally::journal& j) {
  BOOST_REQUIRE(j.append({update(x, key(1), 4), prepare_record{x, 5, {0, 1}, "tally@h:1"}})
                  .has_value());
  for (std::uint64_t i = 1; i <= 3; ++i)
    BOOST_REQUIRE(j.append({update(tx_id{1, i}, key(2), static_cast<std::int64_t>(i)),
                            commit(tx_id{1, i}, 10 * i)})
                    .has_value());
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_set_aside)

BOOST_AUTO_TEST_CASE(a_set_aside_transaction_moves_whole_to_the_log_end) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    stuck_then_commits(*j);
    // Not set aside: x holds the log from LSN 1 on.
    auto held = cs.checkpoint(bounds(*j, 100, {}));
    BOOST_REQUIRE(held.has_value());
    BOOST_TEST(held->truncation_lsn == 1u);
    BOOST_TEST((held->limited_by == truncation_limit::undecided));
    // Set aside: everything else is folded and dropped, x's two records are
    // appended again (LSNs 9, 10) and the rest of the log goes.
    auto r = cs.checkpoint(bounds(*j, 100, {x}));
    BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
    BOOST_TEST(r->records_relocated == 2u);
    BOOST_TEST(j->truncation_lsn() == 9u);
    BOOST_TEST(j->next_lsn() == 11u);
    BOOST_REQUIRE(j->last_relocation().size() == 1u);
    BOOST_TEST((j->last_relocation()[0].updates == std::vector<lsn>{9}));
    BOOST_TEST(j->last_relocation()[0].prepare == 10u);
    BOOST_TEST(j->undecided().at(x).first_lsn == 9u);
    BOOST_TEST(value_of(cs, key(2)) == 6);
  }
  // Recovery finds x prepared, as it was, from its moved records.
  auto o = open_ok(options(path));
  BOOST_REQUIRE(o.recovery.undecided.size() == 1u);
  const auto& u = o.recovery.undecided[0];
  BOOST_TEST((u.tx == x));
  BOOST_REQUIRE(u.prepare.has_value());
  BOOST_TEST(u.prepare->prepare_time == 5u);
  BOOST_TEST(u.prepare->coordinator == "tally@h:1");
  BOOST_REQUIRE(u.updates.size() == 1u);
  BOOST_TEST(u.updates[0].first == 9u);
  BOOST_TEST(std::get<counter_effect>(u.updates[0].second.effect).delta == 4);
}

// A transaction with records on both sides of the cut does not move (it
// would be in the log twice): it holds the cut back to its first record.
BOOST_AUTO_TEST_CASE(a_set_aside_transaction_split_by_the_cut_holds_it_back) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  BOOST_REQUIRE(j->append({update(x, key(1), 4)}).has_value()); // LSN 1
  for (std::uint64_t i = 1; i <= 2; ++i)                          // LSNs 2-5
    BOOST_REQUIRE(j->append({update(tx_id{1, i}, key(2), 1), commit(tx_id{1, i}, 10 * i)})
                    .has_value());
  BOOST_REQUIRE(j->append({prepare_record{x, 25, {0, 1}, "tally@h:1"}}).has_value()); // LSN 6
  auto b = bounds(*j, 100, {x});
  b.replicated_lsn = 3; // the cut at most 4: x's update below, its prepare above
  auto r = cs.checkpoint(b);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->records_relocated == 0u);
  BOOST_TEST(r->truncation_lsn == 1u);
  BOOST_TEST(j->last_relocation().empty());
}

// A late commit: refused without the fold, folded into the store with it,
// not indexed, and found again after a reopen and after later checkpoints.
BOOST_AUTO_TEST_CASE(a_late_commit_is_folded_into_the_store) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    stuck_then_commits(*j);
    BOOST_REQUIRE(cs.checkpoint(bounds(*j, 100, {x})).has_value());
    // x commits at 50 <= C = 100.
    auto refused = j->append({commit(x, 50)});
    BOOST_REQUIRE(!refused.has_value());
    BOOST_TEST(refused.err().code() == errc::invalid_argument);
    int folds = 0;
    auto fold = [&](storage_txn& txn, const commit_record& c, lsn at) -> status {
      ++folds;
      committed_effect e;
      e.tx = c.tx;
      e.commit_time = c.commit_time;
      e.effect = counter_effect{4};
      e.commit_position = at;
      return cs.fold_late(txn, {{key(1), e}});
    };
    auto r = j->append({commit(x, 50)}, fold);
    BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
    BOOST_TEST(folds == 1);
    BOOST_TEST(value_of(cs, key(1)) == 4); // in the entry, at C
    auto entry = cs.get(key(1));
    BOOST_REQUIRE(entry.has_value() && entry->has_value());
    BOOST_TEST(((*entry)->version.time == vector_clock{{1, 100}}));
    auto indexed = j->read_committed(key(1));
    BOOST_REQUIRE(indexed.has_value());
    BOOST_TEST(indexed->empty()); // never indexed
    BOOST_TEST(j->undecided().empty());
    auto d = j->find_decision(x);
    BOOST_REQUIRE(d.has_value() && d->has_value());
    BOOST_TEST((*d)->time == 50u);
    // One-step commits and unknown transactions stay refused at <= C.
    auto other = j->append({update(tx_id{2, 1}, key(3), 1), commit(tx_id{2, 1}, 60)}, fold);
    BOOST_REQUIRE(!other.has_value());
    BOOST_TEST(folds == 1);
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.undecided.empty());
  checkpoint_store cs{*o.log};
  BOOST_TEST(value_of(cs, key(1)) == 4);
  BOOST_TEST(value_of(cs, key(2)) == 6);
  // A later checkpoint drops x's records and keeps its value.
  BOOST_REQUIRE(o.log->append({update(tx_id{3, 1}, key(1), 1), commit(tx_id{3, 1}, 150)})
                  .has_value());
  BOOST_REQUIRE(cs.checkpoint(bounds(*o.log, 200, {})).has_value());
  BOOST_TEST(o.log->truncation_lsn() == o.log->next_lsn());
  BOOST_TEST(value_of(cs, key(1)) == 5);
}

BOOST_AUTO_TEST_SUITE_END()
