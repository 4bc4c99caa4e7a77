// TLS on the client port (issue 18; docs/SECURITY.md, "The client port"):
// a real tallyd on 127.0.0.1 with --client-tls-port beside its plain port,
// the client library and the tally CLI over TLS, clients that must be
// refused (another CA, no certificate when one is required, plain bytes on
// the TLS port, a handshake that never ends), and the node serving the
// others throughout. The certificates are test fixtures
// (tests/cluster/tls/README.md).
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "client/client.hpp"
#include "protocol/messages.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/tallyd_process.hpp"

#ifndef TALLY_TLS_FIXTURES
#error "TALLY_TLS_FIXTURES must name tests/cluster/tls (tests/CMakeLists.txt)"
#endif
#ifndef TALLY_CLI_PATH
#error "TALLY_CLI_PATH must name the tally CLI (tests/CMakeLists.txt)"
#endif

using namespace tally;
using namespace tally::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  return std::string{TALLY_TLS_FIXTURES} + "/" + name;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One tallyd with a plain port and a TLS port; its stderr is kept (the log).
struct tls_node {
  temp_dir dir;
  std::uint16_t port = 0;     // plain
  std::uint16_t tls_port = 0; // TLS
  std::unique_ptr<child_process> proc;

  // Starts tallyd with the client port's certificate and `extra` flags; up
  // to 3 attempts on other ports (a port can be taken between free_port()
  // and tallyd's listen). False when it never logged that it is ready.
  bool start(const std::vector<std::string>& extra = {}) {
    fs::create_directories(dir.path);
    for (int attempt = 0; attempt < 3; ++attempt) {
      port = free_port();
      do
        tls_port = free_port();
      while (tls_port == port);
      auto cluster = free_port();
      std::vector<std::string> args{"--data-dir", dir.path + "/data", "--port",
                                    std::to_string(port), "--cluster-port",
                                    std::to_string(cluster), "--partitions", "8",
                                    "--durability", "none", "--client-tls-port",
                                    std::to_string(tls_port), "--client-tls-cert",
                                    fixture("client-port-node.pem"), "--client-tls-key",
                                    fixture("client-port-node-key.pem")};
      args.insert(args.end(), extra.begin(), extra.end());
      fs::remove_all(dir.path + "/data");
      proc.reset(); // the previous attempt's process, if any, is killed
      proc = std::make_unique<child_process>(TALLYD_PATH, args, dir.path);
      if (!proc->started())
        return false;
      auto deadline = std::chrono::steady_clock::now() + 20s;
      while (std::chrono::steady_clock::now() < deadline) {
        if (contains(log(), "tallyd ready on port"))
          return true;
        int code = 0;
        if (proc->exited(code))
          break; // a port was taken: try others
        std::this_thread::sleep_for(10ms);
      }
    }
    return false;
  }

  std::string log() const { return slurp(proc->err); }
  bool running() {
    int code = 0;
    return !proc->exited(code);
  }
  bool wait_for_log(const std::string& text) {
    return child_process::wait_for_text(proc->err, text, 10s);
  }
};

client_options tls_options(std::uint16_t port, const std::string& ca = "client-port-ca.pem") {
  client_options o;
  o.port = port;
  o.tls_ca = fixture(ca);
  o.retries = 0; // a refusal is reported at once
  return o;
}

client_options plain_options(std::uint16_t port) {
  client_options o;
  o.port = port;
  o.retries = 0;
  return o;
}

std::int64_t counter_of(client& c, const object_key& key) {
  auto r = c.read({{key, crdt_type::counter}});
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : r.err().to_string()));
  return r->values.at(0);
}

// True when the peer closes `fd` (EOF or reset) within the socket's 10 s
// receive timeout (try_connect); bytes before the close are skipped.
bool closed_by_peer(int fd) {
  char buf[4096];
  for (int i = 0; i < 1000; ++i) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0)
      return true;
    if (n < 0)
      return errno == ECONNRESET;
  }
  return false;
}

