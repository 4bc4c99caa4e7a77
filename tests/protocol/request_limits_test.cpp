// validate_request: every bound is checked at the door, with an error that
// names the limit (issue 17; docs/SECURITY.md).
#include <boost/test/unit_test.hpp>

#include <string>

#include "protocol/descriptor.hpp"
#include "protocol/request_limits.hpp"

using namespace tally;

namespace {

constexpr std::uint64_t now = 1'700'000'000'000'000; // µs since the epoch

update_op inc(std::string key, std::int64_t d) {
  return update_op{bound_object{object_key{"b", std::move(key)},
                                crdt_type::counter},
                   counter_op{counter_update{d}, std::nullopt}};
}

error refused(const request& r, const request_limits& l = {}) {
  auto ok = validate_request(r, l, now);
  BOOST_REQUIRE_MESSAGE(!ok, "expected a refusal");
  BOOST_TEST(ok.err().code() == errc::invalid_argument);
  return ok.err();
}

bool mentions(const error& e, const char* what) {
  return e.message().find(what) != std::string::npos;
}

std::string descriptor_at(std::uint64_t snapshot) {
  tx_descriptor d;
  d.tx = tx_id{1, 2};
  d.owner = "tally@127.0.0.1:8087";
  d.owner_incarnation = 1;
  d.snapshot = vector_clock{{1, snapshot}};
  return encode_tx_descriptor(d);
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_limits_tests)

BOOST_AUTO_TEST_CASE(object_key_bound_is_the_journals) {
  static_update_objects_req ok{{}, {inc(std::string(508, 'k'), 1)}};
  BOOST_TEST(validate_request(ok, {}, now).has_value()); // 1 + 508 = 509
  static_update_objects_req bad{{}, {inc(std::string(509, 'k'), 1)}};
  auto e = refused(bad);
  BOOST_TEST(mentions(e, "max_object_key_bytes"));
  BOOST_TEST(mentions(e, "510 bytes, at most 509"));
  static_read_objects_req rd{{}, {bad.updates[0].object}};
  BOOST_TEST(mentions(refused(rd), "max_object_key_bytes"));
  update_objects_req up{bad.updates, descriptor_at(now)};
  BOOST_TEST(mentions(refused(up), "max_object_key_bytes"));
  read_objects_req ro{{bad.updates[0].object}, descriptor_at(now)};
  BOOST_TEST(mentions(refused(ro), "max_object_key_bytes"));
}

BOOST_AUTO_TEST_CASE(objects_per_request_are_bounded) {
  request_limits l;
  l.max_objects_per_request = 3;
  static_update_objects_req r{{}, {inc("a", 1), inc("b", 1), inc("c", 1)}};
  BOOST_TEST(validate_request(r, l, now).has_value());
  r.updates.push_back(inc("d", 1));
  BOOST_TEST(mentions(refused(r, l), "max_objects_per_request"));
}

BOOST_AUTO_TEST_CASE(increment_range_is_bounded_and_int64_min_refused) {
  static_update_objects_req r{{}, {inc("a", INT64_MAX), inc("b", -INT64_MAX)}};
  BOOST_TEST(validate_request(r, {}, now).has_value());
  r.updates.push_back(inc("c", INT64_MIN));
  BOOST_TEST(mentions(refused(r), "max_increment"));
  request_limits l;
  l.max_increment = 100;
  static_update_objects_req small{{}, {inc("a", -100), inc("b", 100)}};
  BOOST_TEST(validate_request(small, l, now).has_value());
  small.updates.push_back(inc("c", -101));
  BOOST_TEST(mentions(refused(small, l), "max_increment"));
}

BOOST_AUTO_TEST_CASE(clocks_from_the_future_are_refused) {
  request_limits l; // 5 s
  auto at = [](std::uint64_t t) {
    return start_transaction_req{encode_clock(vector_clock{{1, t}})};
  };
  BOOST_TEST(validate_request(at(now + 5'000'000), l, now).has_value());
  BOOST_TEST(validate_request(at(now - 60'000'000), l, now).has_value());
  auto e = refused(at(now + 5'000'001), l);
  BOOST_TEST(mentions(e, "max_clock_skew"));
  BOOST_TEST(mentions(e, "ahead of this node's clock"));
  static_read_objects_req rd{at(now + 3'600'000'000ull), {}};
  BOOST_TEST(mentions(refused(rd, l), "max_clock_skew"));
  static_update_objects_req up{at(UINT64_MAX - 1), {inc("a", 1)}};
  BOOST_TEST(mentions(refused(up, l), "2^63-1"));
  // Near 2^64: refused even with the skew check off, so a commit time
  // above an accepted clock can never wrap.
  request_limits off;
  off.max_clock_skew_us = 0;
  BOOST_TEST(validate_request(at(now + 3'600'000'000ull), off, now).has_value());
  BOOST_TEST(mentions(refused(at(UINT64_MAX), off), "2^63-1"));
  // A descriptor's snapshot is a client clock too.
  BOOST_TEST(validate_request(commit_transaction_req{descriptor_at(now)}, l, now)
               .has_value());
  BOOST_TEST(mentions(refused(commit_transaction_req{descriptor_at(UINT64_MAX)}, l),
                      "2^63-1"));
  BOOST_TEST(mentions(
    refused(commit_transaction_req{descriptor_at(now + 10'000'000)}, l),
    "max_clock_skew"));
}

BOOST_AUTO_TEST_CASE(descriptor_fields_are_bounded) {
  request_limits l;
  BOOST_TEST(mentions(
    refused(abort_transaction_req{std::string(l.max_descriptor_bytes + 1, 'X')}, l),
    "max_descriptor_bytes"));
  tx_descriptor d;
  d.owner = std::string(l.max_owner_bytes + 1, 'o');
  d.snapshot = vector_clock{{1, now}};
  BOOST_TEST(mentions(refused(commit_transaction_req{encode_tx_descriptor(d)}, l),
                      "max_owner_bytes"));
  // Bytes that are no Tally descriptor are refused at the door too.
  auto bad = validate_request(commit_transaction_req{"not a descriptor"}, l, now);
  BOOST_TEST(!bad);
}

BOOST_AUTO_TEST_CASE(decode_valid_request_refuses_after_decoding) {
  static_update_objects_req r{{}, {inc(std::string(600, 'k'), 1)}};
  auto f = encode_request(r);
  auto got = decode_valid_request(f.code, f.body, {}, now);
  BOOST_REQUIRE(!got);
  BOOST_TEST(mentions(got.err(), "max_object_key_bytes"));
  static_update_objects_req fine{{}, {inc("k", 1)}};
  auto g = encode_request(fine);
  BOOST_TEST(decode_valid_request(g.code, g.body, {}, now).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
