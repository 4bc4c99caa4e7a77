// A scripted stand-in for tallyd on 127.0.0.1: it accepts a fixed number of
// connections one after another and runs a script on each, which reads
// request frames and answers (or drops the connection, or stays silent).
// Every frame received is logged for the test to inspect after join().
//
// The script runs on one background thread; the test reads the log only
// after join(). Every blocking wait is bounded (io_limit), so a client bug
// fails the test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol/descriptor.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"

namespace tally::test {

/// Upper bound of any wait in the fake server. Why 5 s: far above any
/// reply the tests expect, far below the suite's CTest timeout.
constexpr int io_limit_ms = 5000;

/// A socket bound to 127.0.0.1 on a free port; listening if asked.
class local_socket {
public:
  explicit local_socket(bool listening) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (listening)
      ::listen(fd_, 64);
  }
  local_socket(const local_socket&) = delete;
  local_socket& operator=(const local_socket&) = delete;
  ~local_socket() { ::close(fd_); }

  int fd() const { return fd_; }
  std::uint16_t port() const { return port_; }

private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// One accepted connection, as the script sees it.
class fake_peer {
public:
  fake_peer(int fd, std::vector<frame>& log) : fd_(fd), log_(log) {}
  fake_peer(const fake_peer&) = delete;
  fake_peer& operator=(const fake_peer&) = delete;
  ~fake_peer() { close(); }

  /// The next request frame; nullopt when the client closed the connection
  /// (or nothing came within `wait_ms`; 0 takes only what has arrived).
  std::optional<frame> read_frame(int wait_ms = io_limit_ms) {
    for (;;) {
      if (auto f = decoder_.next()) {
        log_.push_back(*f);
        return f;
      }
      pollfd p{fd_, POLLIN, 0};
      if (fd_ < 0 || ::poll(&p, 1, wait_ms) <= 0)
        return std::nullopt;
      char buf[4096];
      auto n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0)
        return std::nullopt;
      if (!decoder_.feed({buf, static_cast<std::size_t>(n)}))
        return std::nullopt;
    }
  }

  /// The next request, decoded.
  std::optional<request> read_request() {
    auto f = read_frame();
    if (!f)
      return std::nullopt;
    auto req = decode_request(f->code, f->body);
    if (!req)
      return std::nullopt;
    return std::move(*req);
  }

  void reply(const response& resp) {
    auto bytes = encode_frame(encode_response(resp));
    std::size_t sent = 0;
    while (bytes && sent < bytes->size()) {
      auto n = ::send(fd_, bytes->data() + sent, bytes->size() - sent,
                      MSG_NOSIGNAL);
      if (n <= 0)
        return;
      sent += static_cast<std::size_t>(n);
    }
  }

  /// Blocks until the client closes its end (it gave up waiting).
  void wait_for_close() {
    while (read_frame()) {
    }
  }

  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_;
  std::vector<frame>& log_;
  frame_decoder decoder_;
};

class fake_server {
public:
  using script = std::function<void(std::size_t connection, fake_peer&)>;

  fake_server(std::size_t connections, script s)
      : listener_(true),
        thread_([this, connections, s = std::move(s)] {
          for (std::size_t i = 0; i < connections; ++i) {
            pollfd p{listener_.fd(), POLLIN, 0};
            if (::poll(&p, 1, io_limit_ms) <= 0)
              return;
            int fd = ::accept(listener_.fd(), nullptr, nullptr);
            if (fd < 0)
              return;
            ++accepted_;
            fake_peer peer{fd, log_};
            s(i, peer);
          }
        }) {}

  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;
  ~fake_server() { join(); }

  std::uint16_t port() const { return listener_.port(); }

  void join() {
    if (thread_.joinable())
      thread_.join();
  }

  /// Every frame received, in order (call after join()).
  const std::vector<frame>& frames() const { return log_; }
  std::size_t accepted() const { return accepted_; }

private:
  local_socket listener_;
  std::vector<frame> log_;
  std::size_t accepted_ = 0;
  std::thread thread_;
};

/// A successful commit reply carrying a clock whose one entry is `time`.
inline response commit_at(std::uint64_t time) {
  return commit_resp{true, encode_clock(vector_clock{{0, time}}), 0};
}

} // namespace tally::test
