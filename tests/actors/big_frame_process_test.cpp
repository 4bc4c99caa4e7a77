// Big frames against the real tallyd (docs/SECURITY.md, "Big frames and
// the request memory budget"): the per-frame cap, the node-wide request
// memory budget under several big frames at once, and a big frame within
// both being served and read back.
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "tests/actors/node_process_support.hpp"

using namespace tally;
using namespace tally::test;

namespace {

// A raw client socket that may send frames of any size.
struct big_client {
  int fd = -1;
  explicit big_client(std::uint16_t port) : fd(try_connect(port)) {
    BOOST_REQUIRE(fd >= 0);
  }
  ~big_client() {
    if (fd >= 0)
      ::close(fd);
  }
  big_client(const big_client&) = delete;
  big_client& operator=(const big_client&) = delete;

  // Writes all of `bytes`; false when the server closed the connection.
  bool send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // One response; nullopt when the server closed the connection (or 10 s
  // passed: try_connect sets the receive timeout).
  std::optional<response> receive() {
    std::string head = read_n(4);
    if (head.size() < 4)
      return std::nullopt;
    std::uint32_t len = 0;
    for (char c : head)
      len = (len << 8) | static_cast<std::uint8_t>(c);
    std::string rest = read_n(len);
    if (len == 0 || rest.size() < len)
      return std::nullopt;
    auto r = decode_response(static_cast<std::uint8_t>(rest[0]),
                             std::string_view{rest}.substr(1));
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : r.err().to_string()));
    return *r;
  }
  // True when the server closed the connection (end of stream).
  bool closed_by_server() {
    char b;
    return ::read(fd, &b, 1) == 0;
  }

private:
  std::string read_n(std::size_t n) {
    std::string out;
    out.reserve(n);
    std::vector<char> buf(1 << 16);
    while (out.size() < n) {
      auto got = ::read(fd, buf.data(), std::min(buf.size(), n - out.size()));
      if (got <= 0)
        break;
      out.append(buf.data(), static_cast<std::size_t>(got));
    }
    return out;
  }
};

// The frame of a request, of any size.
std::string frame_bytes(const request& r) {
  auto f = encode_frame(encode_request(r), ~std::uint32_t{0});
  BOOST_REQUIRE(f);
  return *f;
}

bound_object reg(const std::string& key) {
  return bound_object{object_key{"big", key}, crdt_type::lwwreg};
}

// One static update assigning `value` to registers key0..key<n-1>.
request assign_all(const std::string& prefix, std::size_t n, const std::string& value) {
  static_update_objects_req req;
  for (std::size_t i = 0; i < n; ++i)
    req.updates.push_back(update_op{
      reg(prefix + std::to_string(i)),
      crdt_op{crdt_update{register_update{register_assign{value, std::nullopt}}}}});
  return req;
}

bool committed(const std::optional<response>& r) {
  auto* c = r ? std::get_if<commit_resp>(&*r) : nullptr;
  return c && c->success;
}

std::string error_text(const std::optional<response>& r) {
  auto* e = r ? std::get_if<error_resp>(&*r) : nullptr;
  return e ? e->err.message() : std::string{"(no ErrorResp)"};
}

// The 4 length bytes of a frame announcing `length` bytes (code + body).
std::string length_prefix(std::uint32_t length) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((length >> (24 - 8 * i)) & 0xff);
  return out;
}

// A normal request still works: a counter increment, then its read.
void serves_normal_requests(std::uint16_t port) {
  big_client c{port};
  static_update_objects_req up;
  up.updates.push_back(update_op{bound_object{object_key{"big", "c"}, crdt_type::counter},
                                 counter_op{counter_update{3}, std::nullopt}});
  BOOST_REQUIRE(c.send_raw(frame_bytes(up)));
  BOOST_REQUIRE(committed(c.receive()));
  static_read_objects_req rd;
  rd.objects = {bound_object{object_key{"big", "c"}, crdt_type::counter}};
  BOOST_REQUIRE(c.send_raw(frame_bytes(rd)));
  auto r = c.receive();
  BOOST_REQUIRE(r);
  auto* s = std::get_if<static_read_objects_resp>(&*r);
  BOOST_REQUIRE(s);
  BOOST_REQUIRE_EQUAL(s->objects.values.size(), 1u);
  BOOST_TEST(std::get<std::int64_t>(s->objects.values[0]) >= 3);
}

} // namespace

BOOST_AUTO_TEST_SUITE(big_frames)

