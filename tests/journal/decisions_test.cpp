// The decision index (`decisions`, docs/FORMAT.md "Decision index"; issue
// 13): how each transaction prepared at a partition ended there, found with
// one lookup, kept through checkpoints for a while, through reopening and
// through a cut tail, and backfilled for a store written before it existed.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "journal/codec.hpp"
#include "journal/journal.hpp"
#include "journal/lmdb_env.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

namespace {

std::optional<decision_entry> find(tally::journal& j, tx_id tx) {
  auto r = j.find_decision(tx);
  BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
  return *r;
}

std::uint64_t entries(tally::journal& j) {
  auto st = j.stats();
  BOOST_REQUIRE(st.has_value());
  return st->decisions.entries;
}

prepare_record prepare(tx_id tx, std::uint64_t time) {
  return prepare_record{tx, time, {0, 1}, "tally@127.0.0.1:9000"};
}

// A two-phase transaction: update, prepare at `time`, commit at `time` + 1.
std::vector<journal_record> two_phase(tx_id tx, std::uint64_t time) {
  return {update(tx, key(1), 1), prepare(tx, time), commit(tx, time + 1)};
}

status no_writes(storage_txn&) {
  return {};
}

// Truncates the whole log with checkpoint time `c` and decision horizon `h`.
status fold_all(tally::journal& j, std::uint64_t c, std::uint64_t h) {
  truncation_plan plan;
  plan.new_truncation_lsn = j.next_lsn();
  plan.checkpoint_time = vector_clock{{1, c}};
  plan.decisions_kept_from = h;
  return j.apply_checkpoint(plan, no_writes);
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal_decisions)

BOOST_AUTO_TEST_CASE(prepared_transactions_record_their_commit_or_abort_and_others_do_not) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  tx_id a{1, 1}, b{1, 2}, c{1, 3}, d{1, 4};
  // a and b prepare in one batch and are decided in the next; c commits in
  // one step (no prepare: no other participant can ask); d stays prepared.
  BOOST_REQUIRE(j->append({update(a, key(1), 1), prepare(a, 5), update(b, key(2), 1),
                           prepare(b, 6), update(c, key(3), 1), update(d, key(4), 1),
                           prepare(d, 7)})
                  .has_value());
  auto r = j->append({commit(a, 9), abort_record{b}, commit(c, 10)});
  BOOST_REQUIRE(r.has_value());
  auto fa = find(*j, a);
  BOOST_REQUIRE(fa);
  BOOST_TEST((fa->outcome == tx_outcome::committed));
  BOOST_TEST(fa->time == 9u);
  BOOST_TEST(fa->at == r->first);
  auto fb = find(*j, b);
  BOOST_REQUIRE(fb);
  BOOST_TEST((fb->outcome == tx_outcome::aborted));
  BOOST_TEST(fb->time == 6u); // its prepare time here
  BOOST_TEST(!find(*j, c));
  BOOST_TEST(!find(*j, d));
  BOOST_TEST(!find(*j, tx_id{9, 9}));
  BOOST_TEST(entries(*j) == 2u);
  BOOST_TEST(j->decisions_kept_from() == 0u); // a new store keeps them all
}

BOOST_AUTO_TEST_CASE(a_failed_append_records_no_decision) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  tx_id a{1, 1};
  BOOST_REQUIRE(j->append({update(a, key(1), 1), prepare(a, 5)}).has_value());
  // The commit is refused with its batch (a key too long to index).
  auto bad = j->append({update(tx_id{1, 2}, object_key{"b", std::string(600, 'k')}, 1),
                        commit(a, 9)});
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(!find(*j, a));
  BOOST_TEST(entries(*j) == 0u);
}

