// tls/: contexts from PEM files and non-blocking TLS sessions, driven by
// hand over a socketpair in one thread (no node): the handshake and records
// go through WANT_READ/WANT_WRITE, a full socket buffer and partial records;
// a failed session leaves nothing in the thread's OpenSSL error queue, so
// the next session on the thread is not failed by it. The certificates are
// test fixtures (tests/cluster/tls/README.md).
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include <openssl/err.h>

#include "tls/tls_context.hpp"
#include "tls/tls_stream.hpp"

#ifndef TALLY_TLS_FIXTURES
#error "TALLY_TLS_FIXTURES must name tests/cluster/tls (tests/CMakeLists.txt)"
#endif

using namespace tally;
using state = tls_stream::state;

namespace {

std::string fixture(const std::string& name) {
  return std::string{TALLY_TLS_FIXTURES} + "/" + name;
}

// A connected pair of non-blocking stream sockets with small buffers, so
// that a large write fills them.
struct socket_pair {
  int a = -1, b = -1;
  socket_pair() {
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
    a = fds[0];
    b = fds[1];
    int small = 16 * 1024;
    for (int fd : {a, b}) {
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
  }
  ~socket_pair() {
    ::close(a);
    ::close(b);
  }
};

tls_context server_ctx(const std::string& client_ca = "") {
  auto c = tls_context::server(
    {fixture("client-port-node.pem"), fixture("client-port-node-key.pem"), client_ca});
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
  return std::move(*c);
}

tls_context client_ctx(const std::string& ca = "client-port-ca.pem") {
  auto c = tls_context::client({fixture(ca), "", "", ""});
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
  return std::move(*c);
}

// Steps both handshakes until both are done or one fails (bounded).
std::pair<state, state> handshake(tls_stream& s, tls_stream& c) {
  tls_stream::result rs{state::want_read, 0}, rc{state::want_read, 0};
  for (int i = 0; i < 100; ++i) {
    if (rc.st != state::done && rc.st != state::failed)
      rc = c.handshake();
    if (rs.st != state::done && rs.st != state::failed)
      rs = s.handshake();
    if ((rs.st == state::done || rs.st == state::failed)
        && (rc.st == state::done || rc.st == state::failed))
      break;
  }
  return {rs.st, rc.st};
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_stream_tests)

BOOST_AUTO_TEST_CASE(a_megabyte_crosses_a_small_socket_buffer_through_want_write) {
  socket_pair p;
  auto sctx = server_ctx();
  auto cctx = client_ctx();
  auto s = tls_stream::accept(sctx, p.a);
  auto c = tls_stream::connect(cctx, p.b, "127.0.0.1");
  BOOST_REQUIRE(s && c);
  // Before anything arrived, the server waits to read.
  BOOST_TEST((s->handshake().st == state::want_read));
  auto [hs, hc] = handshake(*s, *c);
  BOOST_REQUIRE((hs == state::done && hc == state::done));
  BOOST_TEST(c->describe().rfind("TLSv1.3 ", 0) == 0, c->describe());
  std::string sent(1u << 20, '\0');
  for (std::size_t i = 0; i < sent.size(); ++i)
    sent[i] = static_cast<char>(i * 131 % 251);
  std::string got;
  std::size_t off = 0;
  int want_write = 0;
  char buf[7000]; // not a multiple of a record: records are taken in parts
  for (int round = 0; round < 100000 && got.size() < sent.size(); ++round) {
    // Write until the socket takes no more, then let the reader drain it.
    while (off < sent.size()) {
      auto w = c->write(sent.data() + off, sent.size() - off);
      BOOST_REQUIRE((w.st == state::done || w.st == state::want_write));
      if (w.st == state::want_write) {
        ++want_write;
        break;
      }
      off += w.bytes;
    }
    for (;;) {
      auto r = s->read(buf, sizeof buf);
      if (r.st != state::done)
        break;
      got.append(buf, r.bytes);
    }
  }
  BOOST_TEST(want_write > 0); // the socket buffer filled
  BOOST_TEST((got == sent));
  BOOST_TEST(ERR_peek_error() == 0u);
}

BOOST_AUTO_TEST_CASE(records_read_ahead_are_reported_as_buffered_input) {
  // The server's shard relies on this: records that arrived together are
  // taken by one recv() and wait inside OpenSSL, where epoll cannot see
  // them, so has_buffered_input() must say so until they are read.
  socket_pair p;
  auto sctx = server_ctx();
  auto cctx = client_ctx();
  auto s = tls_stream::accept(sctx, p.a);
  auto c = tls_stream::connect(cctx, p.b, "127.0.0.1");
  BOOST_REQUIRE(s && c);
  auto [hs, hc] = handshake(*s, *c);
  BOOST_REQUIRE((hs == state::done && hc == state::done));
  for (const char* m : {"one", "two", "three"}) // three records
    BOOST_REQUIRE((c->write(m, std::strlen(m)).st == state::done));
  char buf[64];
  auto r = s->read(buf, sizeof buf);
  BOOST_REQUIRE((r.st == state::done));
  BOOST_TEST(std::string(buf, r.bytes) == "one");
  BOOST_TEST(s->has_buffered_input());
  char probe;
  BOOST_TEST(::recv(p.a, &probe, 1, MSG_PEEK) == -1); // the socket is empty
  r = s->read(buf, sizeof buf);
  BOOST_TEST(std::string(buf, r.bytes) == "two");
  r = s->read(buf, sizeof buf);
  BOOST_TEST(std::string(buf, r.bytes) == "three");
  BOOST_TEST(!s->has_buffered_input());
  BOOST_TEST((s->read(buf, sizeof buf).st == state::want_read));
}

BOOST_AUTO_TEST_CASE(garbage_fails_the_handshake_and_leaves_the_error_queue_empty) {
  auto sctx = server_ctx();
  {
    socket_pair p;
    auto s = tls_stream::accept(sctx, p.a);
    BOOST_REQUIRE(s);
    std::string frame{"\0\0\0\x05\x74\x0a\x03\x62\x6b\x31", 10}; // a plain request
    BOOST_REQUIRE(::write(p.b, frame.data(), frame.size()) == 10);
    auto r = s->handshake();
    BOOST_TEST((r.st == state::failed));
    BOOST_TEST(s->failure() == "wrong version number");
    BOOST_TEST(ERR_peek_error() == 0u); // nothing left for the next session
  }
  // The next session on this thread is healthy.
  socket_pair p;
  auto cctx = client_ctx();
  auto s = tls_stream::accept(sctx, p.a);
  auto c = tls_stream::connect(cctx, p.b, "localhost");
  BOOST_REQUIRE(s && c);
  auto [hs, hc] = handshake(*s, *c);
  BOOST_TEST((hs == state::done && hc == state::done));
}

BOOST_AUTO_TEST_CASE(the_client_refuses_a_certificate_of_another_ca_or_name) {
  auto sctx = server_ctx();
  {
    socket_pair p;
    auto rogue = client_ctx("rogue-ca.pem");
    auto s = tls_stream::accept(sctx, p.a);
    auto c = tls_stream::connect(rogue, p.b, "127.0.0.1");
    BOOST_REQUIRE(s && c);
    auto [hs, hc] = handshake(*s, *c);
    BOOST_TEST((hc == state::failed));
    BOOST_TEST((hs == state::failed));
    BOOST_TEST(c->failure().find("certificate verify failed") != std::string::npos,
               c->failure());
    BOOST_TEST(s->failure().find("unknown ca") != std::string::npos, s->failure());
  }
  socket_pair p;
  auto cctx = client_ctx();
  auto s = tls_stream::accept(sctx, p.a);
  auto c = tls_stream::connect(cctx, p.b, "db.example.org"); // not in the SANs
  BOOST_REQUIRE(s && c);
  auto [hs, hc] = handshake(*s, *c);
  BOOST_TEST((hc == state::failed));
  BOOST_TEST(c->failure().find("hostname mismatch") != std::string::npos, c->failure());
  BOOST_TEST(ERR_peek_error() == 0u);
}

BOOST_AUTO_TEST_CASE(a_server_with_a_client_ca_refuses_a_client_without_a_certificate) {
  auto sctx = server_ctx(fixture("client-port-ca.pem"));
  BOOST_TEST(sctx.requires_client_certificate());
  socket_pair p;
  auto cctx = client_ctx();
  auto s = tls_stream::accept(sctx, p.a);
  auto c = tls_stream::connect(cctx, p.b, "127.0.0.1");
  BOOST_REQUIRE(s && c);
  auto [hs, hc] = handshake(*s, *c);
  BOOST_TEST((hs == state::failed));
  BOOST_TEST(s->failure().find("peer did not return a certificate") != std::string::npos,
             s->failure());
  // TLS 1.3: the client finished its side; it learns at its first read.
  if (hc == state::done) {
    char b[16];
    auto r = c->read(b, sizeof b);
    BOOST_TEST((r.st == state::failed));
    BOOST_TEST(c->failure().find("certificate required") != std::string::npos, c->failure());
  }
}

BOOST_AUTO_TEST_CASE(bad_files_are_refused_with_their_name) {
  auto missing = tls_context::server({"/nonexistent/cert.pem", fixture("client-key.pem"), ""});
  BOOST_REQUIRE(!missing);
  BOOST_TEST((missing.err().code() == errc::bad_config));
  BOOST_TEST(missing.err().message().find("/nonexistent/cert.pem") != std::string::npos,
             missing.err().message());
  auto mismatch =
    tls_context::server({fixture("client-port-node.pem"), fixture("client-key.pem"), ""});
  BOOST_REQUIRE(!mismatch);
  BOOST_TEST(mismatch.err().message().find("does not belong") != std::string::npos,
             mismatch.err().message());
  auto half = tls_context::client({fixture("client-port-ca.pem"), fixture("client.pem"), "", ""});
  BOOST_REQUIRE(!half);
  BOOST_TEST(half.err().message().find("--tls-key") != std::string::npos);
  BOOST_TEST(ERR_peek_error() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
