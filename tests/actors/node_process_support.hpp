// Helpers for process-level tests: the real tallyd binary on 127.0.0.1 with a
// free port and a temporary data dir (tests/actors/node_process_test.cpp,
// tests/actors/tcc_properties_test.cpp).
//
// server, temp_dir, free_port() and try_connect() (tests/support/
// tallyd_process.hpp) are used from the test thread. wire_client makes no Boost.Test call (Boost.Test is not
// thread-safe), so worker threads of a concurrent test can each own one and
// record what happened for the test thread to check.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/frame.hpp"
#include "tests/support/tallyd_process.hpp"
#include "protocol/messages.hpp"


namespace tally::test {

/// A client connection without Boost.Test calls: failures come back as
/// nullopt (plus a message in `last_error`), never as a test failure, so a
/// worker thread can use it.
class wire_client {
public:
  wire_client() = default;
  explicit wire_client(std::uint16_t port) : fd_(try_connect(port)) {
    if (fd_ < 0)
      last_error = "cannot connect to port " + std::to_string(port);
  }
  ~wire_client() { close(); }
  wire_client(wire_client&& o) noexcept
      : last_error(std::move(o.last_error)), fd_(std::exchange(o.fd_, -1)) {}
  wire_client& operator=(wire_client&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
      last_error = std::move(o.last_error);
    }
    return *this;
  }
  wire_client(const wire_client&) = delete;
  wire_client& operator=(const wire_client&) = delete;

  bool connected() const noexcept { return fd_ >= 0; }
  /// A receive() waits at most `limit` (10 s after try_connect) before it
  /// gives up and closes.
  void set_receive_timeout(std::chrono::milliseconds limit) {
    if (fd_ < 0)
      return;
    timeval tv{static_cast<time_t>(limit.count() / 1000),
               static_cast<suseconds_t>((limit.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  static std::optional<std::string> bytes_of(const request& r) {
    auto f = encode_frame(encode_request(r));
    if (!f)
      return std::nullopt;
    return *f;
  }

  /// Writes all of `bytes`; false (and closed) on failure.
  bool send_raw(const std::string& bytes) {
    std::size_t done = 0;
    while (fd_ >= 0 && done < bytes.size()) {
      auto n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0)
        return fail("write failed");
      done += static_cast<std::size_t>(n);
    }
    return fd_ >= 0 || fail("not connected");
  }
  bool send(const request& r) {
    auto b = bytes_of(r);
    if (!b)
      return fail("cannot encode the request");
    return send_raw(*b);
  }

  /// One response; nullopt (and closed) when the server closed the
  /// connection, timed out or sent bytes that do not decode.
  std::optional<response> receive() {
    std::string head = read_n(4);
    if (head.size() < 4) {
      fail("connection closed before a response");
      return std::nullopt;
    }
    std::uint32_t len = (std::uint32_t(std::uint8_t(head[0])) << 24)
                        | (std::uint32_t(std::uint8_t(head[1])) << 16)
                        | (std::uint32_t(std::uint8_t(head[2])) << 8)
                        | std::uint32_t(std::uint8_t(head[3]));
    std::string rest = read_n(len);
    if (len == 0 || rest.size() < len) {
      fail("truncated response frame");
      return std::nullopt;
    }
    auto r = decode_response(static_cast<std::uint8_t>(rest[0]),
                             std::string_view(rest).substr(1));
    if (!r) {
      fail("undecodable response: " + r.err().to_string());
      return std::nullopt;
    }
    return *r;
  }
  std::optional<response> call(const request& r) {
    if (!send(r))
      return std::nullopt;
    return receive();
  }

  std::string last_error;

private:
  bool fail(std::string why) {
    last_error = std::move(why);
    close();
    return false;
  }
  std::string read_n(std::size_t n) {
    std::string out;
    char buf[4096];
    while (fd_ >= 0 && out.size() < n) {
      auto got = ::read(fd_, buf, std::min(sizeof buf, n - out.size()));
      if (got <= 0)
        break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }

  int fd_ = -1;
};

} // namespace tally::test