BOOST_AUTO_TEST_CASE(decisions_survive_a_reopen_and_a_cut_commit_takes_its_decision) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append(two_phase(tx_id{1, 1}, 10)).has_value()); // LSNs 1-3
    BOOST_REQUIRE(j->append(two_phase(tx_id{1, 2}, 20)).has_value()); // LSNs 4-6
  }
  {
    auto o = open_ok(options(path));
    BOOST_TEST(o.recovery.decisions_backfilled == 0u); // nothing to backfill
    BOOST_TEST(find(*o.log, tx_id{1, 1})->time == 11u);
    BOOST_TEST(find(*o.log, tx_id{1, 2})->time == 21u);
  }
  { // Tear tx 2's commit record (LSN 6), as recovery_test does.
    auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    auto raw = (*txn)->get(store_db::journal, lsn_key(6));
    BOOST_REQUIRE(raw.has_value() && raw->has_value());
    std::string bytes{**raw};
    bytes.resize(bytes.size() / 2);
    BOOST_REQUIRE((*txn)->put(store_db::journal, lsn_key(6), bytes).has_value());
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.cut_records == 1u);
  BOOST_TEST(find(*o.log, tx_id{1, 1})->time == 11u);
  BOOST_TEST(!find(*o.log, tx_id{1, 2})); // undecided again
  BOOST_REQUIRE(o.recovery.undecided.size() == 1u);
  BOOST_TEST((o.recovery.undecided[0].tx == tx_id{1, 2}));
  // The participants its prepare named come back with it.
  BOOST_REQUIRE(o.recovery.undecided[0].prepare.has_value());
  BOOST_TEST((o.recovery.undecided[0].prepare->participants == std::vector<std::uint32_t>{0, 1}));
  BOOST_TEST(o.recovery.undecided[0].prepare->coordinator == "tally@127.0.0.1:9000");
}

// A folded decision stays answerable after its records are truncated, until
// the horizon passes it; the horizon only rises, is kept across a reopen,
// and cannot pass the checkpoint time (decisions still in the log stay).
BOOST_AUTO_TEST_CASE(a_checkpoint_keeps_folded_decisions_until_the_horizon_passes_them) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    for (std::uint64_t i = 1; i <= 4; ++i)
      BOOST_REQUIRE(j->append(two_phase(tx_id{1, i}, 10 * i)).has_value());
    BOOST_REQUIRE(fold_all(*j, 50, 0).has_value());
    BOOST_TEST(j->truncation_lsn() == j->next_lsn()); // every record is gone
    for (std::uint64_t i = 1; i <= 4; ++i)
      BOOST_TEST(find(*j, tx_id{1, i})->time == 10 * i + 1);
    // Decisions below 25 may go: tx 1 (11) and tx 2 (21).
    BOOST_REQUIRE(fold_all(*j, 50, 25).has_value());
    BOOST_TEST(j->decisions_kept_from() == 25u);
    BOOST_TEST(!find(*j, tx_id{1, 1}));
    BOOST_TEST(!find(*j, tx_id{1, 2}));
    BOOST_TEST(find(*j, tx_id{1, 3})->time == 31u);
    BOOST_TEST(entries(*j) == 2u);
    BOOST_TEST(j->decisions_dropped() == 2u);
    // Lower: nothing changes. Above the checkpoint time + 1: refused, and
    // nothing of the checkpoint is applied.
    BOOST_REQUIRE(fold_all(*j, 50, 5).has_value());
    BOOST_TEST(j->decisions_kept_from() == 25u);
    auto seq = j->checkpoint().sequence;
    auto refused = fold_all(*j, 50, 52);
    BOOST_REQUIRE(!refused.has_value());
    BOOST_TEST(refused.err().code() == errc::invalid_argument);
    BOOST_TEST(j->checkpoint().sequence == seq);
    BOOST_TEST(j->decisions_kept_from() == 25u);
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.log->decisions_kept_from() == 25u);
  BOOST_TEST(!find(*o.log, tx_id{1, 2}));
  BOOST_TEST(find(*o.log, tx_id{1, 4})->time == 41u);
}

