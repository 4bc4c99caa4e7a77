// client_connection (server/connection.hpp) driven byte by byte: frames cut
// anywhere, pipelined batches, replies out of order, back-pressure, a
// half-close, bad input. No sockets, no threads.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "protocol/descriptor.hpp"
#include "server/connection.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

std::string frame_of(const request& r) {
  auto f = encode_frame(encode_request(r));
  BOOST_REQUIRE(f);
  return *f;
}

request read_req(const std::string& key) {
  static_read_objects_req r;
  r.objects = {bound_object{object_key{"b", key}, crdt_type::counter}};
  return r;
}

// Every request the connection hands on now.
std::vector<client_connection::dispatch> drain(client_connection& c) {
  std::vector<client_connection::dispatch> out;
  while (auto d = c.next())
    out.push_back(std::move(*d));
  return out;
}

// The frames in `bytes`, decoded as responses.
std::vector<response> responses(std::string_view bytes) {
  frame_decoder dec{~0u};
  BOOST_REQUIRE(dec.feed(bytes));
  std::vector<response> out;
  while (auto f = dec.next()) {
    auto r = decode_response(f->code, f->body);
    BOOST_REQUIRE(r);
    out.push_back(*r);
  }
  BOOST_TEST(!dec.mid_frame());
  return out;
}

std::string ok_reply(std::uint32_t tag) {
  return reply_bytes(admin_resp{true, std::to_string(tag), 0});
}

std::string text_of(const response& r) {
  auto* a = std::get_if<admin_resp>(&r);
  BOOST_REQUIRE(a);
  return a->text;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_connection_tests)

BOOST_AUTO_TEST_CASE(frames_cut_at_any_byte_are_handed_on_whole_and_in_order) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    std::string stream;
    for (int i = 0; i < 50; ++i)
      stream += frame_of(read_req("k" + std::to_string(i)));
    client_connection c{connection_limits{}};
    std::vector<client_connection::dispatch> got;
    std::size_t at = 0;
    while (at < stream.size()) {
      auto n = std::min<std::size_t>(stream.size() - at, rng.uniform(1, 40));
      c.feed(std::string_view{stream}.substr(at, n));
      at += n;
      for (auto& d : drain(c))
        got.push_back(std::move(d));
    }
    BOOST_REQUIRE_EQUAL(got.size(), 50u);
    for (std::size_t i = 0; i < got.size(); ++i) {
      BOOST_TEST(got[i].slot == i);
      auto* r = std::get_if<static_read_objects_req>(&got[i].req);
      BOOST_REQUIRE(r);
      BOOST_TEST(r->objects.at(0).key.key == "k" + std::to_string(i));
    }
  }
}

BOOST_AUTO_TEST_CASE(replies_completed_out_of_order_are_written_in_request_order) {
  client_connection c{connection_limits{}};
  std::string batch;
  for (int i = 0; i < 4; ++i)
    batch += frame_of(read_req("k"));
  c.feed(batch); // one read, four requests: a batch boundary inside nothing
  auto ds = drain(c);
  BOOST_REQUIRE_EQUAL(ds.size(), 4u);
  c.complete(3, ok_reply(3));
  c.complete(1, ok_reply(1));
  BOOST_TEST(c.output().empty()); // slot 0 still unanswered
  c.complete(0, ok_reply(0));
  auto first = responses(c.output());
  BOOST_REQUIRE_EQUAL(first.size(), 2u);
  BOOST_TEST(text_of(first[0]) == "0");
  BOOST_TEST(text_of(first[1]) == "1");
  c.written(c.output().size());
  c.complete(2, ok_reply(2));
  auto rest = responses(c.output());
  BOOST_REQUIRE_EQUAL(rest.size(), 2u);
  BOOST_TEST(text_of(rest[0]) == "2");
  BOOST_TEST(text_of(rest[1]) == "3");
  BOOST_TEST(c.in_flight() == 0u);
}

BOOST_AUTO_TEST_CASE(too_many_unanswered_requests_stop_reading_until_one_is_answered) {
  connection_limits lim;
  lim.max_in_flight = 3;
  client_connection c{lim};
  std::string batch;
  for (int i = 0; i < 5; ++i)
    batch += frame_of(read_req("k"));
  c.feed(batch);
  BOOST_TEST(drain(c).size() == 3u); // the other two wait in the decoder
  BOOST_TEST(!c.wants_read());
  c.complete(0, ok_reply(0));
  BOOST_TEST(c.wants_read());
  auto more = drain(c);
  BOOST_REQUIRE_EQUAL(more.size(), 1u);
  BOOST_TEST(more[0].slot == 3u);
  BOOST_TEST(!c.wants_read());
}

BOOST_AUTO_TEST_CASE(a_peer_that_does_not_read_its_replies_is_not_read_either) {
  connection_limits lim;
  lim.max_pending_output = 1000;
  client_connection c{lim};
  c.feed(frame_of(read_req("k")));
  auto ds = drain(c);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  c.complete(0, reply_bytes(admin_resp{true, std::string(2000, 'x'), 0}));
  BOOST_TEST(!c.wants_read()); // 2 KB unread by the peer
  c.written(c.output().size() - 10);
  BOOST_TEST(c.wants_read());
  BOOST_TEST(!c.done());
}

BOOST_AUTO_TEST_CASE(a_half_close_still_answers_every_request_then_finishes) {
  client_connection c{connection_limits{}};
  c.feed(frame_of(read_req("a")) + frame_of(read_req("b")));
  c.peer_closed();
  BOOST_TEST(!c.wants_read());
  BOOST_TEST(drain(c).size() == 2u);
  BOOST_TEST(!c.done()); // replies owed
  c.complete(1, ok_reply(1));
  c.complete(0, ok_reply(0));
  BOOST_TEST(responses(c.output()).size() == 2u);
  BOOST_TEST(!c.done()); // not written yet
  c.written(c.output().size());
  BOOST_TEST(c.done());
}

