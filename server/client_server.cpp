#include "server/client_server.hpp"

#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "common/log.hpp"
#include "server/connection.hpp"
#include "server/shard_inbox.hpp"
#include "tls/tls_stream.hpp"

namespace tally {

namespace {

// epoll tags: connection ids start above these.
constexpr std::uint64_t inbox_tag = 0;
constexpr std::uint64_t listen_tag = 1;
constexpr std::uint64_t admin_listen_tag = 2;
constexpr std::uint64_t tls_listen_tag = 3;

// Where a connection came in.
enum class door { plain, tls, admin };

// Bytes one TLS connection may decrypt per wake-up before the others get
// their turn (the plain path reads at most 16 x 64 KiB). Why 1 MiB: the
// same bound, counted in bytes since a TLS read returns one record (at
// most 16 KiB) at a time.
constexpr std::size_t tls_read_per_wakeup = 1u << 20;

// How long a connection whose TLS handshake failed is kept half-closed,
// its input read and dropped, before it is closed. Why: closing a socket
// with unread input sends a reset, and a reset makes the peer's kernel drop
// what it had not read yet: the TLS alert that says why ("certificate
// required"). A TLS 1.3 client sends its first request right after its side
// of the handshake, so that input is usual. 2 s: a healthy peer reads the
// alert and closes within a round trip.
constexpr std::chrono::seconds tls_linger{2};

// "ip:port" of a socket's peer, for log lines ("?" when unknown).
std::string peer_of(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return "?";
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return std::string{buf} + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (a.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof buf);
    return "[" + std::string{buf} + "]:" + std::to_string(ntohs(in->sin6_port));
  }
  return "?";
}

std::string errno_text() {
  return std::strerror(errno);
}

} // namespace

// One I/O thread: its epoll loop, its connections and its inbox.
class shard {
public:
  shard(std::size_t index, const server_options& opts,
        std::shared_ptr<std::atomic<std::size_t>> live,
        std::shared_ptr<request_memory_budget> budget)
      : index_(index), opts_(opts), live_(std::move(live)), budget_(std::move(budget)),
        inbox_(std::make_shared<shard_inbox>()),
        // Connection ids are the node's session ids: the shard's index in
        // the top byte keeps them unique across shards.
        next_id_((static_cast<std::uint64_t>(index) << 56) + tls_listen_tag + 1) {}

  ~shard() {
    for (auto& [id, c] : conns_)
      ::close(c->fd);
    if (epfd_ >= 0)
      ::close(epfd_);
  }

