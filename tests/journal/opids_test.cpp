// The `opids` database: the exact record behind the partition's FBF
// (docs/STORAGE.md, "Op-id index"). An op id is found exactly when the
// update that carried it committed and is still in the log.
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

std::optional<lsn> find(tally::journal& j, op_id id) {
  auto r = j.find_committed_op(id);
  BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
  return *r;
}

std::uint64_t opids_entries(tally::journal& j) {
  auto st = j.stats();
  BOOST_REQUIRE(st.has_value());
  return st->opids.entries;
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal_opids)

BOOST_AUTO_TEST_CASE(committed_op_ids_are_found_aborted_and_undecided_are_not) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  tx_id a{1, 1}, b{1, 2}, c{1, 3};
  // a's updates come in an earlier batch than its commit.
  BOOST_REQUIRE(j->append({update(a, key(1), 1, op_id{9, 1}),
                           update(b, key(1), 10, op_id{9, 2}),
                           update(a, key(2), 2, op_id{9, 3}),
                           update(c, key(1), 100, op_id{9, 4}),
                           update(a, key(1), 3)}) // no op id
                  .has_value());
  auto r = j->append({abort_record{b}, commit(a, 5)});
  BOOST_REQUIRE(r.has_value());
  const lsn a_commit = r->last;
  BOOST_TEST(find(*j, op_id{9, 1}).value_or(0) == a_commit);
  BOOST_TEST(find(*j, op_id{9, 3}).value_or(0) == a_commit);
  BOOST_TEST(!find(*j, op_id{9, 2}));  // aborted
  BOOST_TEST(!find(*j, op_id{9, 4}));  // undecided
  BOOST_TEST(!find(*j, op_id{9, 99})); // never seen
  BOOST_TEST(!find(*j, op_id{8, 1}));  // same seq, other client
  BOOST_TEST(opids_entries(*j) == 2u);

  // A prepared transaction is still undecided; its commit indexes the id.
  BOOST_REQUIRE(j->append({prepare_record{c, 6}}).has_value());
  BOOST_TEST(!find(*j, op_id{9, 4}));
  auto rc = j->append({commit(c, 7)});
  BOOST_REQUIRE(rc.has_value());
  BOOST_TEST(find(*j, op_id{9, 4}).value_or(0) == rc->first);
}

BOOST_AUTO_TEST_CASE(update_and_commit_in_one_batch_are_indexed) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"), durability::batch)).log;
  auto r = j->append({update(tx_id{2, 1}, key(1), 1, op_id{3, 1}),
                      commit(tx_id{2, 1}, 1),
                      update(tx_id{2, 2}, key(1), 1, op_id{3, 2}),
                      abort_record{tx_id{2, 2}}});
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(find(*j, op_id{3, 1}).value_or(0) == r->first + 1);
  BOOST_TEST(!find(*j, op_id{3, 2}));
}

BOOST_AUTO_TEST_CASE(a_failed_append_indexes_nothing) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  // An over-long key fails the batch before anything is written.
  object_key bad{"b", std::string(600, 'x')};
  auto r = j->append({update(tx_id{1, 1}, key(1), 1, op_id{4, 1}),
                      update(tx_id{1, 1}, bad, 1, op_id{4, 2}),
                      commit(tx_id{1, 1}, 1)});
  BOOST_TEST(!r.has_value());
  BOOST_TEST(!find(*j, op_id{4, 1}));
  BOOST_TEST(opids_entries(*j) == 0u);
}

BOOST_AUTO_TEST_CASE(reopen_keeps_them) {
  temp_dir dir;
  auto path = dir.sub("p");
  lsn committed_at = 0;
  {
    auto j = open_ok(options(path, durability::batch)).log;
    auto r = j->append({update(tx_id{1, 1}, key(1), 1, op_id{6, 1}),
                        commit(tx_id{1, 1}, 1),
                        update(tx_id{1, 2}, key(1), 1, op_id{6, 2})});
    BOOST_REQUIRE(r.has_value());
    committed_at = r->first + 1;
    BOOST_REQUIRE(j->sync().has_value());
  }
  auto o = open_ok(options(path, durability::batch));
  BOOST_TEST(find(*o.log, op_id{6, 1}).value_or(0) == committed_at);
  BOOST_TEST(!find(*o.log, op_id{6, 2}));
  // The undecided transaction keeps its ids: its commit after the reopen
  // indexes them.
  auto r = o.log->append({commit(tx_id{1, 2}, 2)});
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(find(*o.log, op_id{6, 2}).value_or(0) == r->first);
}

