// The link proxy (link_proxy.hpp) on its own: bytes pass both ways, a cut
// stops them (reset: the connections drop; blackhole: silence), healing
// restores them, and a node's links are told apart by the process that
// opened them. The "nodes" that open connections are child processes of
// the test (as tallyd is in a chaos run); the node they connect to is a
// listening socket of the test.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "tests/chaos/link_proxy.hpp"
#include "tests/support/tallyd_process.hpp"

using namespace tally::chaos;
using namespace std::chrono_literals;

namespace {

// Reads until `n` bytes came or `limit` passed; what came (shorter on EOF,
// error or time-out).
std::string read_for(int fd, std::size_t n, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[65536];
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0)
      break;
    auto got = ::read(fd, buf, std::min(sizeof buf, n - out.size()));
    if (got <= 0)
      break;
    out.append(buf, std::size_t(got));
  }
  return out;
}

// True when the other end closed (EOF or reset) within `limit`.
bool closed_within(int fd, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0)
      continue;
    auto got = ::read(fd, buf, sizeof buf);
    if (got <= 0)
      return true;
  }
  return false;
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    done += std::size_t(n);
  }
  return true;
}

int listen_on(std::uint16_t& port) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    port = tally::test::free_port();
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 16) == 0)
      return fd;
    ::close(fd);
  }
  return -1;
}

// The next connection on `listener` within `limit`, or -1.
int accept_within(int listener, std::chrono::milliseconds limit) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, int(limit.count())) <= 0)
    return -1;
  return ::accept(listener, nullptr, nullptr);
}

// A child process that connects to 127.0.0.1:`port` (once told to) and
// relays between that connection and `ctl`, a socket the test holds:
// bytes written to ctl go out over TCP, bytes that come back are read from
// ctl, and ctl ends when the TCP connection ends. Only system calls after
// fork (the test process has threads).
struct connector {
  pid_t pid = -1;
  int ctl = -1;