  status open() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0)
      return make_error(errc::io_error, "epoll: " + errno_text());
    if (auto st = inbox_->open(); !st)
      return st;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = inbox_tag;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, inbox_->fd(), &ev) != 0)
      return make_error(errc::io_error, "epoll_ctl: " + errno_text());
    return {};
  }

  // From serve(), on this shard's thread: the handler of its requests and
  // the TLS context of its TLS connections (null: no TLS port).
  void serve_with(std::shared_ptr<request_handler> handler,
                  std::shared_ptr<const tls_context> tls) {
    handler_ = std::move(handler);
    tls_ = std::move(tls);
  }

  // The first shard accepts for all (`peers`, itself included), on the
  // client port, the TLS port and the admin socket (-1: none). On this
  // shard's thread.
  status listen_on(int fd, int tls_fd, int admin_fd, std::vector<shard*> peers) {
    listen_fd_ = fd;
    tls_fd_ = tls_fd;
    admin_fd_ = admin_fd;
    peers_ = std::move(peers);
    for (auto [lfd, tag] : {std::pair{fd, listen_tag}, std::pair{tls_fd, tls_listen_tag},
                            std::pair{admin_fd, admin_listen_tag}}) {
      if (lfd < 0)
        continue;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = tag;
      if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, lfd, &ev) != 0)
        return make_error(errc::io_error, "epoll_ctl: " + errno_text());
    }
    return {};
  }

  void post(std::function<void()> fn) { inbox_->post(std::move(fn)); }
  const std::shared_ptr<shard_inbox>& inbox() const noexcept { return inbox_; }
  void request_stop() {
    post([this] { running_ = false; });
  }
  void close_inbox() { inbox_->close(); }

  // On this shard's thread: stops accepting (the first shard) and closes
  // every connection; the loop goes on running posted tasks.
  void stop_serving() {
    for (int fd : {listen_fd_, tls_fd_, admin_fd_})
      if (fd >= 0)
        ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    listen_fd_ = tls_fd_ = admin_fd_ = -1;
    while (!conns_.empty())
      close_conn(*conns_.begin()->second);
    dirty_.clear();
    queued_reads_.clear();
    held_.clear();
    serving_ = false;
  }

  void run() {
    inbox_->bind_to_this_thread();
    epoll_event evs[256];
    auto last_sweep = clock::now();
    bool more_tasks = false;
    while (running_) {
      // Decrypted bytes waiting inside OpenSSL, and tasks this thread
      // posted to itself, wake no epoll: don't sleep then.
      bool busy = more_tasks || !queued_reads_.empty();
      int n = ::epoll_wait(epfd_, evs, 256, busy ? 0 : 1000);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        log(log_level::error, "client server: epoll_wait: ", errno_text());
        break;
      }
      bool woken = false;
      for (int i = 0; i < n; ++i) {
        auto tag = evs[i].data.u64;
        if (tag == inbox_tag) {
          woken = true;
        } else if (tag == listen_tag) {
          accept_all(listen_fd_, door::plain);
        } else if (tag == tls_listen_tag) {
          accept_all(tls_fd_, door::tls);
        } else if (tag == admin_listen_tag) {
          accept_all(admin_fd_, door::admin);
        } else {
          on_socket(tag, evs[i].events);
        }
      }
      // Every request this wake-up read is handed on by now: the tasks
      // they posted (hosted actors with a batch of messages each, replies)
      // run in one go, then every connection's replies go out.
      read_queued();
      more_tasks = inbox_->run_ready(woken);
      flush_dirty();
      auto now = clock::now();
      if (now - last_sweep >= std::chrono::seconds{1}) {
        sweep(now);
        last_sweep = now;
      }
    }
  }

  // Takes over an accepted socket (on this shard's thread), which came in
  // through `from`.
  void adopt(int fd, door from) {
    if (!serving_) { // posted by the accepting shard just before stop_serving
      ::close(fd);
      --*live_;
      return;
    }
    int one = 1;
    bool admin = from == door::admin;
    if (!admin)
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto id = next_id_++ | (admin ? admin_session_bit : 0);
    auto c = std::make_unique<conn>(fd, id,
                                    connection_limits{opts_.max_frame_size,
                                                      opts_.max_in_flight,
                                                      opts_.max_pending_output,
                                                      opts_.requests},
                                    budget_);
    c->last_active = clock::now();
    if (from == door::tls) {
      auto s = tls_stream::accept(*tls_, fd);
      if (!s) {
        log(log_level::warn, "client TLS connection from ", peer_of(fd),
            " closed: ", s.err().message());
        ::close(fd);
        --*live_;
        return;
      }
      c->tls.emplace(std::move(*s));
      c->peer = peer_of(fd); // for log lines, even after the peer is gone
      // The handshake counts as a request being read: a peer that never
      // finishes it is closed after --request-read-timeout-ms.
      c->partial_since = c->last_active;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      log(log_level::warn, "client server: epoll_ctl: ", errno_text());
      ::close(fd);
      --*live_;
      return;
    }
    c->events = EPOLLIN;
    conns_.emplace(id, std::move(c));
  }

  // A connection accepted at the connection limit (on this shard's
  // thread): it takes the place of this shard's connection idle longest,
  // if that one qualifies (server_options::evict_idle_after), else it is
  // closed. 1,024 idle sockets used to shut every other client out until
  // the idle timeout (300 s).
  void admit_at_limit(int fd, door from) {
    if (live_->load() < opts_.max_connections) { // room was made meanwhile
      ++*live_;
      adopt(fd, from);
      return;
    }
    auto now = clock::now();
    conn* idlest = nullptr;
    if (opts_.evict_idle_after.count() > 0) {
      for (auto& [id, c] : conns_) {
        const auto& s = c->state;
        if (s.in_flight() != 0 || !s.output().empty() || s.mid_request()
            || now - c->last_active < opts_.evict_idle_after)
          continue;
        if (idlest && c->last_active >= idlest->last_active)
          continue;
        if (handler_->holds_state(id))
          continue;
        idlest = c.get();
      }
    }
    if (!idlest) {
      log(log_level::warn, "connection refused: ", live_->load(),
          " open connections is the limit (--max-connections) and none has been idle for ",
          opts_.evict_idle_after.count(), " ms without an open transaction");
      ::close(fd);
      return;
    }
    log(log_level::info, "client connection closed to admit a new one: idle for ",
        std::chrono::duration_cast<std::chrono::milliseconds>(now - idlest->last_active).count(),
        " ms at the connection limit (--max-connections)");
    close_conn(*idlest);
    ++*live_;
    adopt(fd, from);
  }

