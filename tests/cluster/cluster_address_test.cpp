// --cluster-bind and --advertise (issue 18; docs/CLUSTER.md, "Nodes and
// their identity"): a node's id is the address its peers reach it at, which
// may differ from the address it listens on (a name, a forwarded port).
// Everything on 127.0.0.1.
#include <boost/test/unit_test.hpp>

#include <poll.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster/cluster_support.hpp"

using namespace tally;
using namespace tally::test;

namespace {

// Forwards every connection to 127.0.0.1:`port` on to 127.0.0.1:`target`,
// as a NAT or a container's port mapping would.
class tcp_forwarder {
public:
  tcp_forwarder(std::uint16_t port, std::uint16_t target) : target_(target) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 16) == 0;
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~tcp_forwarder() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pumps_)
      t.join();
    ::close(fd_);
  }
  tcp_forwarder(const tcp_forwarder&) = delete;
  tcp_forwarder& operator=(const tcp_forwarder&) = delete;

  bool listening() const { return ok_; }
  int forwarded() const { return forwarded_.load(); }

private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) // wakes up for stop_ every 50 ms
        continue;
      int in = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (in < 0)
        continue;
      int out = try_connect(target_);
      if (out < 0) {
        ::close(in);
        continue;
      }
      ++forwarded_;
      pumps_.emplace_back([this, in, out] { pump(in, out); });
    }
  }

  void pump(int a, int b) {
    char buf[16384];
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    bool open = true;
    while (open && !stop_) {
      if (::poll(p, 2, 50) <= 0)
        continue;
      for (int i = 0; i < 2 && open; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
          continue;
        auto n = ::read(p[i].fd, buf, sizeof buf);
        for (ssize_t done = 0; n > 0 && done < n;) {
          auto w = ::write(p[1 - i].fd, buf + done, static_cast<std::size_t>(n - done));
          if (w <= 0) {
            n = -1;
            break;
          }
          done += w;
        }
        open = n > 0;
      }
    }
    ::close(a);
    ::close(b);
  }

  std::uint16_t target_;
  int fd_ = -1;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> forwarded_{0};
  std::thread acceptor_;
  std::vector<std::thread> pumps_; // touched by the acceptor thread only, until joined
};

// Starts node i of `cl` on cluster port `cport` with `flags` (and the
// cluster's secret, and --join node 0 for i > 0).
bool start_node(local_cluster& cl, std::uint16_t cport, std::vector<std::string> flags) {
  auto i = cl.nodes.size();
  cl.nodes.push_back(std::make_unique<server>(cl.dir_of(i), cl.durability));
  cl.nodes.back()->cluster_port = cport; // the harness passes --cluster-port
  for (auto& f : cl.link_flags())
    flags.push_back(f);
  if (i > 0) {
    flags.push_back("--join");
    flags.push_back("127.0.0.1:" + std::to_string(cl.nodes[0]->cluster_port));
  }
  return cl.nodes.back()->start(flags);
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_address)

BOOST_AUTO_TEST_CASE(peers_reach_a_node_at_its_advertised_name) {
  local_cluster cl;
  std::vector<std::uint16_t> cports{free_port(), free_port()};
  auto flags = [&](std::size_t i) {
    return std::vector<std::string>{"--cluster-bind", "127.0.0.1", "--advertise",
                                    "localhost:" + std::to_string(cports[i])};
  };
  BOOST_REQUIRE(start_node(cl, cports[0], flags(0)));
  BOOST_REQUIRE(start_node(cl, cports[1], flags(1)));
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  auto s = status_of(*cl.nodes[0]);
  BOOST_TEST(s.find("this node tally@localhost:" + std::to_string(cports[0])) != std::string::npos,
             s);
  BOOST_TEST(s.find("tally@localhost:" + std::to_string(cports[1]) + " | valid | up")
               != std::string::npos,
             s);
  // A restart with the same flags keeps the id; another --advertise is
  // refused, naming the right one.
  BOOST_TEST(cl.nodes[1]->stop() == 0);
  auto r = run_tallyd({"--data-dir", cl.dir_of(1), "--port", std::to_string(free_port()),
                       "--partitions", "8", "--cluster-secret-file", cl.secret_file,
                       "--advertise", "127.0.0.1:" + std::to_string(cports[1])},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("start it with --advertise localhost:" + std::to_string(cports[1]))
               != std::string::npos,
             r.output);
  cl.nodes[1] = std::make_unique<server>(cl.dir_of(1), cl.durability);
  cl.nodes[1]->cluster_port = cports[1];
  auto again = flags(1);
  for (auto& f : cl.link_flags())
    again.push_back(f);
  BOOST_REQUIRE(cl.nodes[1]->start(again));
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
}

BOOST_AUTO_TEST_CASE(an_advertised_port_forwarded_to_the_cluster_port_works) {
  local_cluster cl;
  BOOST_REQUIRE(cl.add());
  auto listen = free_port();
  auto advertised = free_port();
  tcp_forwarder fwd{advertised, listen};
  BOOST_REQUIRE(fwd.listening());
  // Node 1 listens on `listen`; its peers know it as 127.0.0.1:advertised.
  BOOST_REQUIRE(start_node(cl, listen, {"--advertise", "127.0.0.1:" + std::to_string(advertised)}));
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  auto s = status_of(*cl.nodes[0]);
  BOOST_TEST(s.find("tally@127.0.0.1:" + std::to_string(advertised) + " | valid | up")
               != std::string::npos,
             s);
  // Node 1 opened its link to node 0 itself; a third node learns node 1
  // from gossip, by its id, and connects to it there.
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({2, 1, 0}));
  BOOST_TEST(fwd.forwarded() > 0);
  auto keys = one_key_per_partition("fwd");
  auto c = connect_to(cl.nodes[0]->port);
  BOOST_REQUIRE(c);
  auto w = c->update({{keys[0], 1}, {keys[1], 2}}); // partitions on both nodes
  BOOST_REQUIRE_MESSAGE(w, (w ? "" : w.err().to_string()));
}

BOOST_AUTO_TEST_CASE(address_flags_are_checked_with_exit_code_2) {
  temp_dir d;
  auto run = [&](std::vector<std::string> flags) {
    std::vector<std::string> args{"--data-dir", d.path, "--port", std::to_string(free_port())};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_tallyd(args, std::chrono::seconds(30));
  };
  auto r = run({"--cluster-bind", "0.0.0.0"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("needs --advertise HOST:PORT") != std::string::npos, r.output);
  r = run({"--advertise", "localhost"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("is not HOST:PORT") != std::string::npos, r.output);
  r = run({"--advertise", "localhost:0"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("no valid port") != std::string::npos, r.output);
  r = run({"--cluster-bind", ""});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("--cluster-bind needs an address") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_SUITE_END()