// The frame of a static read of one counter, as a plain client sends it.
std::string plain_read_frame() {
  static_read_objects_req req;
  req.objects.push_back(bound_object{{"b", "k"}, crdt_type::counter});
  return *encode_frame(encode_request(req));
}

// The error a client with `o` meets: at connect, or (TLS 1.3 lets a
// client finish its side of the handshake before the node checks its
// certificate) with the first reply. Empty when it was served.
std::string refusal(const client_options& o) {
  auto c = client::connect(o);
  if (!c)
    return c.err().to_string();
  auto r = c->update({{{"b", "k"}, 1}});
  return r ? std::string{} : r.err().to_string();
}

struct cli_run {
  int code = -1;
  std::string out, err;
};

cli_run run_cli(const std::string& dir, const std::vector<std::string>& args) {
  auto where = fs::path{dir} / ("cli-" + std::to_string(std::random_device{}()));
  fs::create_directories(where);
  child_process p{TALLY_CLI_PATH, args, where};
  cli_run r;
  r.code = p.wait(30s);
  r.out = slurp(p.out);
  r.err = slurp(p.err);
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_tls)

BOOST_AUTO_TEST_CASE(a_tls_client_reads_and_writes) {
  tls_node n;
  BOOST_REQUIRE(n.start());
  auto c = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
  object_key k{"tls", "visits"};
  auto w = c->update({{k, 5}});
  BOOST_REQUIRE_MESSAGE(w, (w ? "" : w.err().to_string()));
  BOOST_TEST(counter_of(*c, k) == 5);
  // Many requests in flight and replies of many TLS records each way: a
  // pipeline of 2,000 updates, and a 1 MiB register written and read back
  // (64 records of 16 KiB), so partial records and full socket buffers
  // occur.
  auto p = c->make_pipeline();
  for (int i = 0; i < 2000; ++i)
    p.update({{k, 1}});
  for (auto& r : p.collect())
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : r.err().to_string()));
  BOOST_TEST(counter_of(*c, k) == 2005);
  std::string big(1u << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4099)
    big[i] = static_cast<char>('a' + i % 26);
  object_key r{"tls", "big"};
  auto wb = c->update_ops({register_assign_op(r, big)});
  BOOST_REQUIRE_MESSAGE(wb, (wb ? "" : wb.err().to_string()));
  auto rb = c->read_values({{r, crdt_type::lwwreg}});
  BOOST_REQUIRE_MESSAGE(rb, (rb ? "" : rb.err().to_string()));
  BOOST_TEST((std::get<std::string>(rb->values.at(0)) == big));
  // The session really is TLS 1.3 with the node's certificate.
  auto ctx = tls_context::client({fixture("client-port-ca.pem"), "", "", ""});
  BOOST_REQUIRE(ctx);
  auto conn = connection::open("127.0.0.1", n.tls_port, 1000ms, &*ctx);
  BOOST_REQUIRE_MESSAGE(conn, (conn ? "" : conn.err().to_string()));
  BOOST_TEST(conn->tls_description().rfind("TLSv1.3 ", 0) == 0, conn->tls_description());
}

BOOST_AUTO_TEST_CASE(a_tls_pipeline_of_large_requests_is_served_under_back_pressure) {
  // With 2 requests in flight at most the node stops reading this
  // connection again and again, with records read ahead inside OpenSSL;
  // every request must still be answered, none after a timeout.
  tls_node n;
  BOOST_REQUIRE(n.start({"--max-in-flight", "2"}));
  auto o = tls_options(n.tls_port);
  o.max_in_flight = 64;
  auto c = client::connect(o);
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
  // Requests of ~12 KiB (400 counters each), so that more than the 1 MiB
  // the node decrypts per wake-up arrives at once.
  std::vector<counter_inc> wide;
  for (int i = 0; i < 400; ++i)
    wide.push_back({object_key{"tls", "pressed" + std::to_string(i)}, 1});
  auto p = c->make_pipeline();
  for (int i = 0; i < 200; ++i)
    p.update(wide);
  std::size_t failed = 0;
  for (auto& r : p.collect()) {
    if (!r && failed == 0)
      BOOST_TEST_MESSAGE("first failure: " << r.err().to_string());
    failed += r ? 0 : 1;
  }
  BOOST_TEST(failed == 0u);
  BOOST_TEST(c->retries_done() == 0u); // no reply ever timed out
  BOOST_TEST(counter_of(*c, {"tls", "pressed0"}) == 200);
  BOOST_TEST(counter_of(*c, {"tls", "pressed399"}) == 200);
}