  connector(std::uint16_t port, std::map<pid_t, int>& nodes, std::mutex& mu, int node) {
    int sv[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid = ::fork();
    if (pid == 0) {
      // Only its own ends: a copy of the proxy's sockets (no exec here, so
      // close-on-exec does not apply) would keep a cut link open.
      for (int fd = 3; fd < 1024; ++fd)
        if (fd != sv[1])
          ::close(fd);
      char go;
      if (::read(sv[1], &go, 1) != 1)
        ::_exit(1);
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        ::_exit(2);
      char buf[65536];
      for (;;) {
        pollfd p[2] = {{sv[1], POLLIN, 0}, {fd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0)
          ::_exit(3);
        for (int i = 0; i < 2; ++i) {
          if (!p[i].revents)
            continue;
          int from = i == 0 ? sv[1] : fd, to = i == 0 ? fd : sv[1];
          auto n = ::read(from, buf, sizeof buf);
          if (n <= 0)
            ::_exit(0);
          for (ssize_t done = 0; done < n;) {
            auto w = ::send(to, buf + done, std::size_t(n - done), MSG_NOSIGNAL);
            if (w <= 0)
              ::_exit(0);
            done += w;
          }
        }
      }
    }
    ::close(sv[1]);
    ctl = sv[0];
    {
      std::lock_guard<std::mutex> g{mu};
      nodes[pid] = node;
    }
    char go = 1;
    BOOST_REQUIRE(::write(ctl, &go, 1) == 1);
  }
  ~connector() {
    ::close(ctl);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  connector(const connector&) = delete;
  connector& operator=(const connector&) = delete;
};

// A proxy for node 1 (the test's listener) that knows nodes by a pid map.
// A lookup of a node in `slow` waits until that node leaves it (at most
// 10 s): a slow opener lookup, as on a loaded machine.
struct fixture {
  std::mutex mu;
  std::condition_variable slow_changed;
  std::map<pid_t, int> nodes; // pid -> node
  std::set<int> slow;
  std::uint16_t target_port = 0;
  int listener = listen_on(target_port);
  link_proxy proxy{[this](pid_t pid) {
    std::unique_lock<std::mutex> g{mu};
    auto it = nodes.find(pid);
    if (it == nodes.end())
      return -1;
    const int node = it->second;
    slow_changed.wait_for(g, 10s, [&] { return slow.count(node) == 0; });
    return node;
  }};
  void go_fast(int node) {
    std::lock_guard<std::mutex> g{mu};
    slow.erase(node);
    slow_changed.notify_all();
  }
  std::uint16_t front = proxy.add_node(1, target_port);

  ~fixture() { ::close(listener); }

  // Node `from` (a child) connects to node 1's front port; `server` is the
  // node 1 end.
  struct link {
    std::unique_ptr<connector> client;
    int server = -1;
    ~link() {
      if (server >= 0)
        ::close(server);
    }
  };
  std::unique_ptr<link> connect_from(int from) {
    auto l = std::make_unique<link>();
    l->client = std::make_unique<connector>(front, nodes, mu, from);
    l->server = accept_within(listener, 2000ms);
    return l;
  }
};

bool passes_both_ways(fixture::link& l, const std::string& tag) {
  return write_all(l.client->ctl, "ping " + tag)
         && read_for(l.server, 5 + tag.size(), 2000ms) == "ping " + tag
         && write_all(l.server, "pong " + tag)
         && read_for(l.client->ctl, 5 + tag.size(), 2000ms) == "pong " + tag;
}

} // namespace

BOOST_AUTO_TEST_SUITE(link_proxy_tests)

BOOST_AUTO_TEST_CASE(bytes_pass_both_ways_and_the_opener_is_known) {
  fixture f;
  BOOST_REQUIRE(f.listener >= 0);
  BOOST_REQUIRE(f.front != 0);
  auto l = f.connect_from(0);
  BOOST_REQUIRE(l->server >= 0);
  BOOST_TEST(passes_both_ways(*l, "a"));
  // A megabyte each way, in one go: the proxy buffers and back-pressures.
  std::string big(1 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4096)
    big[i] = char('a' + (i / 4096) % 26);
  std::thread writer{[&] { write_all(l->client->ctl, big); }};
  auto got = read_for(l->server, big.size(), 10000ms);
  writer.join();
  BOOST_TEST((got == big));
  std::thread back{[&] { write_all(l->server, big); }};
  got = read_for(l->client->ctl, big.size(), 10000ms);
  back.join();
  BOOST_TEST((got == big));
  auto s = f.proxy.stats();
  BOOST_TEST(s.accepted == 1u);
  BOOST_TEST(s.unknown_origin == 0u);
  BOOST_TEST(s.bytes >= 2u * big.size());
  BOOST_TEST(f.proxy.open_connections() == 1u);
}

// The opener of a new link is looked up off the forwarding thread: while
// one lookup is slow, the links already open keep passing bytes, and the
// new link passes once its opener is known.
BOOST_AUTO_TEST_CASE(a_slow_opener_lookup_does_not_stop_the_open_links) {
  fixture f;
  BOOST_REQUIRE(f.listener >= 0);
  BOOST_REQUIRE(f.front != 0);
  auto open = f.connect_from(0);
  BOOST_REQUIRE(open->server >= 0);
  BOOST_REQUIRE(passes_both_ways(*open, "before"));
  {
    std::lock_guard<std::mutex> g{f.mu};
    f.slow.insert(2);
  }
  fixture::link late;
  late.client = std::make_unique<connector>(f.front, f.nodes, f.mu, 2);
  // Node 2's lookup is held (the proxy accepted it and asks who it is):
  // node 0's link still passes bytes both ways, again and again.
  for (int i = 0; i < 5; ++i)
    BOOST_TEST(passes_both_ways(*open, "during" + std::to_string(i)));
  BOOST_TEST(accept_within(f.listener, 100ms) < 0); // not forwarded yet
  f.go_fast(2);
  late.server = accept_within(f.listener, 5000ms);
  BOOST_REQUIRE(late.server >= 0);
  BOOST_TEST(passes_both_ways(late, "late"));
  // Held through the 100 ms wait above; the proxy starts its clock when
  // its thread takes the newcomer, a moment after the connect, and counts
  // whole milliseconds (a fresh-clone CI run read 99).
  BOOST_TEST(f.proxy.stats().slowest_lookup_ms >= 90u);
  BOOST_TEST(f.proxy.stats().unknown_origin == 0u);
}

BOOST_AUTO_TEST_CASE(a_reset_cut_drops_the_links_refuses_new_ones_and_heal_restores) {
  fixture f;
  auto l = f.connect_from(0);
  BOOST_REQUIRE(l->server >= 0);
  BOOST_REQUIRE(passes_both_ways(*l, "before"));
  f.proxy.isolate(1, cut_mode::reset); // the node behind the front port
  BOOST_TEST(closed_within(l->server, 2000ms));
  BOOST_TEST(closed_within(l->client->ctl, 2000ms));
  // A new connection is accepted and reset at once; it never reaches node 1.
  auto refused = f.connect_from(0);
  BOOST_TEST(refused->server == -1);
  BOOST_TEST(closed_within(refused->client->ctl, 2000ms));
  BOOST_TEST(f.proxy.stats().reset_by_cut == 1u);
  BOOST_TEST(f.proxy.stats().refused >= 1u);
  f.proxy.heal(1);
  BOOST_TEST(f.proxy.isolated().empty());
  auto again = f.connect_from(0);
  BOOST_REQUIRE(again->server >= 0);
  BOOST_TEST(passes_both_ways(*again, "after"));
}

BOOST_AUTO_TEST_CASE(cutting_a_node_cuts_the_links_it_opened_and_no_others) {
  fixture f;
  auto from0 = f.connect_from(0);
  auto from2 = f.connect_from(2);
  BOOST_REQUIRE(from0->server >= 0);
  BOOST_REQUIRE(from2->server >= 0);
  BOOST_REQUIRE(passes_both_ways(*from0, "0"));
  BOOST_REQUIRE(passes_both_ways(*from2, "2"));
  // Node 0 is cut off: its link into node 1's front port drops, node 2's
  // link into the same port goes on.
  f.proxy.isolate(0, cut_mode::reset);
  BOOST_TEST(closed_within(from0->server, 2000ms));
  BOOST_TEST(passes_both_ways(*from2, "2 during"));
  auto new0 = f.connect_from(0);
  BOOST_TEST(new0->server == -1);
  auto new2 = f.connect_from(2);
  BOOST_REQUIRE(new2->server >= 0);
  BOOST_TEST(passes_both_ways(*new2, "new 2"));
  f.proxy.heal_all();
  auto back0 = f.connect_from(0);
  BOOST_REQUIRE(back0->server >= 0);
  BOOST_TEST(passes_both_ways(*back0, "0 back"));
}

BOOST_AUTO_TEST_CASE(a_blackhole_cut_is_silence_and_heal_delivers_what_waited) {
  fixture f;
  auto l = f.connect_from(0);
  BOOST_REQUIRE(l->server >= 0);
  BOOST_REQUIRE(passes_both_ways(*l, "before"));
  f.proxy.isolate(0, cut_mode::blackhole);
  // Nothing passes, in either direction, and nothing is closed.
  BOOST_REQUIRE(write_all(l->client->ctl, "lost?"));
  BOOST_REQUIRE(write_all(l->server, "late?"));
  BOOST_TEST(read_for(l->server, 5, 500ms).empty());
  BOOST_TEST(read_for(l->client->ctl, 5, 500ms).empty());
  BOOST_TEST(f.proxy.stats().frozen_by_cut == 1u);
  // A connection opened meanwhile is accepted and held, never forwarded.
  auto held = f.connect_from(0);
  BOOST_TEST(held->server == -1);
  f.proxy.heal(0);
  // What waited arrives, as TCP delivers after a short outage; the held
  // connection is reset (its connect attempt was lost).
  BOOST_TEST(read_for(l->server, 5, 2000ms) == "lost?");
  BOOST_TEST(read_for(l->client->ctl, 5, 2000ms) == "late?");
  BOOST_TEST(passes_both_ways(*l, "after"));
  BOOST_TEST(closed_within(held->client->ctl, 2000ms));
  BOOST_TEST(accept_within(f.listener, 200ms) == -1);
}

BOOST_AUTO_TEST_CASE(a_connection_from_no_known_node_is_refused) {
  fixture f;
  int fd = tally::test::try_connect(f.front); // the test process: no node
  BOOST_REQUIRE(fd >= 0);
  BOOST_TEST(closed_within(fd, 2000ms));
  ::close(fd);
  BOOST_TEST(accept_within(f.listener, 200ms) == -1);
  BOOST_TEST(f.proxy.stats().unknown_origin == 1u);
}

BOOST_AUTO_TEST_CASE(a_link_to_a_node_that_is_down_is_reset) {
  fixture f;
  ::close(f.listener); // node 1 is down: nothing listens on its port
  f.listener = -1;
  auto l = std::make_unique<connector>(f.front, f.nodes, f.mu, 0);
  BOOST_TEST(closed_within(l->ctl, 2000ms));
}

BOOST_AUTO_TEST_SUITE_END()
