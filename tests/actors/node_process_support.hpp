// Helpers for process-level tests: the real tallyd binary on 127.0.0.1 with a
// free port and a temporary data dir (tests/actors/node_process_test.cpp,
// tests/actors/tcc_properties_test.cpp).
//
// server, temp_dir, free_port() and try_connect() are used from the test
// thread. wire_client makes no Boost.Test call (Boost.Test is not
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
#include "protocol/messages.hpp"

#ifndef TALLYD_PATH
#error "TALLYD_PATH must name the tallyd binary (actors/CMakeLists.txt)"
#endif

namespace tally::test {

inline std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// A connected socket (TCP_NODELAY, 10 s receive timeout), or -1.
inline int try_connect(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{10, 0}; // a test never hangs on a silent server
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// One tallyd process.
struct server {
  std::string dir;
  std::uint16_t port = 0;
  pid_t pid = -1;
  std::string mode;

  server(std::string data_dir, std::string durability)
      : dir(std::move(data_dir)), mode(std::move(durability)) {}
  ~server() {
    if (pid > 0)
      stop(SIGKILL);
  }
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Starts tallyd; returns false if it does not accept connections after
  // 500 attempts 10 ms apart.
  bool start(std::vector<std::string> extra = {}) {
    port = free_port();
    pid = ::fork();
    if (pid == 0) {
      std::vector<std::string> args{TALLYD_PATH, "--data-dir", dir, "--port",
                                    std::to_string(port), "--partitions", "8",
                                    "--durability", mode, "--log-level", "warn"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(TALLYD_PATH, argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      int fd = try_connect(port);
      if (fd >= 0) {
        ::close(fd);
        return true;
      }
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Sends `sig` and returns the exit status.
  int stop(int sig = SIGTERM) {
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return status;
  }
};

struct temp_dir {
  std::string path;
  temp_dir() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path()
            / ("tallyd-test-" + std::to_string(rd())))
             .string();
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

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