BOOST_AUTO_TEST_CASE(the_plain_port_still_serves_plain_clients) {
  tls_node n;
  BOOST_REQUIRE(n.start());
  auto plain = client::connect(plain_options(n.port));
  BOOST_REQUIRE_MESSAGE(plain, (plain ? "" : plain.err().to_string()));
  auto tls = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(tls, (tls ? "" : tls.err().to_string()));
  object_key k{"both", "ports"};
  // Written through one port, read through the other: one node.
  auto w1 = plain->update({{k, 2}});
  BOOST_REQUIRE_MESSAGE(w1, (w1 ? "" : w1.err().to_string()));
  auto r1 = tls->read({{k, crdt_type::counter}}, *w1);
  BOOST_REQUIRE(r1);
  BOOST_TEST(r1->values.at(0) == 2);
  auto w2 = tls->update({{k, 3}});
  BOOST_REQUIRE(w2);
  auto r2 = plain->read({{k, crdt_type::counter}}, *w2);
  BOOST_REQUIRE(r2);
  BOOST_TEST(r2->values.at(0) == 5);
  // A TLS client on the plain port is refused with a hint, not served.
  auto wrong = client::connect(tls_options(n.port));
  BOOST_TEST(!wrong);
  if (!wrong)
    BOOST_TEST(contains(wrong.err().message(), "TLS"), wrong.err().message());
  BOOST_TEST(counter_of(*plain, k) == 5);
}

BOOST_AUTO_TEST_CASE(a_client_trusting_another_ca_is_refused) {
  tls_node n;
  BOOST_REQUIRE(n.start());
  auto c = client::connect(tls_options(n.tls_port, "rogue-ca.pem"));
  BOOST_REQUIRE(!c);
  BOOST_TEST(c.err().code() == errc::bad_config);
  BOOST_TEST(contains(c.err().message(), "certificate verify failed"), c.err().message());
  BOOST_TEST(contains(c.err().message(), "--tls-ca"), c.err().message());
  // A client that checks for a name the certificate does not carry too.
  auto named = tls_options(n.tls_port);
  named.tls_server_name = "db.example.org";
  auto d = client::connect(named);
  BOOST_REQUIRE(!d);
  BOOST_TEST(contains(d.err().message(), "certificate verify failed"), d.err().message());
  // The node goes on serving TLS clients.
  auto good = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(good, (good ? "" : good.err().to_string()));
  BOOST_TEST(counter_of(*good, {"b", "k"}) == 0);
  BOOST_TEST(n.running());
}

