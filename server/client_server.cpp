#include "server/client_server.hpp"

#include <cerrno>
#include <cstring>
#include <functional>
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
#include <unistd.h>

#include "common/log.hpp"
#include "server/connection.hpp"

namespace tally {

namespace {

// epoll tags: connection ids start above these.
constexpr std::uint64_t inbox_tag = 0;
constexpr std::uint64_t listen_tag = 1;
constexpr std::uint64_t admin_listen_tag = 2;

// Work posted to a shard from any thread. It outlives the shard's thread:
// a reply that arrives after stop() is dropped here, not run.
struct inbox {
  int efd = -1;
  std::mutex mu;
  std::vector<std::function<void()>> items;
  bool signaled = false;
  bool closed = false;

  ~inbox() {
    if (efd >= 0)
      ::close(efd);
  }
  // One eventfd write per batch: only the first post after the shard took
  // the last batch wakes it.
  void post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> g{mu};
      if (closed)
        return;
      items.push_back(std::move(fn));
      if (signaled)
        return;
      signaled = true;
    }
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(efd, &one, sizeof one);
  }
  std::vector<std::function<void()>> take() {
    std::uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(efd, &count, sizeof count);
    std::vector<std::function<void()>> out;
    std::lock_guard<std::mutex> g{mu};
    out.swap(items);
    signaled = false;
    return out;
  }
  void close() {
    std::lock_guard<std::mutex> g{mu};
    closed = true;
    items.clear();
  }
};

std::string errno_text() {
  return std::strerror(errno);
}

} // namespace

// One I/O thread: its epoll loop, its connections and its inbox.
class shard {
public:
  shard(std::size_t index, const server_options& opts,
        std::shared_ptr<request_handler> handler,
        std::shared_ptr<std::atomic<std::size_t>> live,
        std::shared_ptr<request_memory_budget> budget)
      : index_(index), opts_(opts), handler_(std::move(handler)),
        live_(std::move(live)), budget_(std::move(budget)),
        inbox_(std::make_shared<inbox>()),
        // Connection ids are the node's session ids: the shard's index in
        // the top byte keeps them unique across shards.
        next_id_((static_cast<std::uint64_t>(index) << 56) + admin_listen_tag + 1) {}

  ~shard() {
    for (auto& [id, c] : conns_)
      ::close(c->fd);
    if (epfd_ >= 0)
      ::close(epfd_);
  }

