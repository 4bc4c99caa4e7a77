#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>

#include <sys/resource.h>

#include "journal/codec.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::update;

namespace {

journal_record random_record(test::seeded_rng& rng) {
  tx_id tx{rng.uniform(0, ~0ull), rng.uniform(0, ~0ull)};
  switch (rng.uniform(0, 3)) {
    case 0: {
      std::optional<op_id> op;
      if (rng.chance(0.5))
        op = op_id{rng.uniform(0, ~0ull), rng.uniform(0, ~0ull)};
      auto u = update(tx,
                      object_key{std::string(rng.uniform(0, 20), 'b'),
                                 std::string(rng.uniform(0, 40), 'k')},
                      rng.uniform_signed(INT64_MIN, INT64_MAX), op);
      u.type = rng.chance(0.5) ? crdt_type::counter : crdt_type::fatcounter;
      return u;
    }
    case 1:
      return prepare_record{tx, rng.uniform(0, ~0ull)};
    case 2: {
      auto c = commit(tx, rng.uniform(1, ~0ull), rng.uniform(0, ~0ull),
                      static_cast<dc_id>(rng.uniform(0, 7)));
      c.commit_time.advance(9, rng.uniform(0, 1000));
      c.bloom_timestamp = std::string(rng.uniform(0, 64), 'x');
      return c;
    }
    default:
      return abort_record{tx};
  }
}

bool same_record(const journal_record& a, const journal_record& b) {
  if (a.index() != b.index())
    return false;
  if (auto* x = std::get_if<update_record>(&a)) {
    auto& y = std::get<update_record>(b);
    return x->tx == y.tx && x->key == y.key && x->type == y.type
           && x->effect == y.effect && x->op == y.op;
  }
  if (auto* x = std::get_if<prepare_record>(&a)) {
    auto& y = std::get<prepare_record>(b);
    return x->tx == y.tx && x->prepare_time == y.prepare_time;
  }
  if (auto* x = std::get_if<commit_record>(&a)) {
    auto& y = std::get<commit_record>(b);
    return x->tx == y.tx && x->commit_time == y.commit_time
           && x->bloom_timestamp == y.bloom_timestamp
           && x->wall_time_us == y.wall_time_us;
  }
  return std::get<abort_record>(a).tx == std::get<abort_record>(b).tx;
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(every_record_kind_round_trips_through_its_frame) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 500; ++i) {
      auto rec = random_record(rng);
      auto bytes = encode_record(rec);
      BOOST_TEST(static_cast<int>(bytes[0]) == record_frame_version);
      auto back = decode_record(bytes);
      BOOST_REQUIRE_MESSAGE(back.has_value(), test::describe(back));
      BOOST_TEST(same_record(rec, *back));
    }
  }
}

BOOST_AUTO_TEST_CASE(any_flipped_bit_makes_a_record_corrupt) {
  auto bytes = encode_record(update(tx_id{1, 2}, object_key{"b", "k"}, 5,
                                    op_id{3, 4}));
  for (std::size_t i = 0; i < bytes.size() * 8; ++i) {
    auto bad = bytes;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    auto back = decode_record(bad);
    BOOST_REQUIRE(!back.has_value());
    BOOST_TEST(back.err().code() == errc::corrupt);
  }
}

// Found by fuzz/fuzz_journal.cpp: cereal loaded the op id's "absent" flag
// straight into a bool, so a byte other than 0 or 1 under a valid checksum
// was undefined behaviour (UBSan: "load of value 169 ... type 'bool'").
BOOST_AUTO_TEST_CASE(an_op_id_flag_other_than_0_or_1_is_corrupt) {
  auto bytes = encode_record(update(tx_id{1, 2}, object_key{"b", "k"}, 5));
  std::string payload = bytes.substr(frame_header_size);
  BOOST_REQUIRE_EQUAL(static_cast<int>(payload.back()), 1); // absent
  for (int flag : {2, 169, 255}) {
    payload.back() = static_cast<char>(flag);
    std::string reframed;
    append_frame(reframed, record_frame_version, payload);
    auto back = decode_record(reframed);
    BOOST_REQUIRE(!back.has_value());
    BOOST_TEST(back.err().code() == errc::corrupt);
  }
  // The flag values written before keep decoding.
  auto with_op = encode_record(update(tx_id{1, 2}, object_key{"b", "k"}, 5, op_id{3, 4}));
  auto back = decode_record(with_op);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((std::get<update_record>(*back).op == op_id{3, 4}));
  BOOST_TEST(decode_record(bytes).has_value());
}