BOOST_AUTO_TEST_CASE(a_plain_client_on_the_tls_port_is_closed_and_the_node_keeps_serving) {
  tls_node n;
  BOOST_REQUIRE(n.start());
  // A TLS client connected before, and kept open throughout.
  auto before = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(before, (before ? "" : before.err().to_string()));
  BOOST_REQUIRE(before->update({{{"b", "k"}, 1}}));
  // An AntidoteDB frame in plain text on the TLS port: closed.
  int fd = try_connect(n.tls_port);
  BOOST_REQUIRE(fd >= 0);
  auto frame = plain_read_frame();
  BOOST_REQUIRE(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL)
                == static_cast<ssize_t>(frame.size()));
  BOOST_TEST(closed_by_peer(fd));
  ::close(fd);
  BOOST_TEST(n.wait_for_log("client TLS connection from 127.0.0.1:"), n.log());
  BOOST_TEST(contains(n.log(), "closed: TLS handshake failed: "), n.log());
  // Garbage and an HTTP request the same way.
  for (std::string junk : {std::string(4096, '\xff'), std::string{"GET / HTTP/1.0\r\n\r\n"}}) {
    int g = try_connect(n.tls_port);
    BOOST_REQUIRE(g >= 0);
    BOOST_TEST(::send(g, junk.data(), junk.size(), MSG_NOSIGNAL) > 0);
    BOOST_TEST(closed_by_peer(g));
    ::close(g);
  }
  // The client library's plain client gets an error, not an answer.
  auto plain = client::connect(plain_options(n.tls_port));
  BOOST_REQUIRE(plain); // TCP only: nothing to refuse yet
  BOOST_TEST(!plain->read({{{"b", "k"}, crdt_type::counter}}));
  // Everyone else is served: the client from before, a new TLS client, and
  // the plain port.
  BOOST_TEST(counter_of(*before, {"b", "k"}) == 1);
  auto after = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(after, (after ? "" : after.err().to_string()));
  BOOST_TEST(counter_of(*after, {"b", "k"}) == 1);
  auto p = client::connect(plain_options(n.port));
  BOOST_REQUIRE(p);
  BOOST_TEST(counter_of(*p, {"b", "k"}) == 1);
  BOOST_TEST(n.running());
}

BOOST_AUTO_TEST_CASE(with_a_client_ca_a_client_without_a_certificate_is_refused) {
  tls_node n;
  BOOST_REQUIRE(n.start({"--client-tls-ca", fixture("client-port-ca.pem")}));
  // No certificate.
  auto none = refusal(tls_options(n.tls_port));
  BOOST_TEST(contains(none, "bad_config"), none);
  BOOST_TEST(contains(none, "certificate required"), none);
  BOOST_TEST(contains(none, "--tls-cert"), none);
  BOOST_TEST(n.wait_for_log("peer did not return a certificate"), n.log());
  // A certificate of another CA.
  auto rogue_opts = tls_options(n.tls_port);
  rogue_opts.tls_cert = fixture("rogue-node.pem");
  rogue_opts.tls_key = fixture("rogue-node-key.pem");
  auto rogue = refusal(rogue_opts);
  BOOST_TEST(contains(rogue, "does not accept this client's certificate"), rogue);
  // The client certificate signed by the CA is served; nothing of the
  // refused clients was applied.
  auto good_opts = tls_options(n.tls_port);
  good_opts.tls_cert = fixture("client.pem");
  good_opts.tls_key = fixture("client-key.pem");
  auto good = client::connect(good_opts);
  BOOST_REQUIRE_MESSAGE(good, (good ? "" : good.err().to_string()));
  BOOST_TEST(counter_of(*good, {"b", "k"}) == 0);
  BOOST_REQUIRE(good->update({{{"b", "k"}, 7}}));
  BOOST_TEST(counter_of(*good, {"b", "k"}) == 7);
}

BOOST_AUTO_TEST_CASE(a_tls_handshake_that_never_finishes_is_closed_after_the_read_timeout) {
  tls_node n;
  BOOST_REQUIRE(n.start({"--request-read-timeout-ms", "1000"}));
  int fd = try_connect(n.tls_port);
  BOOST_REQUIRE(fd >= 0);
  // The first bytes of a TLS record header, then silence.
  BOOST_REQUIRE(::send(fd, "\x16\x03\x01", 3, MSG_NOSIGNAL) == 3);
  auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(closed_by_peer(fd)); // within the socket's 10 s receive timeout
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0)
                .count();
  ::close(fd);
  // 1 s of timeout plus at most one 1 s sweep, with slack for a busy machine.
  BOOST_TEST(took >= 900);
  BOOST_TEST(took < 8000);
  BOOST_TEST(n.wait_for_log("its TLS handshake did not finish within 1000 ms"), n.log());
  auto c = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE(c);
  BOOST_TEST(counter_of(*c, {"b", "k"}) == 0);
}

