#include "client/connection.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace tally {

namespace {

/// Bytes read from the socket at a time. Why 64 KiB: a read reply is a few
/// bytes per counter, so one read holds a whole pipeline's replies in the
/// common case, and the buffer lives on the stack only during a read.
constexpr std::size_t read_chunk = 64 * 1024;

/// strerror() with a lower-case first letter, to sit inside a sentence.
std::string describe_errno(int err) {
  std::string text = std::strerror(err);
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z')
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

/// Milliseconds left until `deadline` for poll(), rounded up so a deadline
/// less than a millisecond away still waits; 0 when it has passed.
int poll_timeout(client_clock::time_point deadline) {
  auto left = deadline - client_clock::now();
  if (left <= client_clock::duration::zero())
    return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

/// Waits for `events` on `fd`; the revents, 0 on timeout, -1 (errno set) on
/// a poll error. EINTR is retried.
int wait_for(int fd, short events, client_clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = poll_timeout(deadline);
    int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    return n == 0 ? 0 : p.revents;
  }
}

/// Connects one resolved address. Returns the socket, or -1 with `err` set
/// (ETIMEDOUT when the deadline passed).
int connect_one(const addrinfo& ai, client_clock::time_point deadline,
                int& err) {
  int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai.ai_protocol);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      ::close(fd);
      return -1;
    }
    int ev = wait_for(fd, POLLOUT, deadline);
    if (ev <= 0) {
      err = ev == 0 ? ETIMEDOUT : errno;
      ::close(fd);
      return -1;
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0)
      so_error = errno;
    if (so_error != 0) {
      err = so_error;
      ::close(fd);
      return -1;
    }
  }
  // Requests are small and pipelined: send each at once rather than let
  // Nagle's algorithm hold it back waiting for the previous reply.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

} // namespace

expected<connection> connection::open_unix(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path)
    return make_error(errc::unavailable, "cannot connect to the admin socket " + path
                                           + ": the path is too long for a Unix socket");
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    return make_error(errc::unavailable, "cannot connect to the admin socket " + path + ": "
                                           + describe_errno(err)
                                           + " — is tallyd running with this data dir?");
  }
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK); // as TCP connections are
  return connection{fd, path};
}

expected<connection> connection::open(const std::string& host,
                                      std::uint16_t port,
                                      std::chrono::milliseconds timeout,
                                      const tls_context* tls) {
  auto peer = host + ':' + std::to_string(port);
  auto deadline = client_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  auto port_text = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found);
      rc != 0)
    return make_error(errc::unavailable, "cannot connect to " + peer
                                           + ": cannot resolve host '" + host
                                           + "': " + ::gai_strerror(rc));
  int err = 0;
  int fd = -1;
  for (auto* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next)
    fd = connect_one(*ai, deadline, err);
  ::freeaddrinfo(found);
  if (fd >= 0) {
    connection conn{fd, std::move(peer)};
    if (tls != nullptr)
      if (auto st = conn.start_tls(*tls, host, deadline); !st) {
        if (st.err().code() == errc::timeout)
          return make_error(errc::timeout, st.err().message() + " within "
                                             + std::to_string(timeout.count()) + " ms");
        return st.err();
      }
    return conn;
  }
  if (err == ETIMEDOUT)
    return make_error(errc::timeout,
                      "cannot connect to " + peer + ": no answer within "
                        + std::to_string(timeout.count())
                        + " ms — is tallyd running and reachable?");
  return make_error(errc::unavailable, "cannot connect to " + peer + ": "
                                         + describe_errno(err)
                                         + " — is tallyd running?");
}

connection::connection(int fd, std::string peer)
    : fd_(fd), peer_(std::move(peer)) {}

connection::connection(connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      peer_(std::move(other.peer_)),
      decoder_(std::move(other.decoder_)),
      tls_(std::exchange(other.tls_, std::nullopt)),
      tls_read_wants_write_(other.tls_read_wants_write_) {}

connection& connection::operator=(connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    peer_ = std::move(other.peer_);
    decoder_ = std::move(other.decoder_);
    tls_ = std::exchange(other.tls_, std::nullopt);
    tls_read_wants_write_ = other.tls_read_wants_write_;
  }
  return *this;
}

