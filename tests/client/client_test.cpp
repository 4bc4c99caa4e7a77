// client/client: op ids, exactly-once retries, pipelining order, session
// clocks and interactive transactions, against a scripted fake node
// (fake_server.hpp). The frames the client sent are decoded and inspected.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "client/client.hpp"
#include "protocol/descriptor.hpp"
#include "tests/client/fake_server.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t test_client_id = 0xC0FFEE;

client connect_to(std::uint16_t port, std::chrono::milliseconds timeout = 2000ms,
                  unsigned retries = 3, std::size_t max_in_flight = 128) {
  client_options opts;
  opts.max_in_flight = max_in_flight;
  opts.port = port;
  opts.timeout = timeout;
  opts.retries = retries;
  opts.client_id = test_client_id;
  auto c = client::connect(opts);
  BOOST_REQUIRE_MESSAGE(c.has_value(),
                        (c ? std::string{} : c.err().to_string()));
  return std::move(*c);
}

request decode(const frame& f) {
  auto req = decode_request(f.code, f.body);
  BOOST_REQUIRE_MESSAGE(req.has_value(),
                        (req ? std::string{} : req.err().to_string()));
  return std::move(*req);
}

/// The op ids of a static update frame, in order.
std::vector<op_id> ids_of(const frame& f) {
  auto req = decode(f);
  std::vector<op_id> out;
  const std::vector<update_op>* ops = nullptr;
  if (auto* s = std::get_if<static_update_objects_req>(&req))
    ops = &s->updates;
  else if (auto* u = std::get_if<update_objects_req>(&req))
    ops = &u->updates;
  BOOST_REQUIRE(ops != nullptr);
  for (const auto& op : *ops) {
    const auto& c = std::get<counter_op>(op.op);
    BOOST_REQUIRE(c.id.has_value());
    out.push_back(*c.id);
  }
  return out;
}

counter_inc inc(std::string key, std::int64_t delta) {
  return counter_inc{object_key{"b", std::move(key)}, delta,
                     crdt_type::counter, {}};
}

bound_object counter(std::string key) {
  return bound_object{object_key{"b", std::move(key)}, crdt_type::counter};
}

response values_at(std::vector<std::int64_t> values, std::uint64_t time) {
  static_read_objects_resp r;
  for (auto v : values)
    r.objects.values.emplace_back(v);
  r.commit = std::get<commit_resp>(test::commit_at(time));
  return r;
}

std::optional<std::string> timestamp_of(const frame& f) {
  auto req = decode(f);
  if (auto* s = std::get_if<static_update_objects_req>(&req))
    return s->transaction.timestamp;
  if (auto* r = std::get_if<static_read_objects_req>(&req))
    return r->transaction.timestamp;
  if (auto* t = std::get_if<start_transaction_req>(&req))
    return t->timestamp;
  BOOST_FAIL("not a request with a snapshot");
  return std::nullopt;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_suite)

BOOST_AUTO_TEST_CASE(op_ids_carry_the_client_id_and_increase_by_one) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    for (int i = 0; i < 3; ++i)
      if (peer.read_frame())
        peer.reply(test::commit_at(10 + i));
  }};
  auto c = connect_to(node.port());
  BOOST_TEST(c.client_id() == test_client_id);
  BOOST_REQUIRE(c.update({inc("x", 1), inc("y", 2)}));
  BOOST_REQUIRE(c.update({inc("x", -3)}));
  BOOST_REQUIRE(c.update({inc("z", 7)}));
  node.join();
  BOOST_REQUIRE_EQUAL(node.frames().size(), 3u);
  std::vector<op_id> all;
  for (const auto& f : node.frames())
    for (auto id : ids_of(f))
      all.push_back(id);
  BOOST_REQUIRE_EQUAL(all.size(), 4u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST(all[i].client == test_client_id);
    BOOST_TEST(all[i].seq == i + 1);
  }
  BOOST_TEST(c.retries_done() == 0u);
}