  status open() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    inbox_->efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epfd_ < 0 || inbox_->efd < 0)
      return make_error(errc::io_error, "epoll/eventfd: " + errno_text());
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = inbox_tag;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, inbox_->efd, &ev) != 0)
      return make_error(errc::io_error, "epoll_ctl: " + errno_text());
    return {};
  }

  // The first shard accepts for all (`peers`, itself included), on the
  // client port and on the admin socket (admin_fd, -1: none).
  status listen_on(int fd, int admin_fd, std::vector<shard*> peers) {
    listen_fd_ = fd;
    admin_fd_ = admin_fd;
    peers_ = std::move(peers);
    for (auto [lfd, tag] : {std::pair{fd, listen_tag}, std::pair{admin_fd, admin_listen_tag}}) {
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
  void request_stop() {
    post([this] { running_ = false; });
  }
  void close_inbox() { inbox_->close(); }

  void run() {
    epoll_event evs[256];
    auto last_sweep = clock::now();
    while (running_) {
      int n = ::epoll_wait(epfd_, evs, 256, 1000);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        log(log_level::error, "client server: epoll_wait: ", errno_text());
        break;
      }
      for (int i = 0; i < n; ++i) {
        auto tag = evs[i].data.u64;
        if (tag == inbox_tag) {
          for (auto& fn : inbox_->take())
            fn();
        } else if (tag == listen_tag) {
          accept_all(listen_fd_, false);
        } else if (tag == admin_listen_tag) {
          accept_all(admin_fd_, true);
        } else {
          on_socket(tag, evs[i].events);
        }
      }
      flush_dirty();
      auto now = clock::now();
      if (now - last_sweep >= std::chrono::seconds{1}) {
        sweep(now);
        last_sweep = now;
      }
    }
  }

  // Takes over an accepted socket (on this shard's thread); `admin`: it came
  // in on the admin socket.
  void adopt(int fd, bool admin = false) {
    int one = 1;
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
  void admit_at_limit(int fd, bool admin) {
    if (live_->load() < opts_.max_connections) { // room was made meanwhile
      ++*live_;
      adopt(fd, admin);
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
    adopt(fd, admin);
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
  };

  // Closes idle connections and senders stalled inside a request.
  void sweep(clock::time_point now) {
    std::vector<std::uint64_t> doomed;
    for (auto& [id, c] : conns_) {
      const auto& s = c->state;
      if (opts_.request_read_timeout.count() > 0 && c->partial_since
          && now - *c->partial_since > opts_.request_read_timeout) {
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

  void accept_all(int listen_fd, bool admin) {
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
          admit_at_limit(fd, admin);
        else
          to->post([to, fd, admin] { to->admit_at_limit(fd, admin); });
        continue;
      }
      ++*live_;
      if (to == this)
        adopt(fd, admin);
      else
        to->post([to, fd, admin] { to->adopt(fd, admin); });
    }
  }

  void on_socket(std::uint64_t id, std::uint32_t events) {
    auto it = conns_.find(id);
    if (it == conns_.end())
      return;
    auto& c = *it->second;
    if (events & (EPOLLHUP | EPOLLERR)) {
      // Reset, or both directions shut: no reply can reach the peer any
      // more (a half-close arrives as EPOLLIN and a read of 0 instead).
      // Closing now also keeps a paused connection from waking epoll
      // again and again.
      close_conn(c);
      return;
    }
    if (events & EPOLLIN) {
      if (!read_from(c)) {
        close_conn(c);
        return;
      }
      auto now = clock::now();
      c.last_active = now;
      if (!c.state.mid_request())
        c.partial_since.reset();
      else if (!c.partial_since)
        c.partial_since = now;
      pump(c);
    }
    if (events & EPOLLOUT)
      mark_dirty(c);
  }

  // Reads what the socket has (bounded per wake-up, for fairness). False
  // when the connection broke.
  bool read_from(conn& c) {
    char buf[64 * 1024];
    for (int round = 0; round < 16 && c.state.wants_read(); ++round) {
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

  // Hands every request the connection may take now to the handler.
  void pump(conn& c) {
    while (auto d = c.state.next()) {
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
    mark_dirty(c);
  }

  void complete(std::uint64_t id, std::uint64_t slot, std::string bytes,
                const vector_clock& seen) {
    auto it = conns_.find(id);
    if (it == conns_.end())
      return; // the connection went away meanwhile
    auto& c = *it->second;
    c.last_active = clock::now();
    c.state.complete(slot, std::move(bytes), seen);
    pump(c); // requests held back by the in-flight limit go on now
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
      bool broken = false;
      while (!c.state.output().empty()) {
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
      std::uint32_t want = (c.state.wants_read() ? EPOLLIN : 0u)
                           | (c.state.output().empty() ? 0u : EPOLLOUT);
      if (want != c.events) {
        epoll_event ev{};
        ev.events = want;
        ev.data.u64 = c.id;
        ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
        c.events = want;
      }
    }
  }

  void close_conn(conn& c) {
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
  std::shared_ptr<inbox> inbox_;
  int epfd_ = -1;
  int listen_fd_ = -1;
  int admin_fd_ = -1;
  std::vector<shard*> peers_;
  std::size_t next_peer_ = 0;
  std::uint64_t next_id_;
  std::unordered_map<std::uint64_t, std::unique_ptr<conn>> conns_;
  std::vector<std::uint64_t> dirty_;
  bool running_ = true;
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

expected<std::unique_ptr<client_server>>
client_server::start(server_options opts, std::shared_ptr<request_handler> handler) {
  if (opts.threads == 0)
    opts.threads = 1;
  std::unique_ptr<client_server> self{new client_server};
  auto sock = listen_socket(opts.bind, opts.port);
  if (!sock)
    return sock.err();
  self->listen_fd_ = sock->first;
  self->port_ = sock->second;
  if (!opts.admin_socket.empty()) {
    auto admin = admin_socket(opts.admin_socket);
    if (!admin)
      return admin.err();
    self->admin_fd_ = *admin;
    self->admin_path_ = opts.admin_socket;
  }
  auto live = std::make_shared<std::atomic<std::size_t>>(0);
  auto budget = opts.max_request_memory > 0
                  ? std::make_shared<request_memory_budget>(opts.max_request_memory)
                  : nullptr;
  std::vector<shard*> all;
  for (std::size_t i = 0; i < opts.threads; ++i) {
    auto s = std::make_shared<shard>(i, opts, handler, live, budget);
    if (auto st = s->open(); !st)
      return st.err();
    all.push_back(s.get());
    self->shards_.push_back(std::move(s));
  }
  if (auto st = self->shards_.front()->listen_on(self->listen_fd_, self->admin_fd_, all); !st)
    return st.err();
  for (auto& s : self->shards_)
    self->threads_.emplace_back([s] { s->run(); });
  return self;
}

void client_server::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  for (auto& s : shards_)
    s->request_stop();
  for (auto& t : threads_)
    t.join();
  threads_.clear();
  for (auto& s : shards_)
    s->close_inbox();
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  listen_fd_ = -1;
  if (admin_fd_ >= 0) {
    ::close(admin_fd_);
    ::unlink(admin_path_.c_str());
  }
  admin_fd_ = -1;
  shards_.clear(); // closes every connection
}

client_server::~client_server() {
  stop();
}

} // namespace tally
