// replication_batch: the bytes a primary ships round-trip exactly, and bad
// bytes are refused with errc::corrupt, never a crash.
#include <boost/test/unit_test.hpp>

#include <random>

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
  return b;
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
  replication_batch empty;
  empty.first = 9;
  auto e = decode_batch(encode_batch(empty));
  BOOST_REQUIRE(e);
  BOOST_TEST(e->empty());
  BOOST_TEST(e->first == 9u);
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