BOOST_AUTO_TEST_CASE(no_plain_port_serves_tls_only) {
  tls_node n;
  BOOST_REQUIRE(n.start({"--no-plain-port"}));
  BOOST_TEST(try_connect(n.port) < 0); // nothing listens there
  auto c = client::connect(tls_options(n.tls_port));
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
  BOOST_REQUIRE(c->update({{{"b", "k"}, 4}}));
  BOOST_TEST(counter_of(*c, {"b", "k"}) == 4);
  BOOST_TEST(contains(n.log(), "tallyd ready on port " + std::to_string(n.tls_port)), n.log());
}

BOOST_AUTO_TEST_CASE(the_cli_reads_and_writes_over_tls) {
  tls_node n;
  BOOST_REQUIRE(n.start({"--client-tls-ca", fixture("client-port-ca.pem")}));
  std::vector<std::string> tls{"--port", std::to_string(n.tls_port), "--tls-ca",
                               fixture("client-port-ca.pem"), "--tls-cert",
                               fixture("client.pem"), "--tls-key", fixture("client-key.pem")};
  auto with = [&](std::vector<std::string> cmd) {
    auto args = tls;
    args.insert(args.end(), cmd.begin(), cmd.end());
    return args;
  };
  auto inc = run_cli(n.dir.path, with({"inc", "shop", "visits", "5"}));
  BOOST_TEST(inc.code == 0, inc.err);
  auto read = run_cli(n.dir.path, with({"read", "shop", "visits"}));
  BOOST_TEST(read.code == 0, read.err);
  BOOST_TEST(contains(read.out, "shop/visits = 5"), read.out);
  // Without the client certificate the node refuses, and says why.
  auto no_cert = run_cli(n.dir.path, {"--port", std::to_string(n.tls_port), "--retries", "0",
                                      "--tls-ca", fixture("client-port-ca.pem"), "inc",
                                      "shop", "visits", "1"});
  BOOST_TEST(no_cert.code != 0);
  BOOST_TEST(contains(no_cert.err, "certificate required"), no_cert.err);
  // A CA file that is not there: a clear error before any connection.
  auto missing = run_cli(n.dir.path, {"--port", std::to_string(n.tls_port), "--tls-ca",
                                      n.dir.path + "/nope.pem", "status"});
  BOOST_TEST(missing.code != 0);
  BOOST_TEST(contains(missing.err, "nope.pem"), missing.err);
  auto again = run_cli(n.dir.path, with({"read", "shop", "visits"}));
  BOOST_TEST(contains(again.out, "shop/visits = 5"), again.out + again.err);
}

BOOST_AUTO_TEST_CASE(tls_flags_are_checked_at_start) {
  temp_dir d;
  fs::create_directories(d.path);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--data-dir", d.path + "/data", "--port",
                                  std::to_string(free_port())};
    args.insert(args.end(), extra.begin(), extra.end());
    child_process p{TALLYD_PATH, args, d.path};
    cli_run r;
    r.code = p.wait(30s);
    r.err = slurp(p.err);
    return r;
  };
  auto port = std::to_string(free_port());
  auto r = run({"--client-tls-port", port});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(contains(r.err, "--client-tls-port needs --client-tls-cert"), r.err);
  r = run({"--client-tls-cert", fixture("client-port-node.pem")});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(contains(r.err, "need --client-tls-port"), r.err);
  r = run({"--no-plain-port"});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(contains(r.err, "--no-plain-port needs --client-tls-port"), r.err);
  // A key that is not the certificate's, and a file that is not there.
  r = run({"--client-tls-port", port, "--client-tls-cert", fixture("client-port-node.pem"),
           "--client-tls-key", fixture("client-key.pem")});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(contains(r.err, "does not belong to the certificate"), r.err);
  r = run({"--client-tls-port", port, "--client-tls-cert", d.path + "/missing.pem",
           "--client-tls-key", fixture("client-port-node-key.pem")});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(contains(r.err, "missing.pem"), r.err);
  // None of them made a data dir.
  BOOST_TEST(!fs::exists(d.path + "/data"));
}

BOOST_AUTO_TEST_SUITE_END()