BOOST_AUTO_TEST_CASE(a_bad_body_gets_an_error_in_its_slot_and_the_stream_goes_on) {
  client_connection c{connection_limits{}};
  auto bad = encode_frame(static_cast<std::uint8_t>(msg_code::static_read_objects),
                          std::string("\xff\xff\xff", 3));
  BOOST_REQUIRE(bad);
  c.feed(*bad + frame_of(read_req("k")));
  auto ds = drain(c);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  BOOST_TEST(ds[0].slot == 1u);
  c.complete(1, ok_reply(1));
  auto rs = responses(c.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 2u);
  BOOST_TEST(std::holds_alternative<error_resp>(rs[0]));
  BOOST_TEST(c.wants_read());
}

BOOST_AUTO_TEST_CASE(an_unknown_code_ends_the_connection_after_earlier_replies) {
  client_connection c{connection_limits{}};
  auto unknown = encode_frame(static_cast<std::uint8_t>(99), "");
  BOOST_REQUIRE(unknown);
  c.feed(frame_of(read_req("k")) + *unknown + frame_of(read_req("never")));
  auto ds = drain(c);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  BOOST_TEST(!c.wants_read());
  c.complete(0, ok_reply(0));
  BOOST_TEST(responses(c.output()).size() == 1u);
  c.written(c.output().size());
  BOOST_TEST(c.done());
}

BOOST_AUTO_TEST_CASE(an_oversized_frame_is_answered_with_an_error_then_closed) {
  connection_limits lim;
  lim.max_frame_size = 64;
  client_connection c{lim};
  std::string big(4, '\0');
  big[1] = 0x10; // length 1 MiB, over the limit
  c.feed(frame_of(read_req("k")) + big);
  auto ds = drain(c);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  c.complete(0, ok_reply(0));
  auto rs = responses(c.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 2u);
  BOOST_TEST(std::holds_alternative<error_resp>(rs[1]));
  c.written(c.output().size());
  BOOST_TEST(c.done());
}

BOOST_AUTO_TEST_CASE(requests_without_a_clock_get_the_session_floor) {
  client_connection c{connection_limits{}};
  c.feed(frame_of(read_req("k")));
  auto first = drain(c);
  BOOST_REQUIRE_EQUAL(first.size(), 1u);
  // Nothing seen yet: no clock is added.
  BOOST_TEST(!std::get<static_read_objects_req>(first[0].req).transaction.timestamp);
  vector_clock commit{{1, 500}};
  c.complete(0, reply_bytes(commit_resp{true, encode_clock(commit), 0}), commit);
  static_read_objects_req with_clock = std::get<static_read_objects_req>(read_req("k"));
  vector_clock mine{{1, 7}};
  with_clock.transaction.timestamp = encode_clock(mine);
  c.feed(frame_of(read_req("k")) + frame_of(with_clock) + frame_of(start_transaction_req{}));
  auto next = drain(c);
  BOOST_REQUIRE_EQUAL(next.size(), 3u);
  auto floor0 = decode_clock(*std::get<static_read_objects_req>(next[0].req).transaction.timestamp);
  BOOST_REQUIRE(floor0);
  BOOST_TEST(floor0->get(1) == 500u);
  // A client's own clock is left as it is.
  auto own = decode_clock(*std::get<static_read_objects_req>(next[1].req).transaction.timestamp);
  BOOST_REQUIRE(own);
  BOOST_TEST(own->get(1) == 7u);
  BOOST_TEST(std::get<start_transaction_req>(next[2].req).timestamp.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(partial_frame_budget_tests)

// Partly received requests of all connections share one budget: a
// connection that would take it over its limit gets an error and ends,
// and a finished frame gives its bytes back.
BOOST_AUTO_TEST_CASE(connections_share_one_budget_for_partial_requests) {
  auto budget = std::make_shared<partial_frame_budget>(100);
  client_connection a{connection_limits{}, budget};
  client_connection b{connection_limits{}, budget};
  std::string big = frame_of(read_req(std::string(70, 'x')));
  BOOST_REQUIRE_GT(big.size(), 80u);
  BOOST_REQUIRE_LE(big.size(), 100u);
  // The budget counts the memory a partial frame holds (its buffer's
  // capacity), at least the bytes that arrived.
  a.feed(std::string_view{big}.substr(0, 80));
  const auto held = budget->used();
  BOOST_TEST(held >= 80u);
  BOOST_TEST(held <= 100u);
  b.feed(std::string_view{big}.substr(0, 40)); // would go over 100: refused
  BOOST_TEST(budget->used() == held);
  BOOST_TEST(!b.wants_read());
  BOOST_TEST(drain(b).empty());
  auto rs = responses(b.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 1u);
  BOOST_TEST(std::holds_alternative<error_resp>(rs[0]));
  a.feed(std::string_view{big}.substr(80)); // a's frame completes
  BOOST_TEST(budget->used() == 0u);
  BOOST_TEST(drain(a).size() == 1u);
  client_connection c{connection_limits{}, budget};
  c.feed(std::string_view{big}.substr(0, big.size() - 1)); // room again
  BOOST_TEST(budget->used() >= big.size() - 1);
  BOOST_TEST(c.wants_read());
}

BOOST_AUTO_TEST_CASE(a_closed_connection_gives_its_partial_bytes_back) {
  auto budget = std::make_shared<partial_frame_budget>(1000);
  {
    client_connection a{connection_limits{}, budget};
    a.feed(frame_of(read_req("k")).substr(0, 5));
    BOOST_TEST(budget->used() >= 5u);
  }
  BOOST_TEST(budget->used() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