// Over the per-frame cap: an ErrorResp naming the cap as soon as the length
// arrives (no body is sent), then the connection closes; the node serves
// on. Both the default cap (256 MiB) and a configured one.
BOOST_AUTO_TEST_CASE(a_frame_over_the_frame_cap_is_refused_with_the_cap_named) {
  for (std::uint32_t cap : {std::uint32_t{0}, std::uint32_t{4u << 20}}) {
    temp_dir d;
    server s{d.path, "none"};
    std::vector<std::string> flags;
    if (cap != 0)
      flags = {"--max-frame-size", std::to_string(cap)};
    BOOST_REQUIRE(s.start(flags));
    std::uint32_t limit = cap != 0 ? cap : 256u << 20;
    {
      big_client c{s.port};
      BOOST_REQUIRE(c.send_raw(length_prefix(limit + 1)));
      auto r = c.receive();
      BOOST_TEST_MESSAGE("refused: " << error_text(r));
      BOOST_TEST(error_text(r).find("exceeds the limit of " + std::to_string(limit) + " bytes")
                 != std::string::npos);
      BOOST_TEST(c.closed_by_server());
    }
    serves_normal_requests(s.port);
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

// Four connections announce big frames at once with a budget that holds
// two: two are refused at their length with an ErrorResp naming
// --max-request-memory and closed; the other two are served; the node then
// serves normal requests and the next big frame; it exits cleanly.
BOOST_AUTO_TEST_CASE(concurrent_big_frames_over_the_budget_are_refused_and_the_node_serves_on) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start({"--max-frame-size", std::to_string(8u << 20),
                         "--max-request-memory", std::to_string(20u << 20)}));
  const std::string value(7u << 20, 'v'); // one 7 MiB register: a ~7 MiB frame
  std::vector<std::string> frames;
  std::vector<std::unique_ptr<big_client>> clients;
  for (int i = 0; i < 4; ++i) {
    frames.push_back(frame_bytes(assign_all("k" + std::to_string(i) + "-", 1, value)));
    BOOST_REQUIRE_GT(frames.back().size(), 7u << 20);
    BOOST_REQUIRE_LE(frames.back().size(), 8u << 20);
    clients.push_back(std::make_unique<big_client>(s.port));
    // The length and a few bytes: the whole frame is charged at its length.
    BOOST_REQUIRE(clients.back()->send_raw(std::string_view{frames.back()}.substr(0, 1024)));
  }
  // Exactly two are refused, whichever the node read last; bounded wait.
  std::vector<bool> refused(4, false);
  int answered = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (answered < 2 && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> p;
    for (auto& c : clients)
      p.push_back(pollfd{c->fd, POLLIN, 0});
    if (::poll(p.data(), p.size(), 200) <= 0)
      continue;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (refused[i] || !(p[i].revents & POLLIN))
        continue;
      auto r = clients[i]->receive();
      BOOST_TEST_MESSAGE("connection " << i << ": " << error_text(r));
      BOOST_TEST(error_text(r).find("--max-request-memory") != std::string::npos);
      BOOST_TEST(clients[i]->closed_by_server());
      refused[i] = true;
      ++answered;
    }
  }
  BOOST_REQUIRE_EQUAL(answered, 2);
  // The two admitted ones send the rest and are served.
  for (std::size_t i = 0; i < 4; ++i) {
    if (refused[i])
      continue;
    BOOST_REQUIRE(clients[i]->send_raw(std::string_view{frames[i]}.substr(1024)));
    BOOST_TEST(committed(clients[i]->receive()));
  }
  serves_normal_requests(s.port);
  // Their memory was given back: one more big frame is admitted and served.
  big_client again{s.port};
  BOOST_REQUIRE(again.send_raw(frames[0]));
  BOOST_TEST(committed(again.receive()));
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// With the default settings a frame bigger than the old 16 MiB cap (24
// registers of 1 MiB) is served, and a read of all of them returns them.
BOOST_AUTO_TEST_CASE(a_big_frame_within_the_budget_is_served) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start());
  const std::size_t n = 24;
  std::string value(1u << 20, 'a');
  for (std::size_t i = 0; i < value.size(); i += 4096)
    value[i] = static_cast<char>('a' + (i / 4096) % 26);
  auto bytes = frame_bytes(assign_all("r", n, value));
  BOOST_REQUIRE_GT(bytes.size(), 16u << 20);
  big_client c{s.port};
  BOOST_REQUIRE(c.send_raw(bytes));
  BOOST_REQUIRE(committed(c.receive()));
  static_read_objects_req rd;
  for (std::size_t i = 0; i < n; ++i)
    rd.objects.push_back(reg("r" + std::to_string(i)));
  BOOST_REQUIRE(c.send_raw(frame_bytes(rd)));
  auto r = c.receive();
  BOOST_REQUIRE(r);
  auto* sr = std::get_if<static_read_objects_resp>(&*r);
  BOOST_REQUIRE(sr);
  BOOST_REQUIRE_EQUAL(sr->objects.values.size(), n);
  for (auto& v : sr->objects.values)
    BOOST_TEST((std::get<std::string>(v) == value));
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// A budget that could never admit a frame at the cap is a configuration
// error: exit code 2 before anything is created, the flags named.
BOOST_AUTO_TEST_CASE(a_budget_below_one_frame_at_the_cap_exits_2) {
  temp_dir d;
  auto data = d.path + "/never";
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::execl(TALLYD_PATH, TALLYD_PATH, "--data-dir", data.c_str(), "--port", "0",
            "--max-frame-size", "1048576", "--max-request-memory", "1048579",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 2);
  BOOST_TEST_MESSAGE("tallyd said: " << err);
  BOOST_TEST(err.find("--max-request-memory 1048579 is below a frame at --max-frame-size")
             != std::string::npos);
  BOOST_TEST(!std::filesystem::exists(data));
}

BOOST_AUTO_TEST_SUITE_END()
