// Terms in the journal (docs/REPLICATION.md, "Terms in the journal";
// docs/FORMAT.md): the term each record was first written under, from the
// term records in the log and, for folded records, meta `folded_term`;
// kept through reopening, checkpoints and full copies.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "journal/codec.hpp"
#include "journal/journal.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

namespace {

const copy_term term_a{1000, "tally@127.0.0.1:1"};
const copy_term term_b{2000, "tally@127.0.0.1:2"};

std::vector<journal_record> one_step(std::uint64_t seq, std::uint64_t time) {
  tx_id tx{7, seq};
  return {update(tx, key(1), 1), commit(tx, time)};
}

status no_writes(storage_txn&) {
  return {};
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal_terms)

BOOST_AUTO_TEST_CASE(records_take_the_term_of_the_last_term_record_before_them) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_TEST(j->last_term() == copy_term{}); // empty
  BOOST_REQUIRE(j->append(one_step(1, 10)).has_value()); // LSNs 1-2: before any term
  BOOST_REQUIRE(j->append({term_record{term_a}}).has_value()); // 3
  BOOST_REQUIRE(j->append(one_step(2, 20)).has_value());       // 4-5
  auto b = one_step(3, 30);
  b.insert(b.begin(), term_record{term_b}); // 6, then 7-8: one batch
  BOOST_REQUIRE(j->append(b).has_value());
  BOOST_TEST(j->term_at(1) == copy_term{});
  BOOST_TEST(j->term_at(2) == copy_term{});
  BOOST_TEST(j->term_at(3) == term_a);
  BOOST_TEST(j->term_at(5) == term_a);
  BOOST_TEST(j->term_at(6) == term_b);
  BOOST_TEST(j->term_at(8) == term_b);
  BOOST_TEST(j->last_term() == term_b);
}

BOOST_AUTO_TEST_CASE(terms_survive_a_reopen) {
  temp_dir dir;
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_REQUIRE(j->append({term_record{term_a}}).has_value());
    BOOST_REQUIRE(j->append(one_step(1, 10)).has_value());
    BOOST_REQUIRE(j->append({term_record{term_b}}).has_value());
    BOOST_REQUIRE(j->append(one_step(2, 20)).has_value());
  }
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_TEST(j->term_at(2) == term_a);
  BOOST_TEST(j->term_at(4) == term_b);
  BOOST_TEST(j->last_term() == term_b);
}

// Persistent promises (docs/REPLICATION.md): the promised term and its
// ring epoch are saved in meta `promised_term` and `promised_epoch`, read
// back at the open, and may go down again (a copy's own abandoned round);
// absent, they are term 0 and epoch 0. They change no record.
BOOST_AUTO_TEST_CASE(the_promised_term_survives_a_reopen) {
  temp_dir dir;
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_TEST(j->promised_term() == copy_term{});
    BOOST_TEST(j->promised_epoch() == 0u);
    BOOST_REQUIRE(j->append(one_step(1, 10)).has_value());
    BOOST_REQUIRE(j->save_promised_term(term_b, 7));
    BOOST_TEST(j->promised_term() == term_b);
    BOOST_TEST(j->promised_epoch() == 7u);
  }
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_TEST(j->promised_term() == term_b);
    BOOST_TEST(j->promised_epoch() == 7u);
    BOOST_TEST(j->last_term() == copy_term{}); // no term record was written
    BOOST_TEST(j->next_lsn() == 3u);
    BOOST_REQUIRE(j->save_promised_term(term_a, 6));
  }
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_TEST(j->promised_term() == term_a);
  BOOST_TEST(j->promised_epoch() == 6u);
}

// The copy set a store last led (docs/REPLICATION.md, "Handoffs whose
// fence gave up"): saved in meta `led_set`, read back at the open,
// deleted by saving none; no record changes.
BOOST_AUTO_TEST_CASE(the_led_copy_set_survives_a_reopen_and_can_be_cleared) {
  temp_dir dir;
  const led_copy_set led{9, "tally@127.0.0.1:1", {"tally@127.0.0.1:2", "tally@127.0.0.1:3"}};
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_TEST(!j->led_set());
    BOOST_REQUIRE(j->append(one_step(1, 10)).has_value());
    BOOST_REQUIRE(j->save_led_set(led));
    BOOST_TEST((j->led_set() == led));
  }
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_REQUIRE(j->led_set());
    BOOST_TEST((*j->led_set() == led));
    BOOST_TEST(j->next_lsn() == 3u);
    BOOST_REQUIRE(j->save_led_set(std::nullopt));
    BOOST_TEST(!j->led_set());
  }
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_TEST(!j->led_set());
}