BOOST_AUTO_TEST_CASE(random_client_ids_differ) {
  test::fake_server node{2, [](std::size_t, test::fake_peer&) {}};
  client_options opts;
  opts.port = node.port();
  auto a = client::connect(opts);
  auto b = client::connect(opts);
  BOOST_REQUIRE(a && b);
  BOOST_TEST(a->client_id() != b->client_id());
  BOOST_TEST(a->client_id() != 0u);
}

BOOST_AUTO_TEST_CASE(retry_after_a_dropped_connection_resends_the_same_op_ids) {
  test::fake_server node{2, [](std::size_t conn, test::fake_peer& peer) {
    auto f = peer.read_frame();
    if (f && conn == 1)
      peer.reply(test::commit_at(42));
    // conn 0: the node "crashes" after receiving the update, no reply.
  }};
  auto c = connect_to(node.port());
  auto clock = c.update({inc("x", 5), inc("y", 6)});
  BOOST_REQUIRE_MESSAGE(clock.has_value(),
                        (clock ? std::string{} : clock.err().to_string()));
  BOOST_TEST(*clock == encode_clock(vector_clock{{0, 42}}));
  node.join();
  BOOST_TEST(node.accepted() == 2u);
  BOOST_REQUIRE_EQUAL(node.frames().size(), 2u);
  // Byte for byte the same request, so the same op ids.
  BOOST_TEST((node.frames()[0] == node.frames()[1]));
  BOOST_TEST(ids_of(node.frames()[1])
             == (std::vector<op_id>{{test_client_id, 1}, {test_client_id, 2}}));
  BOOST_TEST(c.retries_done() == 1u);
  // The next update takes fresh ids.
}

BOOST_AUTO_TEST_CASE(retry_after_a_timeout_resends_the_same_op_ids) {
  test::fake_server node{2, [](std::size_t conn, test::fake_peer& peer) {
    auto f = peer.read_frame();
    if (conn == 0)
      peer.wait_for_close(); // silent until the client gives up
    else if (f)
      peer.reply(test::commit_at(7));
  }};
  auto c = connect_to(node.port(), 100ms);
  auto clock = c.update({inc("x", 1)});
  BOOST_REQUIRE_MESSAGE(clock.has_value(),
                        (clock ? std::string{} : clock.err().to_string()));
  node.join();
  BOOST_REQUIRE_EQUAL(node.frames().size(), 2u);
  BOOST_TEST((node.frames()[0] == node.frames()[1]));
  BOOST_TEST(ids_of(node.frames()[0])
             == (std::vector<op_id>{{test_client_id, 1}}));
  BOOST_TEST(c.retries_done() == 1u);
}

BOOST_AUTO_TEST_CASE(timeouts_against_a_silent_node_end_after_the_retries) {
  test::local_socket silent{true}; // listens, never accepts, never answers
  auto c = connect_to(silent.port(), 50ms, 2);
  auto begin = client_clock::now();
  auto clock = c.update({inc("x", 1)});
  auto took = client_clock::now() - begin;
  BOOST_REQUIRE(!clock);
  BOOST_TEST(clock.err().code() == errc::timeout);
  BOOST_TEST_MESSAGE(clock.err().message());
  BOOST_TEST(clock.err().message().find("gave up after 2 retries")
             != std::string::npos);
  BOOST_TEST(c.retries_done() == 2u);
  BOOST_TEST((took >= 150ms)); // three waits of 50 ms
  BOOST_TEST((took < 3000ms));
  // A later update gets a new id: the failed one's ids are not reused by
  // the library (the caller decides whether to resend).
  BOOST_TEST(c.next_op_id().seq == 2u);
}

BOOST_AUTO_TEST_CASE(retries_zero_returns_the_first_timeout) {
  test::local_socket silent{true};
  auto c = connect_to(silent.port(), 50ms, 0);
  auto r = c.read({counter("x")});
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::timeout);
  BOOST_TEST(c.retries_done() == 0u);
}

