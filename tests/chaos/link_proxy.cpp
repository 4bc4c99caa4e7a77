// The chaos suite's link proxy (link_proxy.hpp): one poll() loop on its own
// thread forwards bytes between the nodes and applies the cuts; another
// thread finds which node opened each new connection.
#include "tests/chaos/link_proxy.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/support/tallyd_process.hpp"

namespace tally::chaos {

namespace {

// Every descriptor the proxy opens is close-on-exec: the nodes are forked
// from the test process, and a node holding a copy of a proxy socket would
// keep a cut link open.

// What one connection buffers per direction before it stops reading that
// side (back-pressure to the sender).
constexpr std::size_t buffer_cap = 1 << 20;

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

// Closes with a TCP reset (RST) rather than a FIN: the other side sees the
// link drop, not an orderly end.
void close_with_reset(int fd) {
  if (fd < 0)
    return;
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

std::uint16_t port_of(int fd, bool peer) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
               : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (r != 0)
    return 0;
  if (a.ss_family == AF_INET)
    return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

// The inode of the socket whose local end is 127.0.0.1:`local` and remote
// end 127.0.0.1:`remote`, from one /proc/net/tcp* table; 0 when absent.
unsigned long socket_inode(const char* table, std::uint16_t local, std::uint16_t remote) {
  std::ifstream in{table};
  std::string line;
  std::getline(in, line); // the header
  char want_local[8], want_remote[8];
  std::snprintf(want_local, sizeof want_local, ":%04X", unsigned(local));
  std::snprintf(want_remote, sizeof want_remote, ":%04X", unsigned(remote));
  while (std::getline(in, line)) {
    std::istringstream f{line};
    std::string sl, l, r, st, queues, timer, retr, uid, timeout;
    unsigned long inode = 0;
    if (!(f >> sl >> l >> r >> st >> queues >> timer >> retr >> uid >> timeout >> inode))
      continue;
    auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    // 127.0.0.1 is 0100007F in the table (little-endian), also at the end
    // of an IPv4-mapped IPv6 address.
    if (ends_with(l, std::string("0100007F") + want_local)
        && ends_with(r, std::string("0100007F") + want_remote))
      return inode;
  }
  return 0;
}

bool holds_socket(pid_t pid, const std::string& link) {
  auto dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    return false;
  bool found = false;
  char target[64];
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    auto path = dir + "/" + e->d_name;
    auto n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n > 0 && link.compare(0, std::string::npos, target, std::size_t(n)) == 0) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

pid_t parent_of(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string stat;
  std::getline(in, stat);
  auto close = stat.rfind(')'); // the command name may hold spaces
  if (close == std::string::npos)
    return -1;
  std::istringstream f{stat.substr(close + 1)};
  std::string state;
  pid_t ppid = -1;
  f >> state >> ppid;
  return ppid;
}

// The children of this process: every thread's
// /proc/<pid>/task/<tid>/children (the nodes are started from several test
// threads). Far fewer than every process in /proc, but the kernel may miss
// a child that forks or exits meanwhile (proc(5)): the caller falls back to
// every process whose parent is this one.
std::vector<pid_t> children() {
  std::vector<pid_t> out;
  const auto tasks = "/proc/" + std::to_string(::getpid()) + "/task";
  DIR* d = ::opendir(tasks.c_str());
  if (!d)
    return out;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    std::ifstream in{tasks + "/" + e->d_name + "/children"};
    pid_t pid = 0;
    while (in >> pid)
      out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

} // namespace

pid_t child_owning_connection(std::uint16_t peer_port, std::uint16_t local_port) {
  auto inode = socket_inode("/proc/net/tcp", peer_port, local_port);
  if (inode == 0)
    inode = socket_inode("/proc/net/tcp6", peer_port, local_port);
  if (inode == 0)
    return -1;
  const auto link = "socket:[" + std::to_string(inode) + "]";
  for (auto pid : children())
    if (holds_socket(pid, link))
      return pid;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (!proc)
    return -1;
  pid_t owner = -1;
  while (auto* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0')
      continue;
    if (parent_of(pid_t(pid)) == self && holds_socket(pid_t(pid), link)) {
      owner = pid_t(pid);
      break;
    }
  }
  ::closedir(proc);
  return owner;
}

struct link_proxy::front {
  int node = -1;
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::uint16_t target = 0;
};

struct link_proxy::connection {
  int target = -1;  // the node whose front port it came in on
  int origin = -1;  // the node that opened it
  int down = -1;    // the accepted socket (origin side)
  int up = -1;      // to the target's cluster port
  bool connecting = false;
  bool frozen = false;
  bool held = false; // accepted during a blackhole cut, never forwarded
  bool dead = false;
  std::string to_up, to_down;
};

link_proxy::link_proxy(std::function<int(pid_t)> node_of_pid)
    : node_of_pid_(std::move(node_of_pid)) {
  if (::pipe2(wake_, O_CLOEXEC) == 0) {
    set_nonblocking(wake_[0]);
    set_nonblocking(wake_[1]);
  }
  lookup_thread_ = std::thread([this] { look_up_openers(); });
  thread_ = std::thread([this] { run(); });
}

link_proxy::~link_proxy() {
  stop_ = true;
  wake();
  {
    std::lock_guard<std::mutex> g{lookup_mu_};
    lookup_cv_.notify_all();
  }
  if (thread_.joinable())
    thread_.join();
  if (lookup_thread_.joinable())
    lookup_thread_.join();
  for (auto& c : conns_)
    close_connection(*c, true);
  for (auto* waiting : {&to_identify_, &identified_})
    for (auto& n : *waiting)
      close_with_reset(n.c->down);
  for (auto& f : fronts_)
    ::close(f->listen_fd);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void link_proxy::wake() {
  char b = 1;
  auto n = ::write(wake_[1], &b, 1);
  (void)n; // a full pipe already wakes the loop
}

std::uint16_t link_proxy::add_node(int node, std::uint16_t target_port,
                                   std::uint16_t front_port) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto port = front_port != 0 ? front_port : tally::test::free_port();
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
      ::close(fd);
      if (front_port != 0)
        return 0;
      continue;
    }
    set_nonblocking(fd);
    auto f = std::make_unique<front>();
    f->node = node;
    f->listen_fd = fd;
    f->port = port;
    f->target = target_port;
    {
      std::lock_guard<std::mutex> g{mu_};
      fronts_.push_back(std::move(f));
    }
    wake();
    return port;
  }
  return 0;
}

void link_proxy::change_cuts(const std::function<void()>& change) {
  std::unique_lock<std::mutex> lock{mu_};
  change();
  auto mine = ++cuts_asked_;
  wake();
  // Bounded: the loop wakes at once, and at least every 100 ms.
  applied_.wait_for(lock, std::chrono::seconds(5), [&] { return cuts_applied_ >= mine; });
}

void link_proxy::retarget(int node, std::uint16_t target_port) {
  std::lock_guard<std::mutex> g{mu_};
  for (auto& f : fronts_)
    if (f->node == node)
      f->target = target_port;
}

void link_proxy::isolate(int node, cut_mode mode) {
  change_cuts([&] { cut_[node] = mode; });
}

void link_proxy::heal(int node) {
  change_cuts([&] { cut_.erase(node); });
}

void link_proxy::heal_all() {
  change_cuts([&] { cut_.clear(); });
}

std::vector<int> link_proxy::isolated() const {
  std::lock_guard<std::mutex> g{mu_};
  std::vector<int> out;
  for (const auto& [n, m] : cut_)
    out.push_back(n);
  return out;
}

std::size_t link_proxy::open_connections() const {
  std::lock_guard<std::mutex> g{mu_};
  std::size_t n = 0;
  for (const auto& c : conns_)
    n += !c->dead;
  return n;
}

link_proxy::counters link_proxy::stats() const {
  std::lock_guard<std::mutex> g{mu_};
  return stats_;
}

bool link_proxy::affected_locked(const connection& c) const {
  return cut_.count(c.target) != 0 || cut_.count(c.origin) != 0;
}

void link_proxy::close_connection(connection& c, bool reset) {
  if (c.dead)
    return;
  if (reset) {
    close_with_reset(c.down);
    close_with_reset(c.up);
  } else {
    if (c.down >= 0)
      ::close(c.down);
    if (c.up >= 0)
      ::close(c.up);
  }
  c.down = c.up = -1;
  c.dead = true;
}

void link_proxy::apply_cuts_locked() {
  for (auto& cp : conns_) {
    auto& c = *cp;
    if (c.dead)
      continue;
    if (affected_locked(c)) {
      bool reset = false;
      for (int n : {c.target, c.origin})
        if (auto it = cut_.find(n); it != cut_.end() && it->second == cut_mode::reset)
          reset = true;
      if (reset) {
        close_connection(c, true);
        ++stats_.reset_by_cut;
      } else if (!c.frozen) {
        c.frozen = true;
        ++stats_.frozen_by_cut;
      }
    } else if (c.frozen) {
      if (c.held)
        close_connection(c, true); // its connect attempt was "lost"
      else
        c.frozen = false;          // what waited in the buffers flows again
    }
  }
}

void link_proxy::accept_on(front& f) {
  for (;;) {
    int fd = ::accept4(f.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    ++stats_.accepted;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    newcomer n;
    n.c = std::make_unique<connection>();
    n.c->target = f.node;
    n.c->down = fd;
    n.peer = port_of(fd, true);
    n.front_port = f.port;
    n.target_port = f.target;
    std::lock_guard<std::mutex> g{lookup_mu_};
    to_identify_.push_back(std::move(n));
    lookup_cv_.notify_one();
  }
}

void link_proxy::look_up_openers() {
  std::vector<newcomer> batch;
  while (!stop_) {
    {
      std::unique_lock<std::mutex> lock{lookup_mu_};
      lookup_cv_.wait(lock, [&] { return stop_ || !to_identify_.empty(); });
      batch.swap(to_identify_);
    }
    for (auto& n : batch) {
      if (stop_)
        break;
      auto began = std::chrono::steady_clock::now();
      identify(n);
      n.lookup_ms = std::uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - began)
                                    .count());
    }
    {
      std::lock_guard<std::mutex> g{lookup_mu_};
      for (auto& n : batch)
        identified_.push_back(std::move(n));
    }
    batch.clear();
    wake();
  }
}