BOOST_AUTO_TEST_CASE(truncation_removes_the_ids_of_the_records_it_drops) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    // tx i: update (LSN 2i-1) with op <7,i>, commit (LSN 2i), i = 1..4.
    for (std::uint64_t i = 1; i <= 4; ++i)
      BOOST_REQUIRE(j->append({update(tx_id{1, i}, key(1), 1, op_id{7, i}),
                               commit(tx_id{1, i}, i)})
                      .has_value());
    truncation_plan plan;
    plan.new_truncation_lsn = 5; // drops tx 1 and tx 2
    plan.checkpoint_time = vector_clock{{1, 4}};
    plan.drop_op_ids = {{op_id{7, 1}, 2}, {op_id{7, 2}, 4},
                        // names another commit than the entry's: kept
                        {op_id{7, 3}, 2}};
    BOOST_REQUIRE(j->apply_checkpoint(plan, [](storage_txn&) -> status {
                     return {};
                   }).has_value());
    BOOST_TEST(!find(*j, op_id{7, 1}));
    BOOST_TEST(!find(*j, op_id{7, 2}));
    BOOST_TEST(find(*j, op_id{7, 3}).value_or(0) == 6);
    BOOST_TEST(find(*j, op_id{7, 4}).value_or(0) == 8);
    BOOST_TEST(opids_entries(*j) == 2u);
  }
  // And they stay gone; no backfill brings them back (their records are
  // gone too).
  auto o = open_ok(options(path));
  BOOST_TEST(!find(*o.log, op_id{7, 1}));
  BOOST_TEST(find(*o.log, op_id{7, 3}).value_or(0) == 6);
  BOOST_TEST(opids_entries(*o.log) == 2u);
}

BOOST_AUTO_TEST_CASE(a_cut_commit_takes_its_ids_with_it) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1, op_id{8, 1}),
                             commit(tx_id{1, 1}, 1),
                             update(tx_id{1, 2}, key(1), 1, op_id{8, 2}),
                             commit(tx_id{1, 2}, 2)})
                    .has_value());
  }
  { // Tear tx 2's commit record (LSN 4), as recovery_test does.
    auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    auto raw = (*txn)->get(store_db::journal, lsn_key(4));
    BOOST_REQUIRE(raw.has_value() && raw->has_value());
    std::string bytes{**raw};
    bytes.resize(bytes.size() / 2);
    BOOST_REQUIRE((*txn)->put(store_db::journal, lsn_key(4), bytes).has_value());
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.cut_records == 1u);
  BOOST_TEST(find(*o.log, op_id{8, 1}).value_or(0) == 2);
  BOOST_TEST(!find(*o.log, op_id{8, 2})); // undecided again
}

BOOST_AUTO_TEST_CASE(a_store_from_before_opids_is_backfilled_at_open) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1, op_id{5, 1}),
                             commit(tx_id{1, 1}, 1),
                             update(tx_id{1, 2}, key(1), 1, op_id{5, 2}),
                             abort_record{tx_id{1, 2}}})
                    .has_value());
  }
  { // Empty `opids`, as a store written before it existed.
    auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    auto d = (*txn)->del(store_db::opids, encode_op_key(op_id{5, 1}));
    BOOST_REQUIRE(d.has_value() && *d);
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  auto o = open_ok(options(path));
  BOOST_TEST(find(*o.log, op_id{5, 1}).value_or(0) == 2);
  BOOST_TEST(!find(*o.log, op_id{5, 2}));
  BOOST_TEST(opids_entries(*o.log) == 1u);
}

BOOST_AUTO_TEST_CASE(entries_carry_the_operation_digest_and_old_entries_still_read) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 4, op_id{5, 1}),
                             commit(tx_id{1, 1}, 1)})
                    .has_value());
    auto e = j->find_committed_op_entry(op_id{5, 1});
    BOOST_REQUIRE(e.has_value() && e->has_value());
    BOOST_TEST((*e)->commit == 2u);
    BOOST_REQUIRE((*e)->digest.has_value());
    BOOST_TEST(*(*e)->digest
               == op_digest(key(1), crdt_type::counter, counter_effect{4}));
    BOOST_TEST(*(*e)->digest
               != op_digest(key(1), crdt_type::counter, counter_effect{5}));
    BOOST_TEST(*(*e)->digest
               != op_digest(key(2), crdt_type::counter, counter_effect{4}));
  }
  { // An entry as written before issue 17: the commit LSN alone.
    auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    BOOST_REQUIRE((*txn)->put(store_db::opids, encode_op_key(op_id{5, 1}),
                              encode_u64(2))
                    .has_value());
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  auto o = open_ok(options(path));
  BOOST_TEST(find(*o.log, op_id{5, 1}).value_or(0) == 2);
  auto e = o.log->find_committed_op_entry(op_id{5, 1});
  BOOST_REQUIRE(e.has_value() && e->has_value());
  BOOST_TEST(!(*e)->digest.has_value());
  BOOST_TEST(!decode_op_entry(std::string(12, 'x')).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