BOOST_AUTO_TEST_CASE(a_node_that_went_away_gives_unavailable_after_retries) {
  std::uint16_t port = 0;
  std::optional<client> c;
  {
    test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
      peer.close();
    }};
    port = node.port();
    c.emplace(connect_to(port, 500ms, 2));
    node.join();
  } // the listener is gone: reconnects are refused
  auto clock = c->update({inc("x", 1)});
  BOOST_REQUIRE(!clock);
  BOOST_TEST(clock.err().code() == errc::unavailable);
  BOOST_TEST_MESSAGE(clock.err().message());
  BOOST_TEST(clock.err().message().find("is tallyd running?")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(server_errors_are_returned_not_retried) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(error_resp{make_error(errc::wrong_type, "b/x is an orset")});
    if (peer.read_frame())
      peer.reply(commit_resp::failure(errc::aborted));
  }};
  auto c = connect_to(node.port());
  auto first = c.update({inc("x", 1)});
  BOOST_REQUIRE(!first);
  BOOST_TEST(first.err().code() == errc::wrong_type);
  BOOST_TEST(first.err().message() == "b/x is an orset");
  auto second = c.update({inc("x", 1)});
  BOOST_REQUIRE(!second);
  BOOST_TEST(second.err().code() == errc::aborted);
  node.join();
  BOOST_TEST(node.frames().size() == 2u);
  BOOST_TEST(c.retries_done() == 0u);
}

BOOST_AUTO_TEST_CASE(pipelined_replies_match_requests_in_order) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    const std::size_t n = 200;
    std::vector<bool> is_read(n);
    for (auto&& r : is_read)
      r = rng.chance(0.5);
    // The node reads every request before answering any: the client must
    // send them all without waiting.
    test::fake_server node{1, [&](std::size_t, test::fake_peer& peer) {
      std::vector<request> reqs;
      for (std::size_t i = 0; i < n; ++i)
        if (auto r = peer.read_request())
          reqs.push_back(*r);
      for (std::size_t i = 0; i < reqs.size(); ++i) {
        if (std::holds_alternative<static_read_objects_req>(reqs[i]))
          peer.reply(values_at({static_cast<std::int64_t>(i)}, 1000 + i));
        else
          peer.reply(test::commit_at(1000 + i));
      }
    }};
    auto c = connect_to(node.port(), 2000ms, 3, n);
    auto p = c.make_pipeline();
    for (std::size_t i = 0; i < n; ++i) {
      auto idx = is_read[i] ? p.read({counter("k" + std::to_string(i))})
                            : p.update({inc("k" + std::to_string(i), 1)});
      BOOST_TEST(idx == i);
    }
    auto out = p.collect();
    node.join();
    BOOST_REQUIRE_EQUAL(out.size(), n);
    BOOST_TEST(p.size() == 0u);
    for (std::size_t i = 0; i < n; ++i) {
      BOOST_REQUIRE_MESSAGE(out[i].has_value(),
                        (out[i] ? std::string{} : out[i].err().to_string()));
      BOOST_TEST(out[i]->clock == encode_clock(vector_clock{{0, 1000 + i}}));
      if (is_read[i])
        BOOST_TEST(out[i]->values
                   == std::vector<std::int64_t>{static_cast<std::int64_t>(i)});
      else
        BOOST_TEST(out[i]->values.empty());
      // Frames arrive in submission order too.
      auto req = decode(node.frames()[i]);
      BOOST_TEST(std::holds_alternative<static_read_objects_req>(req)
                 == is_read[i]);
    }
    BOOST_TEST(c.retries_done() == 0u);
  }
}

BOOST_AUTO_TEST_CASE(pipeline_keeps_at_most_max_in_flight_requests_unanswered) {
  const std::size_t n = 1000;
  const std::size_t window = 8;
  std::size_t most_pending = 0;
  std::size_t answered = 0;
  test::fake_server node{1, [&](std::size_t, test::fake_peer& peer) {
    std::size_t pending = 0;
    while (answered < n) {
      if (pending == 0 && !peer.read_frame())
        return;
      if (pending == 0)
        ++pending;
      while (peer.read_frame(0)) // whatever else has arrived
        ++pending;
      most_pending = std::max(most_pending, pending);
      peer.reply(test::commit_at(++answered));
      --pending;
    }
  }};
  auto c = connect_to(node.port(), 2000ms, 3, window);
  auto p = c.make_pipeline();
  for (std::size_t i = 0; i < n; ++i)
    p.update({inc("k", 1)});
  auto out = p.collect();
  node.join();
  BOOST_REQUIRE_EQUAL(out.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_REQUIRE(out[i].has_value());
    BOOST_TEST(out[i]->clock == encode_clock(vector_clock{{0, i + 1}}));
  }
  BOOST_TEST(most_pending <= window);
  BOOST_TEST(most_pending >= 1u);
  BOOST_TEST_MESSAGE("most requests pending at the node: " << most_pending);
}