private:
  using clock = std::chrono::steady_clock;

  struct conn {
    conn(int f, std::uint64_t i, connection_limits l,
         std::shared_ptr<request_memory_budget> b)
        : fd(f), id(i), state(l, std::move(b)) {}
    int fd;
    std::uint64_t id;
    client_connection state;
    std::uint32_t events = 0; // what epoll watches now
    bool dirty = false;
    clock::time_point last_active;   // last bytes in, or last reply
    std::optional<clock::time_point> partial_since; // mid-request since
    // A connection of the TLS port: its session, and which way OpenSSL
    // waits for the socket when it cannot go on (a read that must write
    // first, during a handshake; a write that must read first).
    std::optional<tls_stream> tls;
    bool read_wants_write = false;
    bool write_wants_read = false;
    bool read_queued = false; // in queued_reads_
    bool held = false;        // in held_ (the shard was full)
    std::string peer;         // "ip:port" (TLS connections, for log lines)
    // Since when a connection whose TLS handshake failed is half-closed,
    // waiting for its peer to close (tls_linger).
    std::optional<clock::time_point> lingering_since;
  };

  // Closes idle connections and senders stalled inside a request.
  void sweep(clock::time_point now) {
    std::vector<std::uint64_t> doomed;
    for (auto& [id, c] : conns_) {
      const auto& s = c->state;
      if (c->lingering_since) {
        if (now - *c->lingering_since > tls_linger)
          doomed.push_back(id);
      } else if (opts_.request_read_timeout.count() > 0 && c->partial_since
          && now - *c->partial_since > opts_.request_read_timeout) {
        if (c->tls && !c->tls->handshake_done())
          log_tls_refusal(*c, "its TLS handshake did not finish within "
                                + std::to_string(opts_.request_read_timeout.count())
                                + " ms (--request-read-timeout-ms)");
        else
          log(log_level::warn, "client connection closed: a request stayed incomplete for over ",
              opts_.request_read_timeout.count(), " ms (--request-read-timeout-ms)");
        doomed.push_back(id);
      } else if (opts_.idle_timeout.count() > 0 && s.in_flight() == 0
                 && s.output().empty() && now - c->last_active > opts_.idle_timeout) {
        log(log_level::info, "client connection closed: idle for over ",
            opts_.idle_timeout.count(), " ms (--idle-timeout-ms)");
        doomed.push_back(id);
      }
    }
    for (auto id : doomed)
      if (auto it = conns_.find(id); it != conns_.end())
        close_conn(*it->second);
  }

  void accept_all(int listen_fd, door from) {
    bool admin = from == door::admin;
    for (;;) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR)
          continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          log(log_level::warn, "client server: accept: ", errno_text());
        return;
      }
      auto* to = peers_[next_peer_++ % peers_.size()];
      // The operator's admin connections get in even when clients have
      // filled the node (they are few: the socket is 0600).
      if (!admin && live_->load() >= opts_.max_connections) {
        // Full: the shard it goes to makes room, or refuses it.
        if (to == this)
          admit_at_limit(fd, from);
        else
          to->post([to, fd, from] { to->admit_at_limit(fd, from); });
        continue;
      }
      ++*live_;
      if (to == this)
        adopt(fd, from);
      else
        to->post([to, fd, from] { to->adopt(fd, from); });
    }
  }

  void on_socket(std::uint64_t id, std::uint32_t events) {
    auto it = conns_.find(id);
    if (it == conns_.end())
      return;
    auto& c = *it->second;
    if (c.lingering_since) {
      drain(c);
      return;
    }
    if (events & (EPOLLHUP | EPOLLERR)) {
      // Reset, or both directions shut: no reply can reach the peer any
      // more (a half-close arrives as EPOLLIN and a read of 0 instead).
      // Closing now also keeps a paused connection from waking epoll
      // again and again.
      close_conn(c);
      return;
    }
    bool readable = (events & EPOLLIN) != 0;
    bool writable = (events & EPOLLOUT) != 0;
    if (c.tls) {
      // OpenSSL may wait on the other direction (see conn).
      readable = readable || (writable && c.read_wants_write);
      writable = writable || (readable && c.write_wants_read);
    }
    if (readable && !read_ready(c))
      return; // closed
    if (writable)
      mark_dirty(c);
  }

  // Reads and hands on what the connection has; false when it was closed
  // or refused (lingering).
  bool read_ready(conn& c) {
    if (full() && (!c.tls || c.tls->handshake_done())) {
      hold(c); // readable, but no room: EPOLLIN off until there is
      return true;
    }
    if (!(c.tls ? read_tls(c) : read_from(c))) {
      close_conn(c);
      return false;
    }
    if (c.lingering_since)
      return false; // refused: nothing more to do until it closes
    auto now = clock::now();
    c.last_active = now;
    if (!c.state.mid_request() && (!c.tls || c.tls->handshake_done()))
      c.partial_since.reset();
    else if (!c.partial_since)
      c.partial_since = now;
    pump(c);
    return true;
  }

  // TLS connections whose decrypted bytes wait inside OpenSSL while the
  // connection may read (queue_read): read now, as epoll will not say so.
  void read_queued() {
    auto ids = std::move(queued_reads_);
    queued_reads_.clear();
    for (auto id : ids) {
      auto it = conns_.find(id);
      if (it == conns_.end())
        continue;
      auto& c = *it->second;
      c.read_queued = false;
      if (may_read(c) && !c.lingering_since)
        read_ready(c);
    }
  }

  void queue_read(conn& c) {
    if (!c.read_queued && may_read(c) && c.tls->has_buffered_input()) {
      c.read_queued = true;
      queued_reads_.push_back(c.id);
    }
  }

  // read_from for a TLS connection: the handshake first, then records.
  // False when the connection must close (a failed handshake is logged).
  bool read_tls(conn& c) {
    auto& t = *c.tls;
    c.read_wants_write = false;
    if (!t.handshake_done()) {
      auto r = t.handshake();
      if (r.st == tls_stream::state::want_read)
        return true;
      if (r.st == tls_stream::state::want_write) {
        c.read_wants_write = true;
        return true;
      }
      if (r.st == tls_stream::state::closed) {
        log(log_level::debug, "client TLS connection from ", c.peer,
            " closed before its TLS handshake");
        return false;
      }
      if (r.st == tls_stream::state::failed) {
        log_tls_refusal(c, "TLS handshake failed: " + t.failure());
        linger(c);
        return true;
      }
      log(log_level::debug, "client TLS connection from ", c.peer, ": ", t.describe());
    }
    char buf[64 * 1024];
    std::size_t taken = 0;
    while (may_read(c) && taken < tls_read_per_wakeup) {
      auto r = t.read(buf, sizeof buf);
      if (r.st == tls_stream::state::done) {
        c.state.feed(std::string_view{buf, r.bytes});
        taken += r.bytes;
        if (r.bytes < tls_stream::full_record && !t.has_buffered_input())
          break; // most likely drained; epoll says if not (full_record)
        continue;
      }
      if (r.st == tls_stream::state::want_write)
        c.read_wants_write = true;
      else if (r.st == tls_stream::state::closed)
        c.state.peer_closed();
      else if (r.st == tls_stream::state::failed) {
        log(log_level::info, "client TLS connection from ", c.peer, " closed: ", t.failure());
        return false;
      }
      break; // want_read: the socket is drained
    }
    queue_read(c);
    return true;
  }

  // After a failed handshake (OpenSSL has sent its alert): no more output,
  // and the peer's input is read and dropped until it closes or tls_linger
  // passes (why: tls_linger).
  void linger(conn& c) {
    ::shutdown(c.fd, SHUT_WR);
    c.lingering_since = clock::now();
    c.partial_since.reset();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c.id;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = EPOLLIN;
  }

  // Reads and drops a lingering connection's input; closes it at its end.
  void drain(conn& c) {
    char buf[16 * 1024];
    for (int round = 0; round < 16; ++round) {
      auto n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0)
        continue;
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      break; // the peer closed, or the socket broke
    }
    close_conn(c);
  }

  // One warn line per refused TLS connection, at most one a second per
  // shard: a scanner or a misconfigured client fleet cannot flood the log
  // (the next line counts the ones left out).
  void log_tls_refusal(const conn& c, const std::string& why) {
    auto now = clock::now();
    if (last_refusal_log_ && now - *last_refusal_log_ < std::chrono::seconds{1}) {
      ++refusals_not_logged_;
      return;
    }
    last_refusal_log_ = now;
    auto more = std::exchange(refusals_not_logged_, 0);
    // What the reason usually means, in the terms of the flags.
    auto has = [&](const char* s) { return why.find(s) != std::string::npos; };
    const char* hint =
      has("certificate") && !has("alert")
        ? "; this port takes TLS clients with a certificate signed by --client-tls-ca"
      : has("alert") ? "; the client refused the session (does it trust the CA that signed "
                       "--client-tls-cert, and does the certificate name the host it dialled?)"
                     : "; this port takes TLS clients only";
    log(log_level::warn, "client TLS connection from ", c.peer, " closed: ", why, hint,
        " (docs/SECURITY.md, \"The client port\")",
        more > 0 ? " (" + std::to_string(more) + " more refused since the last line)"
                 : std::string{});
  }

  // Reads what the socket has (bounded per wake-up, for fairness). False
  // when the connection broke.
  bool read_from(conn& c) {
    char buf[64 * 1024];
    for (int round = 0; round < 16 && may_read(c); ++round) {
      auto n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.state.feed(std::string_view{buf, static_cast<std::size_t>(n)});
        if (static_cast<std::size_t>(n) < sizeof buf)
          break;
        continue;
      }
      if (n == 0) {
        c.state.peer_closed();
        break;
      }
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      return false; // reset or another socket error
    }
    return true;
  }

  // A full shard (server_options::max_shard_in_flight requests handed on
  // and not answered) takes no more requests and reads no socket until
  // answers make room: the kernel's socket buffers push back on clients.
  bool full() const noexcept {
    return opts_.max_shard_in_flight != 0 && in_flight_ >= opts_.max_shard_in_flight;
  }
  bool may_read(const conn& c) const noexcept { return c.state.wants_read() && !full(); }

  // A connection that has requests or bytes it could not hand on while the
  // shard was full: pumped again once there is room.
  void hold(conn& c) {
    if (!c.held) {
      c.held = true;
      held_.push_back(c.id);
    }
    mark_dirty(c); // not read meanwhile: flush_dirty drops EPOLLIN
  }

  void release_held() {
    auto ids = std::move(held_);
    held_.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto it = conns_.find(ids[i]);
      if (it == conns_.end())
        continue;
      auto& c = *it->second;
      c.held = false;
      pump(c);
      if (full()) { // no room for the rest yet: keep their turn
        for (std::size_t j = i + 1; j < ids.size(); ++j)
          held_.push_back(ids[j]);
        return;
      }
    }
  }

  // Hands every request the connection may take now to the handler.
  void pump(conn& c) {
    if (full()) {
      hold(c);
      return;
    }
    while (!full()) {
      auto d = c.state.next();
      if (!d)
        break;
      ++in_flight_;
      auto in = inbox_;
      auto id = c.id;
      auto slot = d->slot;
      handler_->handle(id, std::move(d->req), [in, self = this, id, slot](response r) {
        auto seen = session_floor::clock_of(r);
        in->post([self, id, slot, bytes = reply_bytes(r), seen]() mutable {
          self->complete(id, slot, std::move(bytes), seen);
        });
      });
    }
    if (full())
      hold(c); // it may have more: its turn comes when there is room
    mark_dirty(c);
  }

  void complete(std::uint64_t id, std::uint64_t slot, std::string bytes,
                const vector_clock& seen) {
    --in_flight_; // every request handed on is answered exactly once
    auto it = conns_.find(id);
    if (it != conns_.end()) {
      auto& c = *it->second;
      c.last_active = clock::now();
      c.state.complete(slot, std::move(bytes), seen);
      pump(c); // requests held back by the in-flight limit go on now
    }
    if (!held_.empty() && !full())
      release_held();
  }

  void mark_dirty(conn& c) {
    if (!c.dirty) {
      c.dirty = true;
      dirty_.push_back(c.id);
    }
  }

  // One send per connection per wake-up with everything it has ready; then
  // what epoll should watch for it.
  void flush_dirty() {
    auto ids = std::move(dirty_);
    dirty_.clear();
    for (auto id : ids) {
      auto it = conns_.find(id);
      if (it == conns_.end())
        continue;
      auto& c = *it->second;
      c.dirty = false;
      if (c.lingering_since)
        continue; // refused: only its input is read (linger)
      bool broken = c.tls ? !write_tls(c) : false;
      while (!c.tls && !broken && !c.state.output().empty()) {
        auto out = c.state.output();
        auto n = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL);
        if (n > 0) {
          c.state.written(static_cast<std::size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR)
          continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
          break;
        broken = true;
        break;
      }
      if (broken || c.state.done()) {
        close_conn(c);
        continue;
      }
      std::uint32_t want = (may_read(c) ? EPOLLIN : 0u)
                           | (c.state.output().empty() ? 0u : EPOLLOUT);
      if (c.tls) {
        // Watch the direction OpenSSL waits for, and only that one: an
        // always-writable socket watched for a write that waits to read
        // would wake the loop without end.
        bool reading = may_read(c) || !c.tls->handshake_done();
        bool writing = !c.state.output().empty();
        want = (reading ? (c.read_wants_write ? EPOLLOUT : EPOLLIN) : 0u)
               | (writing ? (c.write_wants_read ? EPOLLIN : EPOLLOUT) : 0u);
        queue_read(c); // reading may have been let go again
      }
      if (want != c.events) {
        epoll_event ev{};
        ev.events = want;
        ev.data.u64 = c.id;
        ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
        c.events = want;
      }
    }
  }

  // Writes what the TLS connection has ready; false when it broke.
  bool write_tls(conn& c) {
    c.write_wants_read = false;
    if (!c.tls->handshake_done())
      return true; // no request yet, so no reply
    while (!c.state.output().empty()) {
      auto out = c.state.output();
      // A retry after want_write passes the same bytes first, and maybe
      // more (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, tls/tls_context.cpp).
      auto r = c.tls->write(out.data(), out.size());
      if (r.st == tls_stream::state::done) {
        c.state.written(r.bytes);
        continue;
      }
      if (r.st == tls_stream::state::want_write)
        return true;
      if (r.st == tls_stream::state::want_read) {
        c.write_wants_read = true;
        return true;
      }
      return false;
    }
    return true;
  }

  void close_conn(conn& c) {
    if (c.tls)
      c.tls->shutdown(); // close_notify, when the session is healthy
    handler_->closed(c.id);
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    --*live_;
    conns_.erase(c.id); // destroys c
  }

  std::size_t index_;
  server_options opts_;
  std::shared_ptr<request_handler> handler_;
  std::shared_ptr<std::atomic<std::size_t>> live_;
  std::shared_ptr<request_memory_budget> budget_;
  std::shared_ptr<const tls_context> tls_; // null: no TLS port
  std::shared_ptr<shard_inbox> inbox_;
  int epfd_ = -1;
  int listen_fd_ = -1;
  int tls_fd_ = -1;
  int admin_fd_ = -1;
  std::vector<shard*> peers_;
  std::size_t next_peer_ = 0;
  std::uint64_t next_id_;
  std::unordered_map<std::uint64_t, std::unique_ptr<conn>> conns_;
  std::vector<std::uint64_t> dirty_;
  std::vector<std::uint64_t> queued_reads_;
  std::vector<std::uint64_t> held_; // connections waiting for room (full())
  std::size_t in_flight_ = 0;       // requests handed on, not yet answered
  std::optional<clock::time_point> last_refusal_log_;
  std::uint64_t refusals_not_logged_ = 0;
  bool running_ = true;
  bool serving_ = true;
};

