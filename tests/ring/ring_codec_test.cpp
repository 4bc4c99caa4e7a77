#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ring/ring_state.hpp"
#include "tests/ring/ring_history.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

// Writes the layout of docs/RING.md, "Format", by hand (little-endian), so
// that the tests check the documented bytes rather than the encoder
// against itself.
struct layout {
  std::string bytes{"\x01", 1}; // Cereal's portable flag: little-endian values

  layout& u8(std::uint8_t v) {
    bytes.push_back(static_cast<char>(v));
    return *this;
  }
  layout& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      u8(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  layout& u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
      u8(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  layout& id(const std::string& s) {
    u64(s.size());
    bytes += s;
    return *this;
  }
};

// A two-member ring of 4 partitions, owners a b a b, written by hand.
// `tweak` may replace any field.
struct fields {
  std::uint8_t version = 1;
  std::uint32_t partitions = 4;
  std::uint32_t n_val = 2;
  std::uint64_t member_count = 2;
  std::string first = "a";
  std::string second = "b";
  std::uint8_t second_status = 1;
  std::uint32_t last_owner = 1;
};

std::string encode_by_hand(const fields& f) {
  layout out;
  out.u8(f.version).u32(f.partitions).u32(f.n_val).u64(f.member_count);
  out.id(f.first).u8(1).u64(0);
  out.id(f.second).u8(f.second_status).u64(0);
  out.u64(1).id("a");         // epoch, claimant
  out.u64(2).id("a").id("b"); // owner table
  out.u32(0).u32(1).u32(0).u32(f.last_owner);
  return out.bytes;
}

void require_corrupt(const std::string& bytes, const std::string& what) {
  auto r = ring_state::decode(bytes);
  BOOST_TEST_REQUIRE(!r.has_value(), what);
  BOOST_TEST(r.err().code() == errc::corrupt, what);
}

} // namespace

BOOST_AUTO_TEST_SUITE(ring)

BOOST_AUTO_TEST_CASE(encoding_follows_the_documented_byte_layout) {
  // Holds on little-endian hosts, where Cereal writes little-endian values.
  const auto r = *ring_state::create("a", 8, 3);
  layout expected;
  expected.u8(1).u32(8).u32(3);           // version, ring size, n_val
  expected.u64(1).id("a").u8(1).u64(0);   // one member: a, valid, incarnation 0
  expected.u64(0).id("a");                // epoch 0, claimant a
  expected.u64(1).id("a");                // owner table: a
  for (int p = 0; p < 8; ++p)
    expected.u32(0);                      // every partition: owner 0
  BOOST_TEST(r.encode() == expected.bytes);
  BOOST_TEST(r.encode().size() == 102u);
}

BOOST_AUTO_TEST_CASE(a_hand_written_encoding_decodes_to_its_ring) {
  const auto r = ring_state::decode(encode_by_hand({}));
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(r->partition_count() == 4u);
  BOOST_TEST(r->n_val() == 2u);
  BOOST_TEST((r->members().at("b") == member_info{member_status::valid, 0}));
  BOOST_TEST((r->owners().owners == owner_table{"a", "b", "a", "b"}));
  BOOST_TEST(r->owners().epoch == 1u);
}

BOOST_AUTO_TEST_CASE(encode_then_decode_gives_the_same_ring) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (const auto& states : test::sample_states(rng, 20, 60))
      for (const auto& s : states) {
        const auto bytes = s.encode();
        const auto back = ring_state::decode(bytes);
        BOOST_TEST_REQUIRE(back.has_value());
        BOOST_TEST((*back == s));
        BOOST_TEST(back->encode() == bytes); // equal states, equal bytes
      }
  }
}