connection::~connection() { close(); }

void connection::close() noexcept {
  if (tls_ && fd_ >= 0)
    tls_->shutdown(); // close_notify, when the session is healthy
  tls_.reset();
  tls_read_wants_write_ = false;
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  decoder_ = frame_decoder{};
}

error connection::fail(errc code, const std::string& what) {
  close();
  return make_error(code, peer_ + ": " + what);
}

status connection::send(const frame& f, client_clock::time_point deadline) {
  auto bytes = encode_frame(f);
  if (!bytes)
    return bytes.err();
  return send_bytes(*bytes, deadline);
}

status connection::send_bytes(const std::string& bytes,
                              client_clock::time_point deadline) {
  if (fd_ < 0)
    return make_error(errc::unavailable, peer_ + ": connection is closed");
  if (tls_)
    return send_tls(bytes, deadline);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    int ev = wait_for(fd_, POLLIN | POLLOUT, deadline);
    if (ev < 0)
      return fail(errc::unavailable, "poll failed: " + describe_errno(errno));
    if (ev == 0)
      return fail(errc::timeout, "request not sent before its deadline");
    if (ev & POLLIN) {
      // Replies to earlier requests: buffer them so the server never blocks
      // on a full send buffer while we block on a full one of ours.
      if (auto st = read_available(); !st)
        return st;
    }
    if (ev & (POLLOUT | POLLERR | POLLHUP)) {
      auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent,
                      MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
          continue;
        return fail(errc::unavailable,
                    "connection lost while sending: " + describe_errno(errno));
      }
      sent += static_cast<std::size_t>(n);
    }
  }
  return {};
}

status connection::read_available() {
  if (tls_)
    return read_tls();
  char buf[read_chunk];
  for (;;) {
    auto n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return {};
      return fail(errc::unavailable,
                  "connection lost: " + describe_errno(errno));
    }
    if (n == 0) {
      if (auto st = decoder_.finish(); !st)
        return fail(st.err().code(), "closed the connection inside a reply ("
                                       + st.err().message() + ")");
      return fail(errc::unavailable, "the node closed the connection");
    }
    if (auto st = decoder_.feed({buf, static_cast<std::size_t>(n)}); !st)
      return fail(st.err().code(),
                  "reply stream is not framed (" + st.err().message()
                    + ") — is this a Tally or AntidoteDB node?");
    return {};
  }
}

expected<frame> connection::receive(client_clock::time_point deadline) {
  for (;;) {
    if (auto f = decoder_.next())
      return std::move(*f);
    if (fd_ < 0)
      return make_error(errc::unavailable, peer_ + ": connection is closed");
    short want = tls_read_wants_write_ ? POLLOUT : POLLIN;
    int ev = wait_for(fd_, want, deadline);
    if (ev < 0)
      return fail(errc::unavailable, "poll failed: " + describe_errno(errno));
    if (ev == 0)
      return fail(errc::timeout, "no reply before the request's deadline");
    if (auto st = read_available(); !st)
      return st.err();
  }
}

// ---- TLS (docs/SECURITY.md, "The client port") ---------------------------

std::string connection::tls_description() const {
  return tls_ ? tls_->describe() : std::string{};
}

error connection::tls_failure(const char* during) {
  auto why = tls_->failure();
  // What the reason usually means, in the terms of the flags.
  std::string hint;
  if (why.find("alert certificate required") != std::string::npos)
    hint = " — the node requires a client certificate (--tls-cert, --tls-key; "
           "client_options::tls_cert)";
  else if (why.find("alert unknown ca") != std::string::npos
           || why.find("alert bad certificate") != std::string::npos
           || why.find("alert decrypt error") != std::string::npos)
    hint = " — the node does not accept this client's certificate (not signed by its "
           "--client-tls-ca)";
  else if (why.find("certificate verify failed") != std::string::npos)
    hint = " — the node's certificate is not signed by the CA given (--tls-ca), or does "
           "not name this host (--tls-server-name)";
  else if (why.find("wrong version number") != std::string::npos
           || why.find("packet length too long") != std::string::npos
           || why.find("record layer failure") != std::string::npos)
    hint = " — is this the node's TLS port (tallyd --client-tls-port)?";
  return fail(errc::bad_config, std::string{"TLS "} + during + " failed: " + why + hint);
}

