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

BOOST_AUTO_TEST_SUITE(request_memory_budget_tests)

// The first 4 bytes of a frame announcing `length` bytes (code + body).
std::string length_bytes(std::uint32_t length) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((length >> (24 - 8 * i)) & 0xff);
  return out;
}

// A frame is charged its whole size as soon as its length arrives, keeps
// the charge while its request is served, and gives it back when the reply
// is produced.
BOOST_AUTO_TEST_CASE(a_frame_is_charged_from_its_length_until_its_reply) {
  auto budget = std::make_shared<request_memory_budget>(1000);
  client_connection a{connection_limits{}, budget};
  std::string f = frame_of(read_req("k"));
  a.feed(std::string_view{f}.substr(0, 3));
  BOOST_TEST(budget->used() == 0u); // the length is not in yet
  a.feed(std::string_view{f}.substr(3, 2));
  BOOST_TEST(budget->used() == f.size()); // length, code and body, at once
  BOOST_TEST(a.charged() == f.size());
  a.feed(std::string_view{f}.substr(5));
  BOOST_TEST(budget->used() == f.size()); // complete, not yet decoded
  auto ds = drain(a);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  BOOST_TEST(budget->used() == f.size()); // decoded, being served
  a.complete(ds[0].slot, ok_reply(0));
  BOOST_TEST(budget->used() == 0u);
  BOOST_TEST(a.charged() == 0u);
}

// Connections share one budget: a frame whose announced size does not fit
// is refused at its length, before any of its body is buffered, with an
// ErrorResp that names the limit; the connection then ends. A finished
// request gives its bytes back and the next big frame fits.
BOOST_AUTO_TEST_CASE(a_frame_over_the_budget_is_refused_at_its_length_with_the_limit_named) {
  auto budget = std::make_shared<request_memory_budget>(100);
  client_connection a{connection_limits{}, budget};
  client_connection b{connection_limits{}, budget};
  std::string big = frame_of(read_req(std::string(40, 'x')));
  BOOST_REQUIRE_GT(big.size(), 50u);
  BOOST_REQUIRE_LE(big.size(), 100u);
  a.feed(std::string_view{big}.substr(0, 10));
  BOOST_TEST(budget->used() == big.size());
  b.feed(std::string_view{big}.substr(0, 4)); // would go over 100: refused
  BOOST_TEST(budget->used() == big.size());
  BOOST_TEST(b.charged() == 0u);
  BOOST_TEST(!b.wants_read());
  BOOST_TEST(drain(b).empty());
  auto rs = responses(b.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 1u);
  auto* err = std::get_if<error_resp>(&rs[0]);
  BOOST_REQUIRE(err);
  BOOST_TEST(err->err.message().find("--max-request-memory") != std::string::npos);
  BOOST_TEST(err->err.message().find(std::to_string(big.size()) + " bytes") != std::string::npos);
  b.written(b.output().size());
  BOOST_TEST(b.done());
  a.feed(std::string_view{big}.substr(10));
  auto ds = drain(a);
  BOOST_REQUIRE_EQUAL(ds.size(), 1u);
  a.complete(ds[0].slot, ok_reply(0));
  BOOST_TEST(budget->used() == 0u);
  client_connection c{connection_limits{}, budget};
  c.feed(big); // room again
  BOOST_TEST(drain(c).size() == 1u);
  BOOST_TEST(budget->used() == big.size());
}

// A frame larger than the per-frame cap is refused by its length alone,
// whatever the budget, and charges nothing.
BOOST_AUTO_TEST_CASE(a_frame_over_the_frame_cap_is_refused_and_charges_nothing) {
  auto budget = std::make_shared<request_memory_budget>(1u << 30);
  connection_limits lim;
  lim.max_frame_size = 1u << 20;
  client_connection c{lim, budget};
  c.feed(length_bytes((1u << 20) + 1));
  BOOST_TEST(budget->used() == 0u);
  BOOST_TEST(drain(c).empty());
  auto rs = responses(c.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 1u);
  auto* err = std::get_if<error_resp>(&rs[0]);
  BOOST_REQUIRE(err);
  BOOST_TEST(err->err.message().find("exceeds the limit of 1048576 bytes") != std::string::npos);
}

// Frames held back by the in-flight limit stay charged; a request whose
// body is refused at the door gives its charge back with its error reply.
BOOST_AUTO_TEST_CASE(waiting_frames_stay_charged_and_refused_requests_give_back) {
  auto budget = std::make_shared<request_memory_budget>(10000);
  connection_limits lim;
  lim.max_in_flight = 1;
  client_connection c{lim, budget};
  std::string f = frame_of(read_req("k"));
  std::string bad_key = frame_of(read_req(std::string(600, 'k'))); // over 509 bytes
  c.feed(f + f);
  auto first = drain(c);
  BOOST_REQUIRE_EQUAL(first.size(), 1u);
  BOOST_TEST(budget->used() == 2 * f.size()); // one served, one waiting
  c.complete(first[0].slot, ok_reply(0));
  auto second = drain(c);
  BOOST_REQUIRE_EQUAL(second.size(), 1u);
  BOOST_TEST(budget->used() == f.size());
  c.complete(second[0].slot, ok_reply(1));
  BOOST_TEST(budget->used() == 0u);
  c.written(c.output().size());
  c.feed(bad_key);
  BOOST_TEST(drain(c).empty()); // answered with an error at the door
  BOOST_TEST(budget->used() == 0u);
  auto rs = responses(c.output());
  BOOST_REQUIRE_EQUAL(rs.size(), 1u);
  BOOST_TEST(std::holds_alternative<error_resp>(rs[0]));
}

BOOST_AUTO_TEST_CASE(a_closed_connection_gives_its_charge_back) {
  auto budget = std::make_shared<request_memory_budget>(1000);
  {
    client_connection a{connection_limits{}, budget};
    std::string f = frame_of(read_req("k"));
    a.feed(f);
    BOOST_REQUIRE_EQUAL(drain(a).size(), 1u); // in flight, never answered
    a.feed(f.substr(0, 5));                   // and one partly received
    BOOST_TEST(budget->used() == 2 * f.size());
  }
  BOOST_TEST(budget->used() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
