// The default node links (issue 18; docs/SECURITY.md, "Node links"): TLS
// with certificates made from the cluster secret. A node started without
// any link flag makes its own secret and serves; bytes that are not TLS
// (the 32-byte frame that crashed a node inside CAF's BASP decoder, garbage,
// HTTP) leave it serving and its links up; a node without the secret, or
// with another one, cannot join and is named in the member's log, at most
// once per address and window; secret files with loose modes or too few
// bytes are refused with exit code 2.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/cluster/cluster_support.hpp"

using namespace tally;
using namespace tally::test;

namespace {

const std::string crash_frame = std::string(15, '\0') + '\1' + std::string(16, '\0');

bool still_running(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

// A tallyd whose log the test reads: node 0 of a cluster with the secret
// in `secret`, or more flags.
struct logged_node {
  temp_dir dir;
  temp_dir out;
  std::uint16_t port = free_port();
  std::uint16_t cluster_port = free_port();
  std::unique_ptr<child_process> p;

  explicit logged_node(std::vector<std::string> flags) {
    std::filesystem::create_directories(out.path);
    std::vector<std::string> args{"--data-dir", dir.path, "--port", std::to_string(port),
                                  "--cluster-port", std::to_string(cluster_port),
                                  "--partitions", "8", "--durability", "none"};
    args.insert(args.end(), flags.begin(), flags.end());
    p = std::make_unique<child_process>(TALLYD_PATH, args, out.path);
  }
  bool ready() { return p->wait_for_stderr("tallyd ready on port", std::chrono::seconds{20}); }
  std::string log() const { return slurp(p->err); }
  std::size_t count(const std::string& text) const {
    auto s = log();
    std::size_t n = 0;
    for (auto at = s.find(text); at != std::string::npos; at = s.find(text, at + 1))
      ++n;
    return n;
  }
};

std::vector<std::string> join_args(const temp_dir& d, std::uint16_t cluster_port) {
  return {"--data-dir", d.path, "--port", std::to_string(free_port()), "--cluster-port",
          std::to_string(free_port()), "--partitions", "8", "--join",
          "127.0.0.1:" + std::to_string(cluster_port)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_secret)

BOOST_AUTO_TEST_CASE(a_node_without_link_flags_makes_a_secret_and_survives_garbage) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start()); // no link flag at all: the default
  struct stat st{};
  BOOST_REQUIRE(::stat((d.path + "/cluster/secret").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(send_raw(s.cluster_port, crash_frame));
  BOOST_TEST(send_raw(s.cluster_port, std::string(4096, '\xff')));
  BOOST_TEST(send_raw(s.cluster_port, "GET / HTTP/1.0\r\n\r\n"));
  BOOST_TEST(still_running(s.pid));
  auto c = connect_to(s.port);
  BOOST_REQUIRE(c);
  BOOST_TEST(c->update({{object_key{"b", "k"}, 1}}).has_value());
  // A restart uses the same secret (no flag needed).
  BOOST_TEST(s.stop() == 0);
  BOOST_REQUIRE(s.start());
}

BOOST_AUTO_TEST_CASE(garbage_to_a_cluster_port_leaves_the_cluster_serving) {
  local_cluster cl; // every node gets cl.secret_file
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  for (int round = 0; round < 3; ++round) {
    BOOST_TEST(send_raw(cl.nodes[0]->cluster_port, crash_frame));
    BOOST_TEST(send_raw(cl.nodes[0]->cluster_port, "GET / HTTP/1.0\r\n\r\n"));
    BOOST_TEST(send_raw(cl.nodes[1]->cluster_port, std::string(4096, '\0')));
  }
  BOOST_TEST(still_running(cl.nodes[0]->pid));
  BOOST_TEST(still_running(cl.nodes[1]->pid));
  // Both nodes' partitions answer through either node, and a third joins.
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
}

// CAF's OpenSSL session left a failed handshake's error in the thread's
// OpenSSL error queue, and the next read of a healthy node link failed on
// it: garbage made node 0 drop its link to node 1 ("peer ... is down" about
// 150 ms later). Reads of node 1's partitions through node 0 must go on
// succeeding for a second after the garbage, with no link dropped.
BOOST_AUTO_TEST_CASE(garbage_does_not_drop_the_links_between_members) {
  local_cluster cl; // for its secret file and data dirs
  logged_node n0{{"--cluster-secret-file", cl.secret_file}};
  BOOST_REQUIRE(n0.ready());
  server n1{cl.dir_of(1), "none"};
  BOOST_REQUIRE(n1.start({"--cluster-secret-file", cl.secret_file, "--join",
                          "127.0.0.1:" + std::to_string(n0.cluster_port)}));
  auto keys = bound(one_key_per_partition("links"));
  auto c = connect_to(n0.port);
  BOOST_REQUIRE(c);
  bool serving = false; // every partition answers through node 0 (handoffs done)
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !serving && std::chrono::steady_clock::now() < deadline;) {
    serving = c->read(keys).has_value()
              && status_of_dir(n0.dir.path).find("handoff in progress") == std::string::npos;
    if (!serving)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_REQUIRE(serving);
  for (int round = 0; round < 3; ++round) {
    BOOST_TEST(send_raw(n0.cluster_port, crash_frame));
    BOOST_TEST(send_raw(n0.cluster_port, "GET / HTTP/1.0\r\n\r\n"));
  }
  int reads = 0, failed = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
       std::chrono::steady_clock::now() < until; ++reads)
    failed += c->read(keys).has_value() ? 0 : 1;
  BOOST_TEST(failed == 0, failed << " of " << reads << " reads failed");
  BOOST_TEST(n0.count(" is down") == 0u, n0.log());
}

BOOST_AUTO_TEST_CASE(a_node_without_the_secret_cannot_join_and_is_logged) {
  local_cluster cl; // only for its secret file
  logged_node n0{{"--cluster-secret-file", cl.secret_file}};
  BOOST_REQUIRE(n0.ready());
  // No secret at all: refused before any connection (exit 2).
  temp_dir none;
  auto r = run_tallyd(join_args(none, n0.cluster_port), std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("--join needs the cluster's secret") != std::string::npos, r.output);
  // Another secret: the handshake fails, the joiner exits 1 and the member
  // names it in its log.
  temp_dir rogue;
  write_secret_file(cl.root.path + "/other.secret");
  auto args = join_args(rogue, n0.cluster_port);
  args.insert(args.end(), {"--cluster-secret-file", cl.root.path + "/other.secret"});
  r = run_tallyd(args, std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("cannot join through 127.0.0.1:" + std::to_string(n0.cluster_port))
               != std::string::npos,
             r.output);
  BOOST_TEST(r.output.find("another cluster secret") != std::string::npos, r.output);
  BOOST_TEST(n0.p->wait_for_stderr("refused node link from 127.0.0.1:"), n0.log());
  BOOST_TEST(n0.log().find("unknown CA") != std::string::npos, n0.log());
  // Plain links: refused too.
  temp_dir plain;
  args = join_args(plain, n0.cluster_port);
  args.push_back("--insecure-cluster-links");
  r = run_tallyd(args, std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("or it authenticates its members") != std::string::npos, r.output);
  // The cluster did not change.
  auto status = status_of_dir(n0.dir.path);
  BOOST_TEST(status.find("1 member(s)") != std::string::npos, status);
}

BOOST_AUTO_TEST_CASE(refused_links_are_logged_once_per_address_and_window) {
  local_cluster cl;
  logged_node n0{{"--cluster-secret-file", cl.secret_file, "--refused-link-log-ms", "400"}};
  BOOST_REQUIRE(n0.ready());
  const std::string line = "refused node link from 127.0.0.1:";
  // A burst: one line for the address (the window is 400 ms, the burst
  // takes a few ms).
  for (int i = 0; i < 10; ++i)
    BOOST_TEST(send_raw(n0.cluster_port, crash_frame));
  BOOST_REQUIRE(n0.p->wait_for_stderr(line));
  BOOST_TEST(n0.log().find("TLS handshake failed: wrong version number") != std::string::npos,
             n0.log());
  BOOST_TEST(n0.count(line) <= 2u, n0.log()); // 2 if the burst straddled a window
  // After the window, the next refusal is logged with the count of the
  // ones in between (bounded poll: one attempt every 50 ms).
  bool counted = false;
  for (int i = 0; i < 100 && !counted; ++i) {
    send_raw(n0.cluster_port, "GET / HTTP/1.0\r\n\r\n");
    counted = n0.log().find("more from 127.0.0.1 not logged") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST(counted, n0.log());
  BOOST_TEST(still_running(n0.p->pid));
}

BOOST_AUTO_TEST_CASE(bad_secret_files_and_flag_mixes_exit_2_with_a_clear_message) {
  temp_dir d;
  std::filesystem::create_directories(d.path);
  auto run = [&](std::vector<std::string> flags) {
    temp_dir data;
    std::vector<std::string> args{"--data-dir", data.path, "--port",
                                  std::to_string(free_port())};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_tallyd(args, std::chrono::seconds(30));
  };
  const auto loose = d.path + "/loose.secret";
  write_secret_file(loose);
  ::chmod(loose.c_str(), 0644);
  auto r = run({"--cluster-secret-file", loose});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("has mode 0644") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("chmod 600") != std::string::npos, r.output);
  const auto short_one = d.path + "/short.secret";
  {
    std::ofstream out{short_one};
    out << "hunter2\n";
  }
  ::chmod(short_one.c_str(), 0600);
  r = run({"--cluster-secret-file", short_one});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("holds 7 bytes; a cluster secret has at least 32") != std::string::npos,
             r.output);
  r = run({"--cluster-secret-file", d.path + "/missing"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("cannot be read") != std::string::npos, r.output);
  r = run({"--cluster-secret-file", loose, "--insecure-cluster-links"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("cannot be combined") != std::string::npos, r.output);
  r = run({"--insecure-cluster-links=yes"});
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("takes no value") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_SUITE_END()