namespace {

// A listening socket on bind:port (port 0: any free one).
expected<std::pair<int, std::uint16_t>> listen_socket(const std::string& bind,
                                                      std::uint16_t port) {
  auto fail = [&](const std::string& why) {
    return make_error(errc::unavailable, "cannot listen on " + bind + ":"
                                           + std::to_string(port) + ": " + why
                                           + " (port in use or address not local?)");
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  auto service = std::to_string(port);
  if (int rc = ::getaddrinfo(bind.c_str(), service.c_str(), &hints, &res); rc != 0)
    return fail(::gai_strerror(rc));
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return fail(errno_text());
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
    auto why = errno_text();
    ::freeaddrinfo(res);
    ::close(fd);
    return fail(why);
  }
  ::freeaddrinfo(res);
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::uint16_t actual = a.ss_family == AF_INET6
                           ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port)
                           : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  return std::make_pair(fd, actual);
}

// A listening Unix socket at `path`, mode 0600 (a stale socket file there
// is replaced; any other file is an error).
expected<int> admin_socket(const std::string& path) {
  auto fail = [&](const std::string& why) {
    return make_error(errc::unavailable, "cannot listen on the admin socket " + path + ": " + why);
  };
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path)
    return fail("the path is longer than " + std::to_string(sizeof a.sun_path - 1)
                + " bytes (give --admin-socket a shorter one)");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return fail("a file that is not a socket is there");
    ::unlink(path.c_str()); // left by a node that did not stop cleanly
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return fail(errno_text());
  auto old_mask = ::umask(0177); // the socket file is created 0600
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int err = errno;
  ::umask(old_mask);
  if (rc != 0 || ::listen(fd, 64) != 0) {
    if (rc == 0)
      err = errno;
    ::close(fd);
    errno = err;
    return fail(errno_text());
  }
  return fd;
}

} // namespace

