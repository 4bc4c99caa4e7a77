// TLS on node links (issue 18; docs/SECURITY.md, "Node links"): nodes with
// certificates from the cluster's CA form a cluster and serve; a node
// without TLS, or with a certificate from another CA, cannot join; bytes
// that are not TLS (the 32-byte frame that crashed a node inside CAF's
// BASP decoder) end in a failed handshake and the node goes on serving.
// The certificates are test fixtures (tests/cluster/tls/README.md).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "tests/cluster/cluster_support.hpp"

#ifndef TALLY_TLS_FIXTURES
#error "TALLY_TLS_FIXTURES must name tests/cluster/tls (tests/CMakeLists.txt)"
#endif

using namespace tally;
using namespace tally::test;

namespace {

std::vector<std::string> tls_flags(const std::string& who, const std::string& ca) {
  const std::string dir = TALLY_TLS_FIXTURES;
  return {"--tls-cert", dir + "/" + who + ".pem", "--tls-key", dir + "/" + who + "-key.pem",
          "--tls-ca", dir + "/" + ca + ".pem"};
}

std::vector<std::string> cluster_flags() { return tls_flags("node", "tally-ca"); }

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_tls)

BOOST_AUTO_TEST_CASE(tls_nodes_form_a_cluster_and_serve) {
  local_cluster cl;
  cl.extra = cluster_flags();
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  auto keys = one_key_per_partition("tls");
  auto c1 = connect_to(cl.nodes[1]->port);
  BOOST_REQUIRE(c1);
  auto w = c1->update({{keys[0], 3}, {keys[5], 4}}); // both nodes' partitions
  BOOST_REQUIRE_MESSAGE(w, (w ? "" : w.err().to_string()));
  auto c0 = connect_to(cl.nodes[0]->port);
  BOOST_REQUIRE(c0);
  auto r = c0->read(bound({keys[0], keys[5]}), *w);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->values[0] == 3);
  BOOST_TEST(r->values[1] == 4);
  BOOST_TEST(status_of(*cl.nodes[0]).find("2 member(s)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(nodes_without_the_cluster_certificate_cannot_join) {
  local_cluster cl;
  cl.extra = cluster_flags();
  BOOST_REQUIRE(cl.add());
  const auto join = "127.0.0.1:" + std::to_string(cl.nodes[0]->cluster_port);
  // Plain TCP.
  temp_dir plain;
  auto r = run_tallyd({"--data-dir", plain.path, "--port", std::to_string(free_port()),
                       "--cluster-port", std::to_string(free_port()), "--join", join,
                       "--insecure-cluster-links"},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("cannot join through " + join) != std::string::npos, r.output);
  BOOST_TEST(r.output.find("or it authenticates its members") != std::string::npos, r.output);
  // The cluster secret instead of a certificate of its CA.
  temp_dir with_secret;
  r = run_tallyd({"--data-dir", with_secret.path, "--port", std::to_string(free_port()),
                  "--cluster-port", std::to_string(free_port()), "--join", join,
                  "--cluster-secret-file", cl.secret_file},
                 std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("cannot join through " + join) != std::string::npos, r.output);
  // TLS, but a certificate of another cluster's CA.
  temp_dir rogue;
  auto args = std::vector<std::string>{"--data-dir", rogue.path, "--port",
                                       std::to_string(free_port()), "--cluster-port",
                                       std::to_string(free_port()), "--join", join};
  for (auto& f : tls_flags("rogue-node", "rogue-ca"))
    args.push_back(f);
  r = run_tallyd(args, std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("another cluster secret (--cluster-secret-file) or CA (--tls-ca)")
               != std::string::npos,
             r.output);
  // The cluster did not change.
  BOOST_TEST(status_of(*cl.nodes[0]).find("1 member(s)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_tls_do_not_reach_the_node_protocol) {
  local_cluster cl;
  cl.extra = cluster_flags();
  BOOST_REQUIRE(cl.add());
  // The frame that crashed a node in CAF's BASP decoder (issue 18), then
  // other garbage; each connection ends in a failed TLS handshake.
  std::string crash = std::string(15, '\0') + '\1' + std::string(16, '\0');
  BOOST_TEST(send_raw(cl.nodes[0]->cluster_port, crash));
  BOOST_TEST(send_raw(cl.nodes[0]->cluster_port, std::string(4096, '\xff')));
  BOOST_TEST(send_raw(cl.nodes[0]->cluster_port, "GET / HTTP/1.0\r\n\r\n"));
  BOOST_REQUIRE(cl.wait_serving({0}));
  int status = 0;
  BOOST_TEST(::waitpid(cl.nodes[0]->pid, &status, WNOHANG) == 0); // still running
  // And it still takes a member.
  BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
}

BOOST_AUTO_TEST_CASE(tls_flags_come_as_three_or_not_at_all) {
  temp_dir d;
  auto r = run_tallyd({"--data-dir", d.path, "--port", std::to_string(free_port()),
                       "--tls-cert", std::string{TALLY_TLS_FIXTURES} + "/node.pem"},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 2, r.output);
  BOOST_TEST(r.output.find("--tls-key is missing") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_SUITE_END()