BOOST_AUTO_TEST_CASE(pipeline_resends_only_unanswered_requests_after_a_drop) {
  test::fake_server node{2, [](std::size_t conn, test::fake_peer& peer) {
    if (conn == 0) {
      for (int i = 0; i < 5; ++i)
        (void) peer.read_frame();
      peer.reply(test::commit_at(1));
      peer.reply(test::commit_at(2));
      peer.close(); // requests 3, 4, 5 unanswered
      return;
    }
    for (int i = 0; i < 3; ++i)
      if (peer.read_frame())
        peer.reply(test::commit_at(3 + i));
  }};
  auto c = connect_to(node.port());
  auto p = c.make_pipeline();
  for (int i = 0; i < 5; ++i)
    p.update({inc("k", 1)});
  auto out = p.collect();
  node.join();
  BOOST_REQUIRE_EQUAL(out.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    BOOST_REQUIRE(out[i]);
    BOOST_TEST(out[i]->clock == encode_clock(vector_clock{{0, i + 1}}));
  }
  BOOST_REQUIRE_EQUAL(node.frames().size(), 8u);
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST((node.frames()[5 + i] == node.frames()[2 + i]));
  for (std::size_t i = 0; i < 5; ++i)
    BOOST_TEST(ids_of(node.frames()[i])
               == (std::vector<op_id>{{test_client_id, i + 1}}));
  BOOST_TEST(c.retries_done() == 1u);
}

BOOST_AUTO_TEST_CASE(session_clock_is_sent_with_the_next_transaction) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(commit_resp{true, encode_clock(vector_clock{{0, 5}, {1, 9}}),
                             0});
    if (peer.read_frame())
      peer.reply(values_at({3}, 7)); // {0: 7}: joins to {0: 7, 1: 9}
    if (peer.read_frame())
      peer.reply(values_at({3}, 8));
    if (peer.read_frame())
      peer.reply(values_at({3}, 8));
  }};
  auto c = connect_to(node.port());
  BOOST_TEST(!c.session_clock().has_value());
  BOOST_REQUIRE(c.update({inc("x", 1)}));
  BOOST_REQUIRE(c.read({counter("x")}));
  BOOST_REQUIRE(c.read({counter("x")}));
  c.set_session_causality(false);
  BOOST_REQUIRE(c.read({counter("x")}));
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 4u);
  BOOST_TEST(!timestamp_of(f[0]).has_value());
  BOOST_TEST((timestamp_of(f[1])
              == encode_clock(vector_clock{{0, 5}, {1, 9}})));
  BOOST_TEST((timestamp_of(f[2])
              == encode_clock(vector_clock{{0, 7}, {1, 9}})));
  BOOST_TEST(!timestamp_of(f[3]).has_value());
  BOOST_TEST((c.session_clock()
              == encode_clock(vector_clock{{0, 8}, {1, 9}})));
}

BOOST_AUTO_TEST_CASE(explicit_clock_overrides_the_session_clock) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(test::commit_at(5));
    if (peer.read_frame())
      peer.reply(values_at({0}, 5));
  }};
  auto c = connect_to(node.port());
  BOOST_REQUIRE(c.update({inc("x", 1)}));
  auto mine = encode_clock(vector_clock{{0, 2}});
  BOOST_REQUIRE(c.read({counter("x")}, mine));
  node.join();
  BOOST_TEST((timestamp_of(node.frames()[1]) == mine));
}

