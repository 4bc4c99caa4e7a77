// server/client_server.hpp over real loopback sockets, with a handler that
// holds its replies: a shard with max_shard_in_flight requests unanswered
// takes no more (and reads no socket) until answers make room, then serves
// the rest in order; stopping with requests still held returns, and their
// late replies go nowhere. No CAF: the handler is plain C++.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "server/client_server.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

// Takes every request and holds its reply until released.
class holding_handler final : public request_handler {
public:
  void handle(session_id, request req, reply_fn reply) override {
    std::lock_guard<std::mutex> g{mu_};
    auto* a = std::get_if<admin_req>(&req);
    held_.emplace_back(a ? a->command : std::string{}, std::move(reply));
    ++handled_;
  }
  void closed(session_id) override {}

  int handled() const { return handled_.load(); }
  // Answers every held request with its own command as the text.
  void release_all() {
    std::vector<std::pair<std::string, reply_fn>> out;
    {
      std::lock_guard<std::mutex> g{mu_};
      out.swap(held_);
    }
    for (auto& [text, reply] : out)
      reply(admin_resp{true, text, 0});
  }

private:
  std::mutex mu_;
  std::vector<std::pair<std::string, reply_fn>> held_;
  std::atomic<int> handled_{0};
};

// A blocking loopback client.
struct client {
  int fd = -1;
  explicit client(std::uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{10, 0}; // a read never blocks a failing test for long
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~client() { ::close(fd); }
  void send_request(const std::string& tag) {
    auto f = encode_frame(encode_request(admin_req{tag, {}}));
    BOOST_REQUIRE(f);
    BOOST_REQUIRE(::send(fd, f->data(), f->size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f->size()));
  }
  // The texts of the next `n` replies.
  std::vector<std::string> replies(std::size_t n) {
    frame_decoder dec{~0u};
    std::vector<std::string> out;
    char buf[4096];
    while (out.size() < n) {
      auto got = ::recv(fd, buf, sizeof buf, 0);
      BOOST_REQUIRE_MESSAGE(got > 0, "connection closed or timed out after "
                                       << out.size() << " replies");
      BOOST_REQUIRE(dec.feed(std::string_view{buf, static_cast<std::size_t>(got)}));
      while (auto f = dec.next()) {
        auto r = decode_response(f->code, f->body);
        BOOST_REQUIRE(r);
        auto* a = std::get_if<admin_resp>(&*r);
        BOOST_REQUIRE(a);
        out.push_back(a->text);
      }
    }
    return out;
  }
};

// Polls `pred` every millisecond for at most 10 s.
template <class Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 10000 && !pred(); ++i)
    std::this_thread::sleep_for(1ms);
  return pred();
}

server_options options(std::size_t shard_cap) {
  server_options o;
  o.port = 0;
  o.threads = 1;
  o.max_shard_in_flight = shard_cap;
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_server_tests)

BOOST_AUTO_TEST_CASE(a_full_shard_takes_no_more_requests_until_answers_make_room) {
  auto handler = std::make_shared<holding_handler>();
  auto server = client_server::start(options(4), handler);
  BOOST_REQUIRE(server);
  client a{(*server)->port()}, b{(*server)->port()};
  for (int i = 0; i < 5; ++i) {
    a.send_request("a" + std::to_string(i));
    b.send_request("b" + std::to_string(i));
  }
  BOOST_REQUIRE(eventually([&] { return handler->handled() >= 4; }));
  // Ten requests sent, four taken: the shard is full. A short window in
  // which nothing may change (the shard polls its sockets all along).
  std::this_thread::sleep_for(100ms);
  BOOST_CHECK_EQUAL(handler->handled(), 4);
  handler->release_all();
  BOOST_REQUIRE(eventually([&] { return handler->handled() >= 8; }));
  handler->release_all();
  BOOST_REQUIRE(eventually([&] { return handler->handled() == 10; }));
  handler->release_all();
  // Every request answered, each connection's in order.
  BOOST_CHECK((a.replies(5) == std::vector<std::string>{"a0", "a1", "a2", "a3", "a4"}));
  BOOST_CHECK((b.replies(5) == std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"}));
}

BOOST_AUTO_TEST_CASE(without_a_shard_bound_every_request_is_taken_at_once) {
  auto handler = std::make_shared<holding_handler>();
  auto server = client_server::start(options(0), handler);
  BOOST_REQUIRE(server);
  client a{(*server)->port()};
  for (int i = 0; i < 50; ++i)
    a.send_request(std::to_string(i));
  BOOST_CHECK(eventually([&] { return handler->handled() == 50; }));
  handler->release_all();
  BOOST_CHECK_EQUAL(a.replies(50).back(), "49");
}

BOOST_AUTO_TEST_CASE(stopping_with_requests_held_returns_and_late_replies_go_nowhere) {
  auto handler = std::make_shared<holding_handler>();
  auto server = client_server::start(options(4), handler);
  BOOST_REQUIRE(server);
  client a{(*server)->port()};
  for (int i = 0; i < 8; ++i)
    a.send_request(std::to_string(i));
  BOOST_REQUIRE(eventually([&] { return handler->handled() == 4; }));
  (*server)->stop(); // joins the shard: must not wait for the held replies
  handler->release_all(); // into a closed inbox: dropped, no crash
  char byte;
  BOOST_CHECK_LE(::recv(a.fd, &byte, 1, 0), 0); // the connection was closed
}

BOOST_AUTO_TEST_SUITE_END()
