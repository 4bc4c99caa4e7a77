// One TLS session over a connected non-blocking socket (docs/SECURITY.md,
// "The client port"). It never blocks and never polls: each call does what
// the socket allows now and says what it waits for, so the client server's
// epoll loop (server/client_server.cpp) and the client's poll loop
// (client/connection.cpp) drive it alike:
//
//   tls_stream s = *tls_stream::accept(ctx, fd);   // or connect(ctx, fd, host)
//   auto r = s.handshake();      // want_read / want_write: wait, call again
//   r = s.read(buf, n);          // done: r.bytes; want_*: wait; closed; failed
//   r = s.write(data, n);        // after want_*, retry with the same bytes
//                                // (more may follow them)
//
// A partial TLS record is kept inside OpenSSL until the rest arrives;
// has_buffered_input() says when decrypted bytes wait without the socket
// being readable. OpenSSL's per-thread error queue is cleared before every
// call and emptied after every failure (SSL_get_error(3)), so one
// connection's failure never leaks into another's result on the same
// thread. Not thread-safe; the socket stays owned by the caller.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/expected.hpp"
#include "tls/tls_context.hpp"

struct ssl_st; // OpenSSL's SSL

namespace tally {

class tls_stream {
public:
  enum class state {
    done,       // the call completed (bytes says how much was moved)
    want_read,  // call again once the socket is readable
    want_write, // call again once the socket is writable
    closed,     // the peer ended the session (close_notify or EOF)
    failed,     // a TLS error: failure() says which; the session is over
  };
  struct result {
    state st = state::done;
    std::size_t bytes = 0;
  };

  /// The server side of a connection accepted on `fd` (`ctx` a server
  /// context). errc::io_error when OpenSSL cannot make the session.
  static expected<tls_stream> accept(const tls_context& ctx, int fd);
  /// The client side over a connected `fd`; the server's certificate must
  /// carry `name` (ctx.server_name() when set, else this), which is also
  /// sent as SNI when it is a host name.
  static expected<tls_stream> connect(const tls_context& ctx, int fd, const std::string& name);

  tls_stream(tls_stream&&) noexcept = default;
  tls_stream& operator=(tls_stream&&) noexcept = default;
  ~tls_stream();

  result handshake();
  result read(char* buf, std::size_t size);
  result write(const char* data, std::size_t size);

  bool handshake_done() const noexcept;
  /// Decrypted or received bytes wait inside OpenSSL: read() returns
  /// something without the socket becoming readable.
  bool has_buffered_input() const noexcept;
  /// A read that returned fewer bytes than this, with nothing buffered,
  /// most likely emptied the socket: a TLS record holds at most 16 KiB,
  /// only the last record of a write is shorter, and OpenSSL reads ahead
  /// (tls_context) so records that had arrived are buffered inside it. Readers stop there instead
  /// of paying one more read that would only say "want_read" (the socket's
  /// readiness tells them if more came).
  static constexpr std::size_t full_record = 16 * 1024;
  /// Why the last call failed: OpenSSL's reason (a fatal alert from the
  /// peer reads "tlsv1 alert unknown ca"), with the certificate check's
  /// own reason when it failed ("certificate verify failed: unable to
  /// get local issuer certificate").
  const std::string& failure() const noexcept { return failure_; }
  /// The protocol and cipher of a finished handshake ("TLSv1.3
  /// TLS_AES_256_GCM_SHA384").
  std::string describe() const;
  /// Sends close_notify once, without waiting (best effort before close;
  /// nothing after a failed handshake or a fatal error).
  void shutdown() noexcept;

private:
  struct free_ssl {
    void operator()(ssl_st* s) const noexcept;
  };
  explicit tls_stream(ssl_st* s);
  result outcome(int rc);

  std::unique_ptr<ssl_st, free_ssl> ssl_;
  std::string failure_;
  bool broken_ = false; // a fatal error: no close_notify may follow
};

} // namespace tally