BOOST_AUTO_TEST_CASE(a_ring_with_a_removal_is_written_as_version_2_by_the_layout) {
  auto r = *ring_state::create("a", 4, 2);
  BOOST_TEST_REQUIRE(r.join("b").has_value());
  BOOST_TEST(static_cast<std::uint8_t>(r.encode()[1]) == 1u); // none yet: version 1
  BOOST_TEST_REQUIRE(r.remove("b", 0x0102, {{3, true}}).has_value());
  layout out;
  out.u8(2).u32(4).u32(2).u64(2);
  out.id("a").u8(1).u64(0);
  out.id("b").u8(4).u64(0);                 // removed
  out.u64(0).id("a");                       // epoch, claimant
  out.u64(1).id("a");                       // owner table
  out.u32(0).u32(0).u32(0).u32(0);
  out.u64(1).u32(3).id("b").u64(0x0102).u8(1); // one removal: only copy
  BOOST_TEST(r.encode() == out.bytes);
  auto back = ring_state::decode(out.bytes);
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST((*back == r));
  // Damage in the removal records is refused.
  auto damaged = [&](std::size_t from_end, std::uint8_t v) {
    auto b = out.bytes;
    b[b.size() - from_end] = static_cast<char>(v);
    return b;
  };
  require_corrupt(damaged(1, 4), "removal flags 4");
  require_corrupt(damaged(1 + 8 + 1 + 8 + 4, 9), "removal of partition 9 of 4");
  // Version 1 knows no removed status.
  auto v1 = out.bytes.substr(0, out.bytes.size() - (8 + 4 + 9 + 8 + 1));
  v1[1] = 1;
  require_corrupt(v1, "status 4 in version 1");
}

BOOST_AUTO_TEST_CASE(decode_rejects_an_unknown_version) {
  fields f;
  f.version = 3;
  require_corrupt(encode_by_hand(f), "version 3");
  f.version = 0;
  require_corrupt(encode_by_hand(f), "version 0");
}

BOOST_AUTO_TEST_CASE(decode_rejects_every_truncation) {
  const auto bytes = encode_by_hand({});
  for (std::size_t len = 0; len < bytes.size(); ++len)
    require_corrupt(bytes.substr(0, len), "first " + std::to_string(len) + " bytes");
}

BOOST_AUTO_TEST_CASE(decode_rejects_trailing_bytes) {
  require_corrupt(encode_by_hand({}) + std::string(1, '\0'), "one trailing byte");
}

BOOST_AUTO_TEST_CASE(decode_rejects_fields_outside_their_domain) {
  auto with = [](auto change) {
    fields f;
    change(f);
    return encode_by_hand(f);
  };
  require_corrupt(with([](fields& f) { f.partitions = 6; }), "ring size 6");
  require_corrupt(with([](fields& f) { f.n_val = 0; }), "n_val 0");
  require_corrupt(with([](fields& f) { f.n_val = 17; }), "n_val 17");
  require_corrupt(with([](fields& f) { f.second_status = 4; }), "status 4");
  require_corrupt(with([](fields& f) { f.last_owner = 2; }), "owner index 2 of 2");
  require_corrupt(with([](fields& f) { f.second = "a"; }), "duplicate member");
  require_corrupt(with([](fields& f) { f.first = "c"; }), "members out of order");
  require_corrupt(with([](fields& f) { f.first = ""; }), "empty member id");
  require_corrupt(with([](fields& f) { f.member_count = 1ULL << 60; }), "huge count");
}

BOOST_AUTO_TEST_CASE(decode_of_damaged_bytes_never_throws) {
  // Random bytes and single-byte damage to real encodings decode to a ring
  // or to errc::corrupt; a decoded ring encodes again.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    const auto states = test::sample_states(rng, 4, 40);
    for (int i = 0; i < 3000; ++i) {
      std::string bytes;
      if (i % 3 == 0) {
        bytes.resize(rng.uniform(0, 64));
        for (auto& c : bytes)
          c = static_cast<char>(rng.uniform(0, 255));
      } else {
        const auto& group = states[rng.uniform(0, states.size() - 1)];
        if (group.empty())
          continue;
        bytes = group[rng.uniform(0, group.size() - 1)].encode();
        bytes[rng.uniform(0, bytes.size() - 1)] = static_cast<char>(rng.uniform(0, 255));
      }
      expected<ring_state> r = make_error(errc::ok, "");
      BOOST_CHECK_NO_THROW(r = ring_state::decode(bytes));
      if (r.has_value())
        BOOST_TEST(ring_state::decode(r->encode()).has_value());
      else
        BOOST_TEST(r.err().code() == errc::corrupt);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