// A led set's value decodes to what was encoded; cut short anywhere, or
// with an id's length past its end, it is corrupt.
BOOST_AUTO_TEST_CASE(a_led_set_value_cut_short_is_corrupt) {
  const led_copy_set led{3, "a", {"bb", ""}};
  const auto bytes = encode_led_set_value(led);
  auto back = decode_led_set_value(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == led));
  // Every cut but the ones that end at an id's end (a shorter set).
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto cut = decode_led_set_value(std::string_view{bytes}.substr(0, n));
    const bool at_an_id_end = n == 8 + 8 + 1 || n == 8 + 8 + 1 + 8 + 2;
    if (at_an_id_end)
      BOOST_TEST(cut.has_value(), "cut at " << n);
    else
      BOOST_TEST((!cut.has_value() && cut.err().code() == errc::corrupt), "cut at " << n);
  }
  auto long_id = bytes;
  long_id[8 + 7] = 100; // the leader's length: 100 bytes, 1 there
  auto bad = decode_led_set_value(long_id);
  BOOST_TEST((!bad.has_value() && bad.err().code() == errc::corrupt));
}

// Once the log is folded, the terms of the folded records (the last one's
// above all: a take-over round compares copies by it) come from meta
// `folded_term`, also after a reopen and in a full copy.
BOOST_AUTO_TEST_CASE(a_checkpoint_keeps_the_term_of_what_it_folds) {
  temp_dir dir;
  {
    auto j = open_ok(options(dir.sub("p"))).log;
    BOOST_REQUIRE(j->append({term_record{term_a}}).has_value());   // 1
    BOOST_REQUIRE(j->append(one_step(1, 10)).has_value());         // 2-3
    BOOST_REQUIRE(j->append({term_record{term_b}}).has_value());   // 4
    BOOST_REQUIRE(j->append(one_step(2, 20)).has_value());         // 5-6
    truncation_plan plan;
    plan.new_truncation_lsn = 4; // folds term a's records
    plan.checkpoint_time = vector_clock{{1, 10}};
    BOOST_REQUIRE(j->apply_checkpoint(plan, no_writes).has_value());
    BOOST_TEST(j->term_at(3) == term_a);
    BOOST_TEST(j->term_at(5) == term_b);
    plan.new_truncation_lsn = j->next_lsn(); // everything
    plan.checkpoint_time = vector_clock{{1, 20}};
    BOOST_REQUIRE(j->apply_checkpoint(plan, no_writes).has_value());
    BOOST_TEST(j->last_term() == term_b);
    std::filesystem::create_directories(dir.sub("copy"));
    BOOST_REQUIRE(j->copy_to(dir.sub("copy")).has_value());
  }
  auto j = open_ok(options(dir.sub("p"))).log;
  BOOST_TEST(j->truncation_lsn() == 7u);
  BOOST_TEST(j->last_term() == term_b);
  auto copy = open_ok(options(dir.sub("copy"))).log;
  BOOST_TEST(copy->last_term() == term_b);
}

BOOST_AUTO_TEST_CASE(a_term_record_is_its_own_transaction_for_prefix_checks) {
  term_record a{term_a}, b{term_b};
  BOOST_TEST(record_tx(a) != record_tx(b));
  BOOST_TEST(record_tx(a).origin == 0u);
  BOOST_TEST(a.term() == term_a);
  // docs/FORMAT.md's example: 42 bytes of payload, 51 stored.
  const auto bytes =
    encode_record(term_record{copy_term{1764157412000000, "tally@127.0.0.1:7001"}});
  BOOST_TEST(bytes.size() == 51u);
  auto back = decode_record(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(std::get<term_record>(*back).term().n == 1764157412000000u);
}

BOOST_AUTO_TEST_SUITE_END()
