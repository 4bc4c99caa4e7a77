// client/connection: refused and silent nodes give clear, bounded errors.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

#include "client/client.hpp"
#include "client/connection.hpp"
#include "tests/client/fake_server.hpp"

using namespace tally;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(connection_suite)

BOOST_AUTO_TEST_CASE(connection_refused_names_the_address_and_asks_for_tallyd) {
  // Bound but not listening: the kernel refuses connections to it.
  test::local_socket closed{false};
  auto conn = connection::open("127.0.0.1", closed.port(), 1000ms);
  BOOST_REQUIRE(!conn);
  BOOST_TEST(conn.err().code() == errc::unavailable);
  auto expected_msg = "cannot connect to 127.0.0.1:"
                      + std::to_string(closed.port())
                      + ": connection refused — is tallyd running?";
  BOOST_TEST(conn.err().message() == expected_msg);
}

BOOST_AUTO_TEST_CASE(client_connect_reports_a_refused_node) {
  test::local_socket closed{false};
  client_options opts;
  opts.port = closed.port();
  auto c = client::connect(opts);
  BOOST_REQUIRE(!c);
  BOOST_TEST(c.err().code() == errc::unavailable);
  BOOST_TEST(c.err().message().find("is tallyd running?") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_host_is_reported) {
  auto conn = connection::open("no-such-host.invalid", 8087, 1000ms);
  BOOST_REQUIRE(!conn);
  BOOST_TEST(conn.err().code() == errc::unavailable);
  BOOST_TEST(conn.err().message().find("no-such-host.invalid")
             != std::string::npos);
}

BOOST_AUTO_TEST_CASE(receive_times_out_on_a_node_that_never_answers) {
  // Listening but never accepting: connect succeeds through the backlog,
  // no reply ever comes.
  test::local_socket silent{true};
  auto conn = connection::open("127.0.0.1", silent.port(), 1000ms);
  BOOST_REQUIRE(conn);
  auto req = encode_request(static_read_objects_req{});
  BOOST_REQUIRE(conn->send(req, client_clock::now() + 1000ms));
  auto begin = client_clock::now();
  auto f = conn->receive(begin + 50ms);
  BOOST_REQUIRE(!f);
  BOOST_TEST(f.err().code() == errc::timeout);
  BOOST_TEST((client_clock::now() - begin >= 50ms));
  BOOST_TEST((client_clock::now() - begin < 2000ms));
  BOOST_TEST(!conn->is_open()); // a late reply could no longer be matched
}

BOOST_AUTO_TEST_CASE(zero_timeout_is_a_bad_config) {
  client_options opts;
  opts.timeout = 0ms;
  auto c = client::connect(opts);
  BOOST_REQUIRE(!c);
  BOOST_TEST(c.err().code() == errc::bad_config);
}

BOOST_AUTO_TEST_SUITE_END()
