#include <boost/test/unit_test.hpp>

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

// Rewrites the stored bytes of the record at `at` with `mutate`, directly
// through an environment on the store's directory (the journal is closed).
template <class F>
void corrupt_record(const std::string& path, lsn at, F mutate) {
  auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
  BOOST_REQUIRE(env.has_value());
  auto txn = (*env)->begin(true);
  BOOST_REQUIRE(txn.has_value());
  auto raw = (*txn)->get(store_db::journal, lsn_key(at));
  BOOST_REQUIRE(raw.has_value() && raw->has_value());
  std::string bytes{**raw};
  mutate(bytes);
  BOOST_REQUIRE((*txn)->put(store_db::journal, lsn_key(at), bytes).has_value());
  BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
}

void flip_last_byte(std::string& b) { b.back() = static_cast<char>(b.back() ^ 0x40); }
void tear(std::string& b) { b.resize(b.size() / 2); }

// Every stored (key, value) of every database, to prove nothing changed.
std::vector<std::string> dump(const std::string& path) {
  std::vector<std::string> out;
  auto env = lmdb_env::open(lmdb_options{path, 64u << 20});
  BOOST_REQUIRE(env.has_value());
  auto txn = (*env)->begin(false);
  BOOST_REQUIRE(txn.has_value());
  for (int d = 0; d < store_db_count; ++d) {
    auto cur = (*txn)->cursor(static_cast<store_db>(d));
    BOOST_REQUIRE(cur.has_value());
    for (auto more = (*cur)->first(); more && *more; more = (*cur)->next())
      out.push_back(std::to_string(d) + ":" + std::string{(*cur)->key()} + "="
                    + std::string{(*cur)->value()});
  }
  return out;
}

// Six records: tx 1 (update, commit), tx 2 (update, commit), tx 3 (update,
// commit); all on key 1, deltas 1, 10, 100.
void write_three_transactions(const std::string& path) {
  auto j = open_ok(options(path)).log;
  std::int64_t delta = 1;
  for (std::uint64_t i = 1; i <= 3; ++i, delta *= 10)
    BOOST_REQUIRE(j->append({update(tx_id{1, i}, key(1), delta),
                             commit(tx_id{1, i}, i)})
                    .has_value());
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(torn_tail_record_is_cut_at_recovery) {
  temp_dir dir;
  auto path = dir.sub("p");
  write_three_transactions(path);
  corrupt_record(path, 6, tear); // tx 3's commit record
  {
    auto o = open_ok(options(path));
    BOOST_TEST(o.recovery.cut_records == 1u);
    BOOST_TEST(o.recovery.cut_from == 6u);
    BOOST_TEST(o.recovery.records == 5u);
    // Its commit is gone, so tx 3 is undecided again and not indexed.
    BOOST_TEST(test::sum(*o.log->read_committed(key(1))) == 11);
    BOOST_TEST(test::sum(*o.log->scan_committed(key(1))) == 11);
    BOOST_REQUIRE(o.recovery.undecided.size() == 1u);
    BOOST_TEST((o.recovery.undecided[0].tx == tx_id{1, 3}));
    BOOST_TEST(o.log->stats()->index.entries == 2u);
    // LSNs are never reused, also not the cut one.
    BOOST_TEST(o.log->next_lsn() == 7u);
    auto r = o.log->append({commit(tx_id{1, 3}, 3)});
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->first == 7u);
    BOOST_TEST(test::sum(*o.log->read_committed(key(1))) == 111);
  }
  auto again = open_ok(options(path));
  BOOST_TEST(again.recovery.cut_records == 0u);
  BOOST_TEST(test::sum(*again.log->read_committed(key(1))) == 111);
}

BOOST_AUTO_TEST_CASE(several_corrupt_tail_records_are_all_cut) {
  temp_dir dir;
  auto path = dir.sub("p");
  write_three_transactions(path);
  corrupt_record(path, 4, flip_last_byte);
  corrupt_record(path, 5, tear);
  corrupt_record(path, 6, flip_last_byte);
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.cut_records == 3u);
  BOOST_TEST(o.recovery.cut_from == 4u);
  BOOST_TEST(test::sum(*o.log->read_committed(key(1))) == 1);
  BOOST_TEST(o.log->stats()->journal.entries == 3u);
  // tx 2's update (LSN 3) survives without its commit: undecided.
  BOOST_TEST(o.recovery.undecided.size() == 1u);
}

BOOST_AUTO_TEST_CASE(corrupt_record_before_valid_ones_is_reported_and_nothing_applied) {
  temp_dir dir;
  auto path = dir.sub("p");
  write_three_transactions(path);
  corrupt_record(path, 3, flip_last_byte); // tx 2's update, mid-log
  auto before = dump(path);
  auto r = tally::journal::open(options(path));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::corrupt);
  BOOST_TEST(r.err().message().find("LSN 3") != std::string::npos);
  BOOST_TEST(r.err().message().find("checksum") != std::string::npos);
  BOOST_TEST((dump(path) == before));
  // And it stays refused: nothing was cut.
  BOOST_TEST(tally::journal::open(options(path)).err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(undecodable_payload_with_valid_checksum_is_corrupt) {
  // A record whose frame is intact but whose payload is not a record (a
  // bug or a foreign writer): in the tail it is cut like a torn one.
  temp_dir dir;
  auto path = dir.sub("p");
  write_three_transactions(path);
  corrupt_record(path, 6, [](std::string& b) {
    b.clear();
    append_frame(b, record_frame_version, std::string("\x01\x07garbage", 9));
  });
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.cut_records == 1u);
  BOOST_TEST(o.recovery.cut_from == 6u);
}

BOOST_AUTO_TEST_CASE(clean_reopen_verifies_every_record_and_cuts_nothing) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir dir;
    auto path = dir.sub("p");
    test::history h{rng, 8, 1};
    {
      auto j = open_ok(options(path, durability::none)).log;
      for (int b = 0; b < 30; ++b)
        BOOST_REQUIRE(j->append(h.batch(rng.uniform(1, 30))).has_value());
    }
    auto o = open_ok(options(path));
    BOOST_TEST(o.recovery.records == h.next_lsn() - 1);
    BOOST_TEST(o.recovery.cut_records == 0u);
    BOOST_TEST(o.recovery.undecided.size() == h.open_transactions());
    for (int k = 0; k < h.keys(); ++k) {
      auto it = o.recovery.effects.find(key(k));
      const auto& got = it == o.recovery.effects.end()
                          ? std::vector<committed_effect>{}
                          : it->second;
      BOOST_TEST(test::same_effects(got, h.expected(k)));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