BOOST_AUTO_TEST_CASE(interactive_transaction_sends_its_descriptor_and_op_ids) {
  const std::string desc = "X-descriptor";
  test::fake_server node{1, [&](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(start_transaction_resp{true, desc, 0});
    if (peer.read_frame())
      peer.reply(operation_resp{});
    if (peer.read_frame()) {
      read_objects_resp r;
      r.values = {crdt_value{std::int64_t{5}}, crdt_value{std::int64_t{-1}}};
      peer.reply(r);
    }
    if (peer.read_frame())
      peer.reply(test::commit_at(77));
  }};
  auto c = connect_to(node.port());
  auto tx = c.start();
  BOOST_REQUIRE(tx);
  BOOST_TEST(tx->descriptor() == desc);
  BOOST_REQUIRE(tx->update({inc("k1", 5), inc("k2", -1)}));
  auto v = tx->read({counter("k1"), counter("k2")});
  BOOST_REQUIRE(v);
  BOOST_TEST(*v == (std::vector<std::int64_t>{5, -1}));
  auto clock = tx->commit();
  BOOST_REQUIRE(clock);
  BOOST_TEST(!tx->active());
  BOOST_TEST((c.session_clock() == *clock));
  auto again = tx->commit();
  BOOST_REQUIRE(!again);
  BOOST_TEST(again.err().code() == errc::unavailable);
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 4u);
  auto upd = std::get<update_objects_req>(decode(f[1]));
  BOOST_TEST(upd.transaction_descriptor == desc);
  BOOST_TEST(ids_of(f[1])
             == (std::vector<op_id>{{test_client_id, 1}, {test_client_id, 2}}));
  BOOST_TEST(std::get<read_objects_req>(decode(f[2])).transaction_descriptor
             == desc);
  BOOST_TEST(std::get<commit_transaction_req>(decode(f[3]))
               .transaction_descriptor
             == desc);
}

// commit_with sends the update and the commit in one write: the fake node
// reads both frames before it answers either, so a client that waited for
// the update's reply would time out here.
BOOST_AUTO_TEST_CASE(commit_with_sends_the_update_and_the_commit_without_waiting) {
  const std::string desc = "X-pipelined";
  test::fake_server node{1, [&](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(start_transaction_resp{true, desc, 0});
    if (peer.read_frame() && peer.read_frame()) {
      peer.reply(operation_resp{});
      peer.reply(test::commit_at(91));
    }
  }};
  auto c = connect_to(node.port());
  auto tx = c.start();
  BOOST_REQUIRE(tx);
  auto clock = tx->commit_with({inc("k1", 2), inc("k2", 3)});
  BOOST_REQUIRE(clock);
  BOOST_TEST(!tx->active());
  BOOST_TEST((c.session_clock() == *clock));
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 3u);
  auto upd = std::get<update_objects_req>(decode(f[1]));
  BOOST_TEST(upd.transaction_descriptor == desc);
  BOOST_TEST(ids_of(f[1])
             == (std::vector<op_id>{{test_client_id, 1}, {test_client_id, 2}}));
  BOOST_TEST(std::get<commit_transaction_req>(decode(f[2])).transaction_descriptor
             == desc);
}

// A failed update aborts the transaction at the node; commit_with returns the
// update's error, not the commit's "aborted".
BOOST_AUTO_TEST_CASE(commit_with_returns_the_failed_updates_error) {
  test::fake_server node{1, [&](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(start_transaction_resp{true, "X2", 0});
    if (peer.read_frame() && peer.read_frame()) {
      peer.reply(error_resp{make_error(errc::wrong_type, "b/k1 is an orset")});
      peer.reply(error_resp{make_error(errc::aborted, "the transaction is aborted")});
    }
  }};
  auto c = connect_to(node.port());
  auto tx = c.start();
  BOOST_REQUIRE(tx);
  auto clock = tx->commit_with({inc("k1", 2)});
  BOOST_REQUIRE(!clock);
  BOOST_TEST(clock.err().code() == errc::wrong_type);
  BOOST_TEST(!tx->active());
  node.join();
  BOOST_TEST(node.frames().size() == 3u);
}