expected<std::unique_ptr<client_server>> client_server::create(server_options opts) {
  if (opts.threads == 0)
    opts.threads = 1;
  if (!opts.plain && !opts.tls_port)
    return make_error(errc::bad_config, "no client port: the plain port is off and there is "
                                        "no TLS port (--client-tls-port)");
  std::unique_ptr<client_server> self{new client_server};
  self->opts_ = opts;
  auto live = std::make_shared<std::atomic<std::size_t>>(0);
  auto budget = opts.max_request_memory > 0
                  ? std::make_shared<request_memory_budget>(opts.max_request_memory)
                  : nullptr;
  for (std::size_t i = 0; i < opts.threads; ++i) {
    auto s = std::make_shared<shard>(i, opts, live, budget);
    if (auto st = s->open(); !st)
      return st.err();
    self->shards_.push_back(std::move(s));
  }
  for (auto& s : self->shards_)
    self->threads_.emplace_back([s] { s->run(); });
  return self;
}

std::size_t client_server::shards() const noexcept {
  return shards_.size();
}

std::shared_ptr<shard_inbox> client_server::tasks(std::size_t i) const {
  return shards_.at(i)->inbox();
}

namespace {
// Runs `fn` on `s`'s thread and waits for its result.
template <class F>
auto on_shard(shard& s, F fn) -> decltype(fn()) {
  std::promise<decltype(fn())> done;
  auto result = done.get_future();
  s.post([&done, &fn] { done.set_value(fn()); });
  return result.get();
}
} // namespace