void link_proxy::identify(newcomer& n) const {
  // The opener is found while its socket is still open: a node whose
  // connect attempt is pending keeps it.
  auto opener_alive = [&] {
    return socket_inode("/proc/net/tcp", n.peer, n.front_port) != 0
           || socket_inode("/proc/net/tcp6", n.peer, n.front_port) != 0;
  };
  pid_t pid = -1;
  for (int i = 0; i < 3 && pid < 0; ++i)
    pid = child_owning_connection(n.peer, n.front_port);
  n.c->origin = pid > 0 ? node_of_pid_(pid) : -1;
  // A node being killed may hold a live socket its fd table no longer
  // lists (the kernel closes a dying process's files one by one): looked
  // at again a few times, 10 ms apart, until it is found or gone.
  for (int i = 0; i < 10 && n.c->origin < 0 && opener_alive() && !stop_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pid = child_owning_connection(n.peer, n.front_port);
    n.c->origin = pid > 0 ? node_of_pid_(pid) : -1;
  }
  if (n.c->origin < 0)
    n.opener_gone = !opener_alive();
}

void link_proxy::admit(newcomer n) {
  auto c = std::move(n.c);
  int fd = c->down;
  stats_.slowest_lookup_ms = std::max(stats_.slowest_lookup_ms, n.lookup_ms);
  if (c->origin < 0) {
    // Not from a known node (or its end is already gone): refusing it
    // keeps a cut node from slipping through unrecognised. An end that
    // no process holds any more (absent from the socket tables, or
    // orphaned: inode 0) was closed by its opener, a node killed while
    // it connected: nothing can pass through it, so it is counted
    // apart from a live socket of no known node.
    ++stats_.refused;
    if (n.opener_gone)
      ++stats_.opener_gone;
    else
      ++stats_.unknown_origin;
    close_with_reset(fd);
    return;
  }
  // The cuts as they are now, not as they were at the accept.
  if (affected_locked(*c)) {
    bool reset = false;
    for (int node : {c->target, c->origin})
      if (auto it = cut_.find(node); it != cut_.end() && it->second == cut_mode::reset)
        reset = true;
    if (reset) {
      ++stats_.refused;
      close_with_reset(fd);
      return;
    }
    c->frozen = c->held = true;
    conns_.push_back(std::move(c));
    return;
  }
  int one = 1;
  c->up = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ::setsockopt(c->up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(n.target_port);
  if (::connect(c->up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) { // the node is down: so is the link
      close_connection(*c, true);
      return;
    }
    c->connecting = true;
  }
  conns_.push_back(std::move(c));
}

void link_proxy::pump(connection& c, bool down_readable, bool down_writable, bool up_readable,
                      bool up_writable) {
  if (c.connecting) {
    if (!up_writable)
      return;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.up, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close_connection(c, true);
      return;
    }
    c.connecting = false;
  }
  char buf[65536];
  bool eof = false, broken = false;
  auto read_side = [&](int fd, std::string& into) {
    while (into.size() < buffer_cap) {
      auto n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        into.append(buf, std::size_t(n));
        stats_.bytes += std::uint64_t(n);
        continue;
      }
      if (n == 0)
        eof = true;
      else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        broken = true;
      return;
    }
  };
  auto write_side = [&](int fd, std::string& from) {
    while (!from.empty()) {
      auto n = ::send(fd, from.data(), from.size(), MSG_NOSIGNAL);
      if (n > 0) {
        from.erase(0, std::size_t(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        broken = true;
      return;
    }
  };
  if (down_readable)
    read_side(c.down, c.to_up);
  if (up_readable)
    read_side(c.up, c.to_down);
  if (!c.to_up.empty() && (up_writable || down_readable))
    write_side(c.up, c.to_up);
  if (!c.to_down.empty() && (down_writable || up_readable))
    write_side(c.down, c.to_down);
  if (broken)
    close_connection(c, true);
  else if (eof) // one side ended: pass on what it sent, then end both
  {
    write_side(c.up, c.to_up);
    write_side(c.down, c.to_down);
    close_connection(c, false);
  }
}

void link_proxy::run() {
  struct slot {
    connection* c;
    int fd_index_down;
    int fd_index_up;
  };
  std::vector<pollfd> fds;
  std::vector<slot> slots;
  std::vector<front*> listeners;
  std::unique_lock<std::mutex> lock{mu_};
  while (!stop_) {
    fds.clear();
    slots.clear();
    listeners.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    for (auto& f : fronts_) {
      listeners.push_back(f.get());
      fds.push_back({f->listen_fd, POLLIN, 0});
    }
    for (auto& cp : conns_) {
      auto& c = *cp;
      if (c.dead || c.frozen)
        continue;
      short down_events = 0, up_events = 0;
      if (c.connecting) {
        up_events = POLLOUT;
      } else {
        if (c.to_up.size() < buffer_cap)
          down_events |= POLLIN;
        if (!c.to_down.empty())
          down_events |= POLLOUT;
        if (c.to_down.size() < buffer_cap)
          up_events |= POLLIN;
        if (!c.to_up.empty())
          up_events |= POLLOUT;
      }
      slot s{&c, int(fds.size()), int(fds.size() + 1)};
      fds.push_back({c.down, down_events, 0});
      fds.push_back({c.up, up_events, 0});
      slots.push_back(s);
    }
    lock.unlock();
    ::poll(fds.data(), nfds_t(fds.size()), 100);
    lock.lock();
    if (fds[0].revents != 0) {
      char b[64];
      while (::read(wake_[0], b, sizeof b) > 0) {
      }
    }
    // Connections first, with the indices taken above (the cut below may
    // freeze or close some; accept adds new ones at the end).
    for (const auto& s : slots) {
      auto& c = *s.c;
      if (c.dead || c.frozen)
        continue;
      auto dr = fds[std::size_t(s.fd_index_down)].revents;
      auto ur = fds[std::size_t(s.fd_index_up)].revents;
      const short in = POLLIN | POLLHUP | POLLERR;
      pump(c, (dr & in) != 0, (dr & (POLLOUT | POLLERR)) != 0, (ur & in) != 0,
           (ur & (POLLOUT | POLLERR | POLLHUP)) != 0);
    }
    if (cuts_applied_ != cuts_asked_) {
      apply_cuts_locked();
      cuts_applied_ = cuts_asked_;
      applied_.notify_all();
    }
    for (std::size_t i = 0; i < listeners.size(); ++i)
      if (fds[1 + i].revents & POLLIN)
        accept_on(*listeners[i]);
    std::vector<newcomer> ready;
    {
      std::lock_guard<std::mutex> g{lookup_mu_};
      ready.swap(identified_);
    }
    for (auto& n : ready)
      admit(std::move(n));
    for (auto it = conns_.begin(); it != conns_.end();)
      it = (*it)->dead ? conns_.erase(it) : it + 1;
  }
}

} // namespace tally::chaos