BOOST_AUTO_TEST_CASE(dropping_an_active_transaction_aborts_it) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(start_transaction_resp{true, "X1", 0});
    if (peer.read_frame())
      peer.reply(operation_resp{});
  }};
  auto c = connect_to(node.port());
  {
    auto tx = c.start();
    BOOST_REQUIRE(tx);
  }
  node.join();
  BOOST_REQUIRE_EQUAL(node.frames().size(), 2u);
  BOOST_TEST(std::get<abort_transaction_req>(decode(node.frames()[1]))
               .transaction_descriptor
             == "X1");
}

// ---- admin requests (Tally extension, codes 240/241) -------------------------

BOOST_AUTO_TEST_CASE(admin_sends_command_and_args_and_returns_the_text) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(admin_resp{true, "members: 3\n", 0});
    if (peer.read_frame())
      peer.reply(admin_resp{true, "", 0});
  }};
  auto c = connect_to(node.port());
  auto status = c.admin("status", {});
  BOOST_REQUIRE_MESSAGE(status.has_value(),
                        (status ? std::string{} : status.err().to_string()));
  BOOST_TEST(*status == "members: 3\n");
  auto leave = c.admin("leave", {"tally@127.0.0.1:9087"});
  BOOST_REQUIRE(leave.has_value());
  BOOST_TEST(leave->empty());
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 2u);
  BOOST_TEST(f[0].code == 240);
  BOOST_TEST((decode(f[0]) == request{admin_req{"status", {}}}));
  BOOST_TEST((decode(f[1])
              == request{admin_req{"leave", {"tally@127.0.0.1:9087"}}}));
}

BOOST_AUTO_TEST_CASE(admin_failures_carry_the_nodes_message) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(admin_resp::failure(errc::not_found,
                                     "tally@x:1 is not a member"));
    if (peer.read_frame())
      peer.reply(admin_resp{false, "", 200}); // a code this client lacks
    if (peer.read_frame())
      peer.reply(error_resp{make_error(errc::invalid_argument,
                                       "not a transaction request")});
    if (peer.read_frame())
      peer.reply(operation_resp{}); // not an admin reply
  }};
  auto c = connect_to(node.port());
  auto a = c.admin("leave", {"tally@x:1"});
  BOOST_REQUIRE(!a);
  BOOST_TEST(a.err().code() == errc::not_found);
  BOOST_TEST(a.err().message() == "tally@x:1 is not a member");
  auto b = c.admin("status", {});
  BOOST_REQUIRE(!b);
  BOOST_TEST(b.err().code() == errc::unavailable);
  BOOST_TEST(b.err().message().find("admin command 'status' failed")
             != std::string::npos);
  auto e = c.admin("status", {});
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.err().code() == errc::invalid_argument);
  BOOST_TEST(e.err().message()
             == "admin command 'status': not a transaction request");
  auto w = c.admin("status", {});
  BOOST_REQUIRE(!w);
  BOOST_TEST(w.err().code() == errc::corrupt);
  node.join();
  BOOST_TEST(node.frames().size() == 4u);
  BOOST_TEST(c.retries_done() == 0u);
}

BOOST_AUTO_TEST_CASE(admin_requests_out_of_bounds_are_refused_before_sending) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    peer.wait_for_close();
  }};
  {
    auto c = connect_to(node.port());
    for (auto r : {c.admin("", {}),
                   c.admin(std::string(max_admin_command_size + 1, 'x'), {}),
                   c.admin("leave", std::vector<std::string>(
                                      max_admin_args + 1, "a")),
                   c.admin("leave", {std::string(max_admin_arg_size + 1, 'a')}),
                   c.admin("leave", {"\xff"})}) {
      BOOST_REQUIRE(!r);
      BOOST_TEST(r.err().code() == errc::invalid_argument);
    }
  }
  node.join();
  BOOST_TEST(node.frames().empty());
}

BOOST_AUTO_TEST_CASE(admin_is_not_resent_after_a_timeout) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    peer.wait_for_close(); // reads the request, never answers
  }};
  auto c = connect_to(node.port(), 100ms, 3);
  auto r = c.admin("leave", {});
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::timeout);
  node.join();
  BOOST_TEST(node.frames().size() == 1u);
  BOOST_TEST(c.retries_done() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