// A store written before the decision index (no `decisions` entries, no
// meta decisions_kept_from): the decisions still in its log are written at
// open, and the horizon is put above its checkpoint time, since the
// decisions it folded before are unknown.
BOOST_AUTO_TEST_CASE(a_store_from_before_the_index_is_backfilled_above_its_checkpoint) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append(two_phase(tx_id{1, 1}, 10)).has_value()); // LSNs 1-3
    truncation_plan plan;
    plan.new_truncation_lsn = 4;
    plan.checkpoint_time = vector_clock{{1, 15}};
    BOOST_REQUIRE(j->apply_checkpoint(plan, no_writes).has_value());
    BOOST_REQUIRE(j->append(two_phase(tx_id{1, 2}, 20)).has_value());
    BOOST_REQUIRE(j->append({update(tx_id{1, 3}, key(2), 1), prepare(tx_id{1, 3}, 30),
                             abort_record{tx_id{1, 3}}})
                    .has_value());
  }
  { // As an older build left it.
    auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    for (std::uint64_t i = 1; i <= 3; ++i)
      BOOST_REQUIRE((*txn)->del(store_db::decisions, encode_tx_key(tx_id{1, i})).has_value());
    auto d = (*txn)->del(store_db::meta, "decisions_kept_from");
    BOOST_REQUIRE(d.has_value() && *d);
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  {
    auto o = open_ok(options(path));
    BOOST_TEST(o.recovery.decisions_backfilled == 2u);
    BOOST_TEST(o.log->decisions_kept_from() == 16u);
    BOOST_TEST(!find(*o.log, tx_id{1, 1})); // folded before: unknown
    BOOST_TEST(find(*o.log, tx_id{1, 2})->time == 21u);
    auto ab = find(*o.log, tx_id{1, 3});
    BOOST_REQUIRE(ab);
    BOOST_TEST((ab->outcome == tx_outcome::aborted));
  }
  auto o = open_ok(options(path)); // once only
  BOOST_TEST(o.recovery.decisions_backfilled == 0u);
  BOOST_TEST(o.log->decisions_kept_from() == 16u);
}

// The sweep that drops old decisions does bounded work per checkpoint (at
// least 4096 entries, and twice what was added since the last sweep), and
// the next checkpoint goes on where it stopped.
BOOST_AUTO_TEST_CASE(the_sweep_is_bounded_per_checkpoint_and_resumes) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"), durability::none)).log;
  const std::uint64_t n = 10000;
  for (std::uint64_t i = 1; i <= n;) {
    std::vector<journal_record> batch;
    for (int b = 0; b < 500; ++b, ++i) {
      auto t = two_phase(tx_id{2, i}, 100 + 2 * i);
      batch.insert(batch.end(), t.begin(), t.end());
    }
    BOOST_REQUIRE(j->append(batch).has_value());
  }
  const std::uint64_t c = 100 + 2 * n + 1;
  // Horizon 1 drops nothing, but the sweep passes every entry once.
  BOOST_REQUIRE(fold_all(*j, c, 1).has_value());
  BOOST_TEST(entries(*j) == n);
  // Now every decision is below the horizon: 4096 go per checkpoint.
  BOOST_REQUIRE(fold_all(*j, c, c + 1).has_value());
  BOOST_TEST(entries(*j) == n - 4096);
  BOOST_REQUIRE(fold_all(*j, c, c + 1).has_value());
  BOOST_TEST(entries(*j) == n - 2 * 4096);
  BOOST_REQUIRE(fold_all(*j, c, c + 1).has_value());
  BOOST_TEST(entries(*j) == 0u);
  BOOST_TEST(j->decisions_dropped() == n);
}

BOOST_AUTO_TEST_CASE(a_full_copy_carries_the_decisions_and_the_horizon) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_REQUIRE(j->append(two_phase(tx_id{1, 1}, 10)).has_value());
  BOOST_REQUIRE(j->append(two_phase(tx_id{1, 2}, 20)).has_value());
  BOOST_REQUIRE(fold_all(*j, 30, 15).has_value());
  auto copy = dir.sub("copy");
  std::filesystem::create_directories(copy);
  BOOST_REQUIRE(j->copy_to(copy).has_value());
  auto o = open_ok(options(copy));
  BOOST_TEST(o.log->decisions_kept_from() == 15u);
  BOOST_TEST(!find(*o.log, tx_id{1, 1}));
  BOOST_TEST(find(*o.log, tx_id{1, 2})->time == 21u);
}

BOOST_AUTO_TEST_SUITE_END()