status connection::start_tls(const tls_context& ctx, const std::string& host,
                             client_clock::time_point deadline) {
  auto s = tls_stream::connect(ctx, fd_, host);
  if (!s)
    return fail(s.err().code(), s.err().message());
  tls_.emplace(std::move(*s));
  for (;;) {
    auto r = tls_->handshake();
    using st = tls_stream::state;
    if (r.st == st::done)
      return {};
    if (r.st == st::closed)
      return fail(errc::unavailable,
                  "the node closed the connection during the TLS handshake — is this its "
                  "TLS port (tallyd --client-tls-port)?");
    if (r.st == st::failed)
      return tls_failure("handshake");
    int ev = wait_for(fd_, r.st == st::want_read ? POLLIN : POLLOUT, deadline);
    if (ev < 0)
      return fail(errc::unavailable, "poll failed: " + describe_errno(errno));
    if (ev == 0)
      return fail(errc::timeout, "no TLS handshake");
  }
}

status connection::send_tls(const std::string& bytes, client_clock::time_point deadline) {
  using st = tls_stream::state;
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    // After want_*, the same bytes are offered again (OpenSSL requires it).
    auto r = tls_->write(bytes.data() + sent, bytes.size() - sent);
    if (r.st == st::done) {
      sent += r.bytes;
      continue;
    }
    if (r.st == st::closed || r.st == st::failed) {
      // The node may have said why before it closed (a TLS alert such as
      // "certificate required"): read it for the message.
      auto why = read_tls();
      if (!why && why.err().code() == errc::bad_config)
        return why;
      if (!tls_)
        return why; // read_tls closed the connection: its error is the one
      return r.st == st::closed ? fail(errc::unavailable, "the node closed the connection")
                                : tls_failure("write");
    }
    // Wait, buffering replies meanwhile as the plain path does, so the node
    // never blocks on a full send buffer while this side blocks on one.
    short want = r.st == st::want_read ? POLLIN : POLLIN | POLLOUT;
    int ev = wait_for(fd_, want, deadline);
    if (ev < 0)
      return fail(errc::unavailable, "poll failed: " + describe_errno(errno));
    if (ev == 0)
      return fail(errc::timeout, "request not sent before its deadline");
    if (ev & POLLIN)
      if (auto rd = read_tls(); !rd)
        return rd;
  }
  return {};
}

status connection::read_tls() {
  using st = tls_stream::state;
  tls_read_wants_write_ = false;
  char buf[read_chunk];
  // Until OpenSSL wants the socket again, or a short record with nothing
  // left inside OpenSSL (tls_stream::full_record): decrypted bytes left
  // inside it would not make the socket readable, and receive() would wait
  // in vain.
  for (;;) {
    auto r = tls_->read(buf, sizeof buf);
    if (r.st == st::done) {
      if (auto ok = decoder_.feed({buf, r.bytes}); !ok)
        return fail(ok.err().code(), "reply stream is not framed (" + ok.err().message()
                                       + ") — is this a Tally or AntidoteDB node?");
      if (r.bytes < tls_stream::full_record && !tls_->has_buffered_input())
        return {};
      continue;
    }
    if (r.st == st::want_read)
      return {};
    if (r.st == st::want_write) {
      tls_read_wants_write_ = true;
      return {};
    }
    if (r.st == st::failed)
      return tls_failure("read");
    if (auto ok = decoder_.finish(); !ok)
      return fail(ok.err().code(), "closed the connection inside a reply ("
                                     + ok.err().message() + ")");
    return fail(errc::unavailable, "the node closed the connection");
  }
}

} // namespace tally