// fuzz_journal's third finding (stop 12, the test command's run): a record
// with a valid checksum whose key claimed a 4 GiB bucket made the decoder
// allocate it before the read failed. Lengths beyond the bytes left are
// refused first (common/bounded_input_archive.hpp): a 1 GiB claim must not
// raise the peak RSS.
BOOST_AUTO_TEST_CASE(a_length_beyond_the_record_is_refused_before_allocating) {
  const std::string bucket = "bucket-marker";
  auto bytes = encode_record(update(tx_id{1, 2}, object_key{bucket, "k"}, 5));
  std::string payload = bytes.substr(frame_header_size);
  std::string length_le(8, '\0');
  length_le[0] = static_cast<char>(bucket.size());
  auto at = payload.find(length_le + bucket);
  BOOST_REQUIRE(at != std::string::npos);
  const std::uint64_t one_gib = std::uint64_t{1} << 30;
  for (int i = 0; i < 8; ++i)
    payload[at + static_cast<std::size_t>(i)] = static_cast<char>((one_gib >> (8 * i)) & 0xff);
  std::string reframed;
  append_frame(reframed, record_frame_version, payload);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto back = decode_record(reframed);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  BOOST_REQUIRE(!back.has_value());
  BOOST_TEST(back.err().code() == errc::corrupt);
  BOOST_TEST(after.ru_maxrss - before.ru_maxrss < 64 * 1024,
             "peak RSS grew by " << after.ru_maxrss - before.ru_maxrss << " KiB");
}

BOOST_AUTO_TEST_CASE(truncated_or_extended_records_are_corrupt) {
  auto bytes = encode_record(commit(tx_id{1, 2}, 42));
  for (std::size_t len = 0; len < bytes.size(); ++len)
    BOOST_TEST(decode_record(bytes.substr(0, len)).err().code()
               == errc::corrupt);
  BOOST_TEST(decode_record(bytes + "x").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(a_valid_frame_with_trailing_payload_bytes_is_corrupt) {
  // Right checksum, wrong content: the decoder must still refuse it.
  auto bytes = encode_record(abort_record{tx_id{1, 2}});
  std::string payload = bytes.substr(frame_header_size) + "zz";
  std::string reframed;
  append_frame(reframed, record_frame_version, payload);
  auto back = decode_record(reframed);
  BOOST_REQUIRE(!back.has_value());
  BOOST_TEST(back.err().message().find("trailing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_frame_version_is_corrupt_and_named) {
  auto bytes = encode_record(abort_record{tx_id{1, 2}});
  bytes[0] = 9;
  auto back = decode_record(bytes);
  BOOST_REQUIRE(!back.has_value());
  BOOST_TEST(back.err().code() == errc::corrupt);
  BOOST_TEST(back.err().message().find("version 9") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(lsn_keys_sort_bytewise_in_lsn_order) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 1000; ++i) {
      lsn a = rng.uniform(0, ~0ull >> rng.uniform(0, 63));
      lsn b = rng.uniform(0, ~0ull >> rng.uniform(0, 63));
      BOOST_TEST((lsn_key(a) < lsn_key(b)) == (a < b));
      BOOST_TEST(*decode_lsn_key(lsn_key(a)) == a);
    }
  }
  BOOST_TEST(decode_lsn_key("1234567").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(object_keys_encode_prefix_free_and_round_trip) {
  object_key a{"ab", "c"}, b{"a", "bc"};
  BOOST_TEST(*encode_object_key(a) != *encode_object_key(b));
  BOOST_TEST((*decode_object_key(*encode_object_key(a)) == a));
  BOOST_TEST((*decode_object_key(*encode_object_key(object_key{"", ""}))
              == object_key{"", ""}));
  auto too_long = encode_object_key(
    object_key{"b", std::string(max_object_key_bytes, 'k')});
  BOOST_REQUIRE(!too_long.has_value());
  BOOST_TEST(too_long.err().code() == errc::invalid_argument);
  BOOST_TEST(encode_object_key(
                 object_key{"", std::string(max_object_key_bytes, 'k')})
                 .has_value());
  BOOST_TEST(decode_object_key(std::string("\x00\x05" "ab", 4)).err().code()
             == errc::corrupt);
  // More bytes than the encoder ever writes: refused (found by fuzz_journal).
  auto longest = std::string("\x00\x01" "b", 3) + std::string(max_object_key_bytes - 1, 'k');
  BOOST_TEST(decode_object_key(longest).has_value());
  BOOST_TEST(decode_object_key(longest + "k").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(index_values_sort_by_commit_then_update) {
  auto v = [](lsn c, lsn u) { return encode_index_value({c, u}); };
  BOOST_TEST(v(2, 1) < v(3, 0));
  BOOST_TEST(v(3, 1) < v(3, 2));
  BOOST_TEST(v(255, 9) < v(256, 1));
  BOOST_TEST((*decode_index_value(v(7, 5)) == index_value{7, 5}));
  BOOST_TEST(decode_index_value("short").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_SUITE_END()
