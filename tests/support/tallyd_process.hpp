// The real tallyd binary as a child process on 127.0.0.1, for the suites
// that test against it (tests/actors, tests/client, tests/load): a free port,
// a temporary data dir, a bounded wait until it accepts connections, and a
// stop that reports the exit status. Include only from a suite whose target
// gets TALLYD_PATH (tests/CMakeLists.txt).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/latency_bounds.hpp"

#ifndef TALLYD_PATH
#error "TALLYD_PATH must name the tallyd binary (tests/CMakeLists.txt)"
#endif

namespace tally::test {

// True when nothing listens on or is bound to 127.0.0.1:`port` right now.
inline bool port_is_free(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

/// A port to listen on, chosen at random *below* the kernel's ephemeral
/// range (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default).
/// A port the kernel hands out for `bind(0)` comes from that range, and so
/// may be taken, between the test's choice and tallyd's listen, as the
/// source port of any outgoing connection on the machine (load clients,
/// node links): CI saw "Address already in use" that way. Below the range
/// only another listener can collide, which the bind check and the retry in
/// server::start cover.
inline std::uint16_t free_port() {
  static std::mt19937 pick{std::random_device{}()};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto port = static_cast<std::uint16_t>(
      std::uniform_int_distribution<int>{20000, 32000}(pick));
    if (port_is_free(port))
      return port;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM, 0); // all taken: let the kernel pick
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

/// A connected socket (TCP_NODELAY, 10 s receive timeout; 30 s in TSan
/// builds, latency_bounds.hpp), or -1.
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
  // A test never hangs on a silent server.
  timeval tv{static_cast<time_t>(10 * latency_bound_scale), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// One tallyd process.
struct server {
  std::string dir;
  std::uint16_t port = 0;
  std::uint16_t cluster_port = 0; // chosen at the first start, kept after
  pid_t pid = -1;
  std::string mode;
  std::string log_path; // when set, the node's stdout and stderr are appended there
  int exit_status = -1; // waitpid status of the last start whose process exited at once

  server(std::string data_dir, std::string durability)
      : dir(std::move(data_dir)), mode(std::move(durability)) {}
  ~server() {
    if (pid > 0)
      stop(SIGKILL);
  }
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Starts tallyd; returns false if it does not accept connections after
  // 500 attempts 10 ms apart. A fresh node (no data dir yet) that exits at
  // once is started again on other ports, up to 3 times: a port can still
  // be taken by another listener between free_port() and tallyd's listen.
  bool start(std::vector<std::string> extra = {}) {
    bool fresh = !std::filesystem::exists(dir);
    bool chosen = cluster_port != 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (start_once(extra))
        return true;
      if (!fresh || chosen || pid > 0)
        return false; // a known node keeps its ports; a hung one is not retried
      std::filesystem::remove_all(dir);
      cluster_port = 0;
    }
    return false;
  }

  bool start_once(const std::vector<std::string>& extra) {
    exit_status = -1;
    // Never the node's own cluster port: free while the node is stopped, it
    // is taken by the node itself before its client port (a restart failed
    // with "cannot listen on ...: Address already in use" that way).
    do
      port = free_port();
    while (port == cluster_port);
    // A data dir keeps its node id, and so its cluster port, across
    // restarts: a fresh one gets a free port, a used one its own.
    bool known = std::filesystem::exists(dir + "/cluster/node");
    while (cluster_port == 0 && !known) {
      cluster_port = free_port();
      if (cluster_port == port)
        cluster_port = 0;
    }
    pid = ::fork();
    if (pid == 0) {
      if (!log_path.empty()) {
        int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
          ::dup2(fd, 1);
          ::dup2(fd, 2);
          ::close(fd);
        }
      }
      std::vector<std::string> args{TALLYD_PATH, "--data-dir", dir, "--port",
                                    std::to_string(port), "--partitions", "8",
                                    "--durability", mode, "--log-level", "warn"};
      if (!known) {
        args.push_back("--cluster-port");
        args.push_back(std::to_string(cluster_port));
      }
      args.insert(args.end(), extra.begin(), extra.end());
      // TALLY_TEST_NODE_LOGS=DIR: each node's log (its stderr) is appended
      // to DIR/<name of its data dir>.log instead of the test's stderr, and
      // TALLY_TEST_LOG_LEVEL (default: as above) sets its --log-level; for
      // reading what the nodes did in a failed run.
      if (const char* logs = std::getenv("TALLY_TEST_NODE_LOGS"); logs && *logs) {
        auto file = std::string{logs} + "/" + std::filesystem::path{dir}.filename().string()
                    + ".log";
        int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
          ::dup2(fd, STDERR_FILENO);
          ::close(fd);
        }
      }
      if (const char* level = std::getenv("TALLY_TEST_LOG_LEVEL"); level && *level) {
        args.push_back("--log-level");
        args.push_back(level);
      }
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
        exit_status = status;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Sends `sig` and returns the exit status.
  int stop(int sig = SIGTERM) {
    ::kill(pid, SIGCONT); // a test may have paused it (SIGSTOP)
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

} // namespace tally::test
