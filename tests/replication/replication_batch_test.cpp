// replication_batch: the bytes a primary ships round-trip exactly, and bad
// bytes are refused with errc::corrupt, never a crash.
#include <boost/test/unit_test.hpp>

#include <random>

#include "journal/codec.hpp"
#include "replication/replication_batch.hpp"

using namespace tally;

namespace {

replication_batch sample() {
  replication_batch b;
  b.first = 42;
  b.records.push_back(update_record{{7, 1}, {"b", "k"}, crdt_type::counter,
                                    counter_effect{5}, op_id{}});
  b.records.push_back(prepare_record{{7, 1}, 1234});
  commit_record c;
  c.tx = {7, 1};
  c.commit_time = vector_clock{{1, 1300}};
  c.bloom_timestamp = "bloom";
  c.wall_time_us = 99;
  b.records.push_back(c);
  b.records.push_back(abort_record{{8, 2}});
  auto clock = *bloom_clock::make(8, 2);
  clock.tick(bloom_event(5, 1));
  b.deps = batch_dependency{clock, 40, {6, 3}};
  return b;
}

bloom_clock clock_of(std::initializer_list<std::uint64_t> events) {
  auto c = *bloom_clock::make(8, 2);
  for (auto e : events)
    c.tick(bloom_event(5, e));
  return c;
}

commit_record commit_of(const tx_id& tx, const bloom_clock& c) {
  commit_record r;
  r.tx = tx;
  r.commit_time = vector_clock{{1, 10}};
  r.bloom_timestamp = c.encode();
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(replication_batch_tests)

BOOST_AUTO_TEST_CASE(a_batch_round_trips_record_for_record) {
  auto b = sample();
  auto d = decode_batch(encode_batch(b));
  BOOST_REQUIRE_MESSAGE(d, (d ? "" : d.err().to_string()));
  BOOST_TEST(d->first == 42u);
  BOOST_TEST(d->end() == 46u);
  BOOST_REQUIRE(d->records.size() == 4u);
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(d->records[i].index() == b.records[i].index());
  BOOST_TEST(std::get<prepare_record>(d->records[1]).prepare_time == 1234u);
  BOOST_TEST(std::get<commit_record>(d->records[2]).bloom_timestamp == "bloom");
  BOOST_TEST(std::get<abort_record>(d->records[3]).tx == (tx_id{8, 2}));
  BOOST_REQUIRE(d->deps.has_value());
  BOOST_TEST(d->deps->clock == b.deps->clock);
  BOOST_TEST(d->deps->commit_at == 40u);
  BOOST_TEST(d->deps->commit_tx == (tx_id{6, 3}));
  replication_batch empty;
  empty.first = 9;
  auto e = decode_batch(encode_batch(empty));
  BOOST_REQUIRE(e);
  BOOST_TEST(e->empty());
  BOOST_TEST(e->first == 9u);
  BOOST_TEST(!e->deps.has_value());
}

// Version 1 (before the dependency) is still read: no dependency.
BOOST_AUTO_TEST_CASE(a_version_1_batch_is_read_without_a_dependency) {
  std::string payload(8, '\0');
  put_be64(payload.data(), 42);
  payload += std::string{"\0\0\0\1", 4}; // one record
  std::string rec;
  encode_record(abort_record{{8, 2}}, rec);
  const auto len = static_cast<std::uint32_t>(rec.size());
  payload += std::string{static_cast<char>(len >> 24), static_cast<char>(len >> 16),
                         static_cast<char>(len >> 8), static_cast<char>(len)};
  payload += rec;
  std::string v1;
  append_frame(v1, 1, payload);
  auto d = decode_batch(v1);
  BOOST_REQUIRE_MESSAGE(d, (d ? "" : d.err().to_string()));
  BOOST_TEST(d->first == 42u);
  BOOST_TEST(d->records.size() == 1u);
  BOOST_TEST(!d->deps.has_value());
  // The same payload as version 2 lacks its dependency section.
  std::string v2;
  append_frame(v2, 2, payload);
  BOOST_TEST(!decode_batch(v2));
}

BOOST_AUTO_TEST_CASE(the_dependency_moves_past_the_commits_before_an_lsn) {
  const batch_dependency base{clock_of({1}), 9, {1, 1}};
  std::vector<journal_record> recs;
  recs.push_back(update_record{{2, 1}, {"b", "k"}, crdt_type::counter, counter_effect{1}, {}});
  recs.push_back(commit_of({2, 1}, clock_of({1, 2})));                 // LSN 11
  recs.push_back(prepare_record{{3, 1}, 5});
  recs.push_back(commit_of({3, 1}, clock_of({1, 2, 3})));              // LSN 13
  // records[i] is at LSN 10 + i.
  auto at10 = dependency_within(base, 10, recs, 10);
  BOOST_REQUIRE(at10);
  BOOST_TEST(at10->commit_at == 9u);
  BOOST_TEST(at10->clock == base.clock);
  auto at12 = dependency_within(base, 10, recs, 12);
  BOOST_REQUIRE(at12);
  BOOST_TEST(at12->commit_at == 11u);
  BOOST_TEST(at12->commit_tx == (tx_id{2, 1}));
  BOOST_TEST(at12->clock == clock_of({1, 2}));
  auto at13 = dependency_within(base, 10, recs, 13);
  BOOST_REQUIRE(at13);
  BOOST_TEST(at13->commit_at == 11u);
  auto at14 = dependency_within(base, 10, recs, 14);
  BOOST_REQUIRE(at14);
  BOOST_TEST(at14->commit_at == 13u);
  BOOST_TEST(at14->clock == clock_of({1, 2, 3}));
  BOOST_TEST(!dependency_within(base, 10, recs, 15)); // beyond
  BOOST_TEST(!dependency_within(base, 10, recs, 9));  // before
  // A timestamp that is not a clock: unknown.
  auto bad = commit_of({4, 1}, clock_of({1}));
  bad.bloom_timestamp = "not a clock";
  recs.push_back(bad);
  BOOST_TEST(!dependency_within(base, 10, recs, 15));
}

BOOST_AUTO_TEST_CASE(every_truncation_and_bit_flip_is_refused) {
  const auto bytes = encode_batch(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto d = decode_batch(std::string_view{bytes}.substr(0, n));
    BOOST_REQUIRE(!d);
    BOOST_TEST((d.err().code() == errc::corrupt));
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
    auto d = decode_batch(flipped);
    BOOST_TEST(!d, "a flip of byte " << i << " was accepted");
  }
}

BOOST_AUTO_TEST_CASE(random_bytes_never_crash_the_decoder) {
  const unsigned seed = std::random_device{}();
  BOOST_TEST_MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk)
      c = static_cast<char>(rng());
    auto d = decode_batch(junk);
    BOOST_TEST(!d);
  }
}

BOOST_AUTO_TEST_SUITE_END()