status client_server::serve(std::shared_ptr<request_handler> handler) {
  if (stopped_ || serving_)
    return make_error(errc::invalid_argument, "the client server is already serving or stopped");
  const auto& opts = opts_;
  std::shared_ptr<const tls_context> tls;
  if (opts.tls_port) {
    auto ctx = tls_context::server(opts.tls);
    if (!ctx)
      return ctx.err();
    tls = std::make_shared<const tls_context>(std::move(*ctx));
  }
  if (opts.plain) {
    auto sock = listen_socket(opts.bind, opts.port);
    if (!sock)
      return sock.err();
    listen_fd_ = sock->first;
    port_ = sock->second;
  }
  if (opts.tls_port) {
    auto sock = listen_socket(opts.bind, *opts.tls_port);
    if (!sock)
      return sock.err();
    tls_fd_ = sock->first;
    tls_port_ = sock->second;
  }
  if (!opts.admin_socket.empty()) {
    auto admin = admin_socket(opts.admin_socket);
    if (!admin)
      return admin.err();
    admin_fd_ = *admin;
    admin_path_ = opts.admin_socket;
  }
  std::vector<shard*> all;
  for (auto& s : shards_) {
    all.push_back(s.get());
    on_shard(*s, [&] {
      s->serve_with(handler, tls);
      return true;
    });
  }
  auto& first = *shards_.front();
  if (auto st = on_shard(first, [&] {
        return first.listen_on(listen_fd_, tls_fd_, admin_fd_, all);
      });
      !st)
    return st.err();
  serving_ = true;
  return {};
}

expected<std::unique_ptr<client_server>>
client_server::start(server_options opts, std::shared_ptr<request_handler> handler) {
  auto self = create(std::move(opts));
  if (!self)
    return self.err();
  if (auto st = (*self)->serve(std::move(handler)); !st)
    return st.err();
  return self;
}

void client_server::stop_serving() {
  if (serving_stopped_)
    return;
  serving_stopped_ = true;
  for (auto& s : shards_)
    on_shard(*s, [&s] {
      s->stop_serving();
      return true;
    });
  for (int* fd : {&listen_fd_, &tls_fd_}) {
    if (*fd >= 0)
      ::close(*fd);
    *fd = -1;
  }
  if (admin_fd_ >= 0) {
    ::close(admin_fd_);
    ::unlink(admin_path_.c_str());
  }
  admin_fd_ = -1;
}

void client_server::stop() {
  if (stopped_)
    return;
  stop_serving();
  stopped_ = true;
  for (auto& s : shards_)
    s->request_stop();
  for (auto& t : threads_)
    t.join();
  threads_.clear();
  for (auto& s : shards_)
    s->close_inbox();
  shards_.clear();
}

client_server::~client_server() {
  stop();
}

} // namespace tally
