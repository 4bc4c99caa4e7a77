// Process-level tests: the real tallyd binary on 127.0.0.1 with a free port
// and a temporary data dir, driven over a socket with protocol/ encoders.
// Bounded loops only: the port is polled with a bounded retry count.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "journal/journal.hpp"
#include "protocol/descriptor.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "ring/partition.hpp"
#include "tests/actors/node_process_support.hpp"

using namespace tally;
using namespace tally::test; // server, temp_dir, try_connect

namespace {

// A node's admin socket (tallyd --admin-socket).
struct unix_path {
  std::string path;
};

int unix_connect(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path)
    return -1;
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

struct conn {
  int fd = -1;
  explicit conn(std::uint16_t port) : fd(try_connect(port)) {
    BOOST_REQUIRE(fd >= 0);
  }
  explicit conn(const unix_path& u) : fd(unix_connect(u.path)) {
    BOOST_REQUIRE_MESSAGE(fd >= 0, "cannot connect to " << u.path);
  }
  ~conn() { ::close(fd); }

  void send_raw(const std::string& bytes) {
    BOOST_REQUIRE(::write(fd, bytes.data(), bytes.size())
                  == static_cast<ssize_t>(bytes.size()));
  }
  static std::string bytes_of(const request& r) {
    auto f = encode_frame(encode_request(r));
    BOOST_REQUIRE(f);
    return *f;
  }
  void send(const request& r) { send_raw(bytes_of(r)); }

  // Reads one frame; nullopt when the server closed the connection.
  std::optional<frame> read_frame() {
    std::string head = read_n(4);
    if (head.size() < 4)
      return std::nullopt;
    std::uint32_t len = (std::uint32_t(std::uint8_t(head[0])) << 24)
                        | (std::uint32_t(std::uint8_t(head[1])) << 16)
                        | (std::uint32_t(std::uint8_t(head[2])) << 8)
                        | std::uint32_t(std::uint8_t(head[3]));
    std::string rest = read_n(len);
    if (rest.size() < len || len == 0)
      return std::nullopt;
    return frame{static_cast<std::uint8_t>(rest[0]), rest.substr(1)};
  }
  response receive() {
    auto f = read_frame();
    BOOST_REQUIRE_MESSAGE(f, "server closed the connection");
    auto r = decode_response(f->code, f->body);
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : r.err().to_string()));
    return *r;
  }
  response call(const request& r) {
    send(r);
    return receive();
  }

private:
  std::string read_n(std::size_t n) {
    std::string out;
    char buf[4096];
    while (out.size() < n) {
      auto got = ::read(fd, buf, std::min(sizeof buf, n - out.size()));
      if (got <= 0)
        break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
};

// True when the server closed `fd` (end of stream within 1 s); false when
// the connection is still open (nothing to read, no end of stream).
bool closed_by_server(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 1000) <= 0)
    return false;
  char b;
  return ::recv(fd, &b, 1, MSG_DONTWAIT) == 0;
}

bound_object counter(const std::string& k) {
  return bound_object{object_key{"bucket", k}, crdt_type::counter};
}

update_op inc(const std::string& k, std::int64_t d,
              std::optional<op_id> id = std::nullopt) {
  return update_op{counter(k), counter_op{counter_update{d}, id}};
}

std::string commit_clock(const response& r) {
  auto* c = std::get_if<commit_resp>(&r);
  BOOST_REQUIRE_MESSAGE(c, "expected a CommitResp, got code "
                             << static_cast<int>(code_of(r)));
  BOOST_REQUIRE(c->success);
  return c->commit_time;
}

std::vector<std::int64_t> read_values(conn& c, std::vector<std::string> keys,
                                      std::optional<std::string> clock = {}) {
  static_read_objects_req req;
  req.transaction.timestamp = clock;
  for (auto& k : keys)
    req.objects.push_back(counter(k));
  auto r = c.call(req);
  auto* s = std::get_if<static_read_objects_resp>(&r);
  BOOST_REQUIRE_MESSAGE(s, "expected StaticReadObjectsResp");
  BOOST_REQUIRE(s->objects.success);
  std::vector<std::int64_t> out;
  for (auto& v : s->objects.values)
    out.push_back(std::get<std::int64_t>(v));
  return out;
}

std::string static_update(conn& c, std::vector<update_op> ups,
                          std::optional<std::string> clock = {}) {
  static_update_objects_req req;
  req.transaction.timestamp = clock;
  req.updates = std::move(ups);
  return commit_clock(c.call(req));
}

} // namespace

BOOST_AUTO_TEST_SUITE(tallyd_process)

BOOST_AUTO_TEST_CASE(static_update_then_read_sees_every_key_of_the_commit) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  std::vector<update_op> ups;
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) { // many keys: several partitions, 2PC
    keys.push_back("k" + std::to_string(i));
    ups.push_back(inc(keys.back(), i + 1));
  }
  auto clock = static_update(c, ups);
  auto vals = read_values(c, keys, clock);
  for (int i = 0; i < 20; ++i)
    BOOST_TEST(vals[static_cast<std::size_t>(i)] == i + 1);
  // A second commit on the same keys, read with the returned clock.
  auto clock2 = static_update(c, {inc("k0", 10), inc("k19", -20)}, clock);
  auto v2 = read_values(c, {"k0", "k19", "absent"}, clock2);
  BOOST_TEST(v2[0] == 11);
  BOOST_TEST(v2[1] == 0);
  BOOST_TEST(v2[2] == 0);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(interactive_transaction_reads_its_own_writes) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  auto start = c.call(start_transaction_req{});
  auto* st = std::get_if<start_transaction_resp>(&start);
  BOOST_REQUIRE(st && st->success);
  auto desc = st->transaction_descriptor;
  auto up = c.call(update_objects_req{{inc("a", 3), inc("b", 4)}, desc});
  BOOST_REQUIRE(std::get_if<operation_resp>(&up));
  BOOST_TEST(std::get<operation_resp>(up).success);
  auto rd = c.call(read_objects_req{{counter("a"), counter("b")}, desc});
  auto* ro = std::get_if<read_objects_resp>(&rd);
  BOOST_REQUIRE(ro && ro->success);
  BOOST_TEST(std::get<std::int64_t>(ro->values[0]) == 3);
  BOOST_TEST(std::get<std::int64_t>(ro->values[1]) == 4);
  // Not visible outside before commit.
  BOOST_TEST(read_values(c, {"a"})[0] == 0);
  auto clock = commit_clock(c.call(commit_transaction_req{desc}));
  auto v = read_values(c, {"a", "b"}, clock);
  BOOST_TEST(v[0] == 3);
  BOOST_TEST(v[1] == 4);
  // The descriptor is finished now: a clear error.
  auto again = c.call(read_objects_req{{counter("a")}, desc});
  BOOST_TEST(std::holds_alternative<error_resp>(again));
  // An aborted transaction applies nothing.
  auto start2 = c.call(start_transaction_req{clock});
  auto desc2 = std::get<start_transaction_resp>(start2).transaction_descriptor;
  c.call(update_objects_req{{inc("a", 100)}, desc2});
  auto ab = c.call(abort_transaction_req{desc2});
  BOOST_TEST(std::get<operation_resp>(ab).success);
  BOOST_TEST(read_values(c, {"a"}, clock)[0] == 3);
  // A foreign descriptor gets an ErrorResp.
  auto bad = c.call(commit_transaction_req{"not a descriptor"});
  BOOST_TEST(std::holds_alternative<error_resp>(bad));
}

BOOST_AUTO_TEST_CASE(duplicate_op_id_is_acknowledged_not_applied) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  op_id id{0xC0FFEE, 1};
  auto c1 = static_update(c, {inc("x", 10, id)});
  auto c2 = static_update(c, {inc("x", 10, id)}, c1); // the retry
  BOOST_TEST(read_values(c, {"x"}, c2)[0] == 10);
  auto c3 = static_update(c, {inc("x", 1, op_id{0xC0FFEE, 2})}, c2);
  BOOST_TEST(read_values(c, {"x"}, c3)[0] == 11);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_are_answered_in_order) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  std::string batch;
  static_update_objects_req up;
  up.updates = {inc("p", 1)};
  static_read_objects_req rd;
  rd.objects = {counter("p")};
  for (int i = 0; i < 10; ++i) {
    batch += conn::bytes_of(up);
    batch += conn::bytes_of(rd);
  }
  c.send_raw(batch);
  for (int i = 0; i < 10; ++i) {
    auto r1 = c.receive();
    BOOST_TEST(std::holds_alternative<commit_resp>(r1));
    auto r2 = c.receive();
    BOOST_TEST(std::holds_alternative<static_read_objects_resp>(r2));
  }
}

BOOST_AUTO_TEST_CASE(bad_input_gets_an_error_or_a_close_and_the_server_stays_up) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--max-frame-size", "1024"}));
  {
    conn c{s.port};
    static_update(c, {inc("safe", 5)});
  }
  { // malformed protobuf body: ErrorResp, connection usable
    conn c{s.port};
    auto f = encode_frame(static_cast<std::uint8_t>(msg_code::static_update_objects),
                          std::string("\xff\xff\xff", 3));
    c.send_raw(*f);
    BOOST_TEST(std::holds_alternative<error_resp>(c.receive()));
    BOOST_TEST(read_values(c, {"safe"})[0] == 5);
  }
  { // wrong type for a key: ErrorResp
    conn c{s.port};
    static_read_objects_req rd;
    rd.objects = {bound_object{object_key{"bucket", "safe"}, crdt_type::orset}};
    BOOST_TEST(std::holds_alternative<error_resp>(c.call(rd)));
  }
  { // unknown code: connection closed
    conn c{s.port};
    auto f = encode_frame(200, "");
    c.send_raw(*f);
    BOOST_TEST(!c.read_frame().has_value());
  }
  { // oversized frame: ErrorResp, then closed
    conn c{s.port};
    std::string head{"\x00\x10\x00\x00", 4}; // 1 MiB > 1024
    c.send_raw(head + std::string(16, 'x'));
    BOOST_TEST(std::holds_alternative<error_resp>(c.receive()));
    BOOST_TEST(!c.read_frame().has_value());
  }
  conn c{s.port};
  BOOST_TEST(read_values(c, {"safe"})[0] == 5);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Acknowledged commits survive kill -9 in every durability mode (a process
// crash loses nothing the OS has: docs/NODE.md, "Group commit and
// durability"), and retried op ids stay dismissed after the restart.
void kill_9_loses_and_doubles_nothing(const std::string& mode, int n) {
  BOOST_TEST_MESSAGE("durability " << mode);
  temp_dir d;
  std::string last_clock;
  {
    server s{d.path, mode};
    BOOST_REQUIRE(s.start());
    conn c{s.port};
    for (int i = 1; i <= n; ++i) {
      // Alternate one-step and two-phase commits.
      std::vector<update_op> ups{inc("total", 1, op_id{77, std::uint64_t(i)})};
      if (i % 2 == 0)
        ups.push_back(inc("side" + std::to_string(i % 7), 1));
      last_clock = static_update(c, ups);
    }
    s.stop(SIGKILL);
  }
  server s{d.path, mode};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  BOOST_TEST(read_values(c, {"total"}, last_clock)[0] == n);
  // Retries of acknowledged ids after the restart are still dismissed.
  auto clock = static_update(c, {inc("total", 1, op_id{77, 1}),
                                 inc("total", 1, op_id{77, std::uint64_t(n)})});
  BOOST_TEST(read_values(c, {"total"}, clock)[0] == n);
  std::int64_t sides = 0;
  for (auto v : read_values(c, {"side0", "side1", "side2", "side3", "side4",
                                "side5", "side6"}, clock))
    sides += v;
  BOOST_TEST(sides == n / 2);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(kill_9_under_full_durability_loses_and_doubles_nothing) {
  kill_9_loses_and_doubles_nothing("full", 200);
}

BOOST_AUTO_TEST_CASE(kill_9_under_batch_and_periodic_durability_loses_and_doubles_nothing) {
  kill_9_loses_and_doubles_nothing("batch", 300);
  kill_9_loses_and_doubles_nothing("periodic:200", 300);
}

BOOST_AUTO_TEST_CASE(a_half_closed_connection_still_gets_every_reply) {
  temp_dir d;
  server s{d.path, "periodic"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  std::string batch;
  static_update_objects_req up;
  up.updates = {inc("half", 1)};
  static_read_objects_req rd;
  rd.objects = {counter("other")};
  for (int i = 0; i < 5; ++i)
    batch += conn::bytes_of(up);
  batch += conn::bytes_of(rd);
  c.send_raw(batch);
  BOOST_REQUIRE(::shutdown(c.fd, SHUT_WR) == 0); // nothing more comes
  for (int i = 0; i < 5; ++i)
    BOOST_TEST(std::holds_alternative<commit_resp>(c.receive()));
  BOOST_TEST(std::holds_alternative<static_read_objects_resp>(c.receive()));
  BOOST_TEST(!c.read_frame().has_value()); // then the server closes
  conn check{s.port};
  BOOST_TEST(read_values(check, {"half"})[0] == 5);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// A sender that stalls inside a request (slowloris) and a connection that
// stays idle are closed; other clients are served meanwhile.
BOOST_AUTO_TEST_CASE(stalled_and_idle_connections_are_closed) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start({"--request-read-timeout-ms", "300", "--idle-timeout-ms", "3000"}));
  auto closed_within = [](conn& c, int seconds) {
    timeval tv{seconds, 0};
    ::setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b;
    return ::read(c.fd, &b, 1) == 0; // EOF, not the timeout
  };
  conn slow{s.port};
  slow.send_raw(std::string("\0\0", 2)); // half a length prefix, then nothing
  conn idle{s.port};
  conn busy{s.port};
  static_update(busy, {inc("alive", 1)});
  BOOST_TEST(closed_within(slow, 5)); // 0.3 s, checked once a second
  BOOST_TEST(read_values(busy, {"alive"})[0] == 1);
  BOOST_TEST(closed_within(idle, 8)); // 3 s without a request
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(an_interactive_transaction_cannot_buffer_without_bound) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start({"--max-tx-updates", "10"}));
  conn c{s.port};
  auto st = std::get<start_transaction_resp>(c.call(start_transaction_req{}));
  BOOST_REQUIRE(st.success);
  std::vector<update_op> eight(8, inc("t", 1));
  BOOST_TEST(std::get<operation_resp>(c.call(update_objects_req{eight, st.transaction_descriptor})).success);
  auto over = c.call(update_objects_req{eight, st.transaction_descriptor});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(over));
  BOOST_TEST(std::get<error_resp>(over).err.message().find("--max-tx-updates") != std::string::npos);
  // A failed update aborts the transaction (docs/PROTOCOL.md, "Errors"):
  // the first eight are not committed either.
  auto cm = c.call(commit_transaction_req{st.transaction_descriptor});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(cm));
  BOOST_TEST(std::get<error_resp>(cm).err.code() == errc::aborted);
  BOOST_TEST(read_values(c, {"t"})[0] == 0);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// SIGTERM while many connections write and read: tallyd stops the client
// server first, flushes every partition and exits 0; after a restart every
// acknowledged increment is there, and nothing was applied twice.
BOOST_AUTO_TEST_CASE(sigterm_under_load_exits_cleanly_and_keeps_every_acknowledged_write) {
  temp_dir d;
  const int clients = 8;
  // Each client thread counts its own; the main thread reads them.
  std::vector<std::atomic<std::int64_t>> acked(clients), sent(clients);
  std::atomic<bool> go{true};
  {
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    std::vector<std::thread> load;
    for (int c = 0; c < clients; ++c)
      load.emplace_back([&, c] {
        wire_client w{s.port}; // no Boost.Test calls on this thread
        for (int i = 1; i <= 100000 && go.load() && w.connected(); ++i) {
          static_update_objects_req up;
          up.updates = {inc("load" + std::to_string(c), 1,
                            op_id{std::uint64_t(900 + c), std::uint64_t(i)})};
          ++sent[std::size_t(c)];
          auto r = w.call(up);
          if (!r)
            return; // the node went away: this one's outcome is unknown
          if (auto* cr = std::get_if<commit_resp>(&*r); cr && cr->success)
            ++acked[std::size_t(c)];
        }
      });
    // Let the load run (bounded: until every client has some acks, at most
    // ~5 s), then stop the node under it.
    for (int i = 0; i < 500; ++i) {
      bool all = true;
      for (int c = 0; c < clients; ++c)
        all = all && acked[std::size_t(c)].load() > 20;
      if (all)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int status = s.stop(SIGTERM);
    go = false;
    for (auto& t : load)
      t.join();
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
  }
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  for (int k = 0; k < clients; ++k) {
    auto v = read_values(c, {"load" + std::to_string(k)})[0];
    BOOST_TEST(v >= acked[std::size_t(k)].load());
    BOOST_TEST(v <= sent[std::size_t(k)].load());
    BOOST_TEST(acked[std::size_t(k)].load() > 0);
  }
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// A client that never sends a clock (antidote_ts_client, the Go client)
// still reads its own writes, monotonically: the server keeps each
// connection's floor. Another connection's two-phase commits keep
// transactions prepared all along, which lowers the node's stable time below
// fresh commits (the case that broke read-your-writes before).
BOOST_AUTO_TEST_CASE(a_client_without_a_clock_reads_its_own_writes) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start());
  std::atomic<bool> stop{false};
  std::atomic<int> noise_failures{0};
  std::thread other([&] {
    // No Boost.Test calls on this thread: Boost.Test is not thread-safe (its
    // checkpoint strings raced with the main thread's under ThreadSanitizer,
    // docs/RELIABILITY.md "TSan"); failures are counted and checked below.
    wire_client o{s.port};
    for (int i = 0; i < 100000 && !stop.load(); ++i) {
      static_update_objects_req up;
      for (int k = 0; k < 8; ++k) // several partitions: two-phase commit
        up.updates.push_back(inc("noise" + std::to_string(k), 1));
      auto r = o.call(up);
      if (!r) {
        ++noise_failures;
        return;
      }
    }
  });
  conn c{s.port};
  std::int64_t expected = 0, last_read = 0;
  int stale = 0, backwards = 0;
  for (int i = 0; i < 1500; ++i) {
    static_update_objects_req up;
    up.updates = {inc("mine", 1)};
    commit_clock(c.call(up)); // no clock sent
    ++expected;
    auto v = read_values(c, {"mine"})[0]; // no clock sent
    stale += v < expected;
    backwards += v < last_read;
    last_read = v;
  }
  stop = true;
  other.join();
  BOOST_TEST(noise_failures.load() == 0);
  BOOST_TEST(stale == 0);
  BOOST_TEST(backwards == 0);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(bad_flag_and_port_in_use_fail_with_nonzero_exit) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  // A second tallyd on the same port (and data dir) must fail, not hang.
  temp_dir d2;
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string port = std::to_string(s.port);
    ::execl(TALLYD_PATH, TALLYD_PATH, "--data-dir", d2.path.c_str(), "--port",
            port.c_str(), "--partitions", "2", "--log-level", "error",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
  // A data dir that is a regular file: exit 1 with a clear message.
  auto file = d2.path + "-file";
  { std::ofstream f{file}; f << "x"; }
  pid = ::fork();
  if (pid == 0) {
    ::execl(TALLYD_PATH, TALLYD_PATH, "--data-dir", file.c_str(), "--port", "0",
            "--log-level", "error", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::waitpid(pid, &status, 0);
  std::filesystem::remove(file);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 1);
  pid = ::fork();
  if (pid == 0) {
    ::execl(TALLYD_PATH, TALLYD_PATH, "--partitions", "3",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) != 0);
}

BOOST_AUTO_TEST_CASE(idle_transaction_is_aborted_and_open_transactions_are_limited) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--tx-timeout-ms", "500", "--max-transactions", "2"}));
  conn c{s.port};
  auto t1 = std::get<start_transaction_resp>(c.call(start_transaction_req{}));
  auto t2 = std::get<start_transaction_resp>(c.call(start_transaction_req{}));
  BOOST_TEST(t1.success);
  BOOST_TEST(t2.success);
  // A third is refused while two are open.
  BOOST_TEST(std::holds_alternative<error_resp>(c.call(start_transaction_req{})));
  c.call(update_objects_req{{inc("idle", 1)}, t1.transaction_descriptor});
  // Poll (bounded) until both idle transactions are gone: two new ones
  // start. One start is not enough: under load t2 (idle since its start) can
  // expire well before t1 (idle since its update), and a slot frees while t1
  // is still open. (Any request to t1 itself would keep it alive.)
  std::vector<std::string> started;
  for (int i = 0; i < 500 && started.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto r = c.call(start_transaction_req{});
    if (auto* ok = std::get_if<start_transaction_resp>(&r); ok && ok->success)
      started.push_back(ok->transaction_descriptor);
  }
  BOOST_TEST(started.size() == 2u);
  BOOST_TEST(std::holds_alternative<error_resp>(
    c.call(commit_transaction_req{t1.transaction_descriptor})));
  for (auto& t : started)
    c.call(commit_transaction_req{t});
  BOOST_TEST(read_values(c, {"idle"})[0] == 0);
}

// One connection cannot fill the node's table of open transactions, and a
// connection that goes away takes its open transactions with it.
BOOST_AUTO_TEST_CASE(open_transactions_are_limited_per_connection_and_freed_at_close) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start({"--max-tx-per-connection", "2", "--max-transactions", "3"}));
  std::string orphan;
  {
    conn greedy{s.port};
    BOOST_TEST(std::get<start_transaction_resp>(greedy.call(start_transaction_req{})).success);
    auto second = std::get<start_transaction_resp>(greedy.call(start_transaction_req{}));
    BOOST_TEST(second.success);
    orphan = second.transaction_descriptor;
    auto third = greedy.call(start_transaction_req{});
    BOOST_REQUIRE(std::holds_alternative<error_resp>(third));
    BOOST_TEST(std::get<error_resp>(third).err.message().find("--max-tx-per-connection")
               != std::string::npos);
    // Another connection still gets one (3 node-wide).
    conn other{s.port};
    BOOST_TEST(std::get<start_transaction_resp>(other.call(start_transaction_req{})).success);
  } // both connections close: their transactions are aborted
  conn later{s.port};
  bool freed = false; // bounded poll: the close is seen by the node soon
  for (int i = 0; i < 250 && !freed; ++i) {
    auto r = later.call(commit_transaction_req{orphan});
    freed = std::holds_alternative<error_resp>(r);
    if (!freed)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(freed);
  for (int i = 0; i < 2; ++i)
    BOOST_TEST(std::get<start_transaction_resp>(later.call(start_transaction_req{})).success);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Transaction hijack (issue 17): a descriptor used to be <incarnation,
// seq> with a sequential seq, so adding 1 to one's own reached the next
// client's open transaction (the victim expected 10 and read 1,000,010).
// Then the sequence number was random; since stop 33 it counts up again (for
// the decisions database's B-tree, docs/PERFORMANCE.md "Steady state") and
// the descriptor carries 64 random secret bits: the victim's sequence number
// with the attacker's secret names nothing.
BOOST_AUTO_TEST_CASE(a_forged_neighbour_descriptor_cannot_reach_another_transaction) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start());
  conn attacker{s.port};
  conn victim{s.port};
  auto mine = std::get<start_transaction_resp>(attacker.call(start_transaction_req{}));
  auto theirs = std::get<start_transaction_resp>(victim.call(start_transaction_req{}));
  BOOST_REQUIRE(mine.success && theirs.success);
  BOOST_TEST(std::get<operation_resp>(
               victim.call(update_objects_req{{inc("purse", 10)}, theirs.transaction_descriptor}))
               .success);
  auto forged = decode_tx_descriptor(mine.transaction_descriptor);
  auto victims = decode_tx_descriptor(theirs.transaction_descriptor);
  BOOST_REQUIRE(forged);
  BOOST_REQUIRE(victims);
  BOOST_TEST(victims->tx.seq == forged->tx.seq + 1); // the forgery below names it
  for (std::int64_t step : {-2, -1, 1, 2}) {
    auto f = *forged;
    f.tx.seq += static_cast<std::uint64_t>(step);
    auto r = attacker.call(update_objects_req{{inc("purse", 1000000)}, encode_tx_descriptor(f)});
    BOOST_TEST(std::holds_alternative<error_resp>(r), "step " << step);
  }
  auto c = std::get<commit_resp>(victim.call(commit_transaction_req{theirs.transaction_descriptor}));
  BOOST_REQUIRE(c.success);
  BOOST_TEST(read_values(victim, {"purse"}, c.commit_time)[0] == 10);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Op-id squatting (issue 17): a client that sends another client's op id
// first, with a zero increment, cannot make that client's later +50 be
// acknowledged and dropped: the op id is bound to its operation, so the
// later one is refused loudly.
BOOST_AUTO_TEST_CASE(a_squatted_op_id_is_refused_loudly_not_dropped) {
  temp_dir d;
  server s{d.path, "none"};
  BOOST_REQUIRE(s.start());
  conn squatter{s.port};
  conn victim{s.port};
  auto clock = static_update(squatter, {inc("wallet", 0, op_id{31337, 1})});
  static_update_objects_req mine;
  mine.transaction.timestamp = clock;
  mine.updates = {inc("wallet", 50, op_id{31337, 1})};
  auto r = victim.call(mine);
  auto* e = std::get_if<error_resp>(&r);
  BOOST_REQUIRE_MESSAGE(e, "the victim must learn that its update was not applied");
  BOOST_TEST(e->err.message().find("conflicting reuse of op id") != std::string::npos);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(connections_above_the_limit_are_closed_at_accept) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--max-connections", "1", "--evict-idle-after-ms", "0"}));
  // start() probed with a connection that is closed now; poll (bounded)
  // until the node has seen it go, i.e. a connection is served.
  std::unique_ptr<conn> first;
  for (int i = 0; i < 100 && !first; ++i) {
    auto c = std::make_unique<conn>(s.port);
    static_read_objects_req rd;
    rd.objects = {counter("c")};
    c->send(rd);
    if (c->read_frame())
      first = std::move(c);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_REQUIRE(first);
  conn second{s.port};
  static_read_objects_req rd;
  rd.objects = {counter("c")};
  second.send(rd);
  BOOST_TEST(!second.read_frame().has_value());
  BOOST_TEST(read_values(*first, {"c"})[0] == 0); // the first still works
}

// Issue 17, defect 7: connections that sit idle at the connection limit
// no longer shut others out until the idle timeout (300 s). A new
// connection takes the place of one idle for --evict-idle-after-ms; a
// connection holding an open transaction is never the one closed, nor is a
// connection idle for less than that.
BOOST_AUTO_TEST_CASE(at_the_connection_limit_an_idle_connection_makes_room) {
  temp_dir d;
  server s{d.path, "batch"};
  // One I/O thread: every connection is on the shard that makes room.
  BOOST_REQUIRE(s.start({"--max-connections", "3", "--evict-idle-after-ms", "300",
                         "--io-threads", "1"}));
  auto served = [&](conn& c) {
    static_read_objects_req rd;
    rd.objects = {counter("c")};
    c.send(rd);
    return c.read_frame().has_value();
  };
  // The holder: an open interactive transaction with an update in it.
  std::unique_ptr<conn> holder;
  for (int i = 0; i < 100 && !holder; ++i) { // until start()'s probe is gone
    auto c = std::make_unique<conn>(s.port);
    if (served(*c))
      holder = std::move(c);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_REQUIRE(holder);
  auto st = std::get<start_transaction_resp>(holder->call(start_transaction_req{}));
  BOOST_REQUIRE(st.success);
  auto up = holder->call(update_objects_req{{inc("held", 7)}, st.transaction_descriptor});
  BOOST_REQUIRE(std::get<operation_resp>(up).success);
  // Two squatters that connect and never send a byte fill the limit.
  conn idle1{s.port};
  conn idle2{s.port};
  // A newcomer is refused while the squatters are young, then admitted in
  // a squatter's place once one has been idle 300 ms (bounded poll).
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<conn> newcomer;
  int refused = 0;
  for (int i = 0; i < 200 && !newcomer; ++i) {
    auto c = std::make_unique<conn>(s.port);
    if (served(*c))
      newcomer = std::move(c);
    else {
      ++refused;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  BOOST_REQUIRE(newcomer);
  auto waited = std::chrono::steady_clock::now() - t0;
  BOOST_TEST_MESSAGE("newcomer admitted after " << refused << " refusals");
  BOOST_TEST(refused > 0); // not before the squatters were idle 300 ms
  BOOST_TEST((waited >= std::chrono::milliseconds(250)));
  // The squatter idle longest (the first) was closed, the other not yet.
  BOOST_TEST(closed_by_server(idle1.fd));
  BOOST_TEST(!closed_by_server(idle2.fd));
  // The holder kept its connection and its transaction.
  auto commit = holder->call(commit_transaction_req{st.transaction_descriptor});
  auto clock = commit_clock(commit);
  BOOST_TEST(read_values(*newcomer, {"held"}, clock)[0] == 7);
  // The other squatter goes next, for a second newcomer.
  std::unique_ptr<conn> second;
  for (int i = 0; i < 200 && !second; ++i) {
    auto c = std::make_unique<conn>(s.port);
    if (served(*c))
      second = std::move(c);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_REQUIRE(second);
  BOOST_TEST(closed_by_server(idle2.fd));
  BOOST_TEST(served(*holder));
}

// Issue 18: any client of the client port could make a node leave the
// cluster (admin code 240). Admin requests are refused there now, with the
// way to the admin socket in the message; on the admin socket (mode 0600,
// so file permissions decide who may administer) they work.
BOOST_AUTO_TEST_CASE(admin_requests_only_on_the_admin_socket) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  const auto sock = d.path + "/admin.sock";
  conn client_port{s.port};
  for (const auto& cmd : {"leave", "status"}) {
    auto r = client_port.call(admin_req{cmd, {}});
    auto* a = std::get_if<admin_resp>(&r);
    BOOST_REQUIRE(a);
    BOOST_TEST(!a->success, cmd);
    BOOST_TEST(a->text.find("accepted only on the node's admin socket " + sock)
                 != std::string::npos,
               a->text);
  }
  struct stat st {};
  BOOST_REQUIRE(::lstat(sock.c_str(), &st) == 0);
  BOOST_TEST(S_ISSOCK(st.st_mode));
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  conn admin{unix_path{sock}};
  auto r = admin.call(admin_req{"status", {}});
  auto* a = std::get_if<admin_resp>(&r);
  BOOST_REQUIRE(a);
  BOOST_TEST(a->success, a->text);
  BOOST_TEST(a->text.find("1 member(s)") != std::string::npos, a->text);
  // The socket serves ordinary requests too, and the node still runs.
  BOOST_TEST(read_values(admin, {"x"})[0] == 0);
  BOOST_TEST(s.stop(SIGTERM) == 0);
  BOOST_TEST(!std::filesystem::exists(sock)); // removed at a clean stop
}

BOOST_AUTO_TEST_CASE(config_file_is_read_and_a_bad_key_in_it_exits_2) {
  temp_dir d;
  std::filesystem::create_directories(d.path);
  auto good = d.path + "/good.conf";
  {
    std::ofstream f{good};
    f << "# tallyd settings\ndurability = none\nmax-transactions=1\n";
  }
  server s{d.path + "/data", "batch"};
  // The flag --durability batch overrides the file; the limit comes from it.
  BOOST_REQUIRE(s.start({"--config", good}));
  conn c{s.port};
  BOOST_TEST(std::get<start_transaction_resp>(c.call(start_transaction_req{})).success);
  BOOST_TEST(std::holds_alternative<error_resp>(c.call(start_transaction_req{})));
  auto bad = d.path + "/bad.conf";
  {
    std::ofstream f{bad};
    f << "no-such-setting=1\n";
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(TALLYD_PATH, TALLYD_PATH, "--config", bad.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 2);
}

BOOST_AUTO_TEST_CASE(sigterm_flushes_and_restart_recovers_batch_commits) {
  temp_dir d;
  std::string clock;
  {
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    conn c{s.port};
    for (int i = 0; i < 50; ++i)
      clock = static_update(c, {inc("t", 2), inc("u" + std::to_string(i % 5), 1)});
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start());
  conn c{s.port};
  auto v = read_values(c, {"t", "u0", "u4"}, clock);
  BOOST_TEST(v[0] == 100);
  BOOST_TEST(v[1] == 10);
  BOOST_TEST(v[2] == 10);
  // A descriptor from before the restart is refused clearly.
  auto st = std::get<start_transaction_resp>(c.call(start_transaction_req{clock}));
  BOOST_TEST(st.success);
}

// Checkpoints in the real node (docs/NODE.md, "Checkpoints"): with a short
// interval, retention and FBF, a write load leaves only the last few
// seconds of commits in the journals and `opids`; a restart still has
// every acknowledged increment, and retries of recent ids are dismissed.
BOOST_AUTO_TEST_CASE(checkpoints_keep_journals_bounded_and_restart_keeps_every_increment) {
  temp_dir d;
  // FBF t = 100 ms, N = 2, R = 300 ms, adaptive within t <= 200 ms, N <= 6:
  // op ids are kept (6+2) * 300 ms + 1 s = 3.4 s after their commit.
  const std::vector<std::string> flags{
    "--checkpoint-interval-ms", "100", "--snapshot-retention-ms", "200",
    "--fbf-refresh-ms", "100", "--fbf-past-filters", "2",
    "--fbf-retry-timeout-ms", "300"};
  const std::uint64_t n1 = 1000; // phase 1: long before the stop
  std::map<std::string, std::int64_t> sums;
  std::uint64_t n2 = 0;          // phase 2: the last 5 s
  std::string clock;
  auto q_key = [](std::uint64_t n) { return "q" + std::to_string(n % 4); };
  {
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start(flags));
    conn c{s.port};
    for (std::uint64_t i = 1; i <= n1; ++i) {
      const std::string k = "p" + std::to_string(i % 16);
      clock = static_update(c, {inc(k, 1, op_id{88, i})});
      ++sums[k];
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) { // bounded: ~5 s at 20 ms a step
      if (std::chrono::steady_clock::now() - start >= std::chrono::seconds{5})
        break;
      const std::string k = q_key(++n2);
      clock = static_update(c, {inc(k, 2, op_id{89, n2})});
      sums[k] += 2;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    // A retry of a recent update (same key, same id) is dismissed.
    clock = static_update(c, {inc(q_key(n2), 2, op_id{89, n2})}, clock);
    const auto t0 = std::chrono::steady_clock::now();
    BOOST_TEST(s.stop(SIGTERM) == 0);
    // The partition tick (<= 1 s) does not hold the shutdown up.
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < std::chrono::seconds{3}));
  }
  std::uint64_t written = 0, kept = 0, op_entries = 0, checkpoints = 0;
  for (std::uint32_t p = 0; p < 8; ++p) {
    journal_options jo;
    jo.path = d.path + "/partitions/" + std::to_string(p);
    jo.partition_id = p;
    jo.mode = durability::none;
    jo.collect_effects = false;
    auto j = journal::open(jo);
    BOOST_REQUIRE_MESSAGE(j, (j ? "" : j.err().to_string()));
    written += j->log->next_lsn() - 1;
    kept += j->log->next_lsn() - j->log->truncation_lsn();
    checkpoints += j->log->checkpoint().sequence;
    auto st = j->log->stats();
    BOOST_REQUIRE(st);
    op_entries += st->opids.entries;
    for (std::uint64_t i = 1; i <= n1; i += 97) { // phase 1's ids are gone
      auto found = j->log->find_committed_op(op_id{88, i});
      BOOST_REQUIRE(found);
      BOOST_TEST(!found->has_value());
    }
  }
  BOOST_TEST_MESSAGE("records written " << written << ", still in the logs "
                     << kept << ", opids entries " << op_entries << ", "
                     << checkpoints << " checkpoints; phase 2: " << n2
                     << " transactions");
  BOOST_TEST(written >= 2 * (n1 + n2));
  BOOST_TEST(checkpoints > 8u);
  BOOST_TEST(kept <= 2 * n2 + 16); // nothing of phase 1 (2 records a commit)
  BOOST_TEST(op_entries <= n2);
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start(flags));
  conn c{s.port};
  for (auto& [k, v] : sums)
    BOOST_TEST(read_values(c, {k}, clock)[0] == v, "key " << k);
  // Recent ids are still dismissed after the restart.
  auto after = static_update(c, {inc(q_key(n2), 2, op_id{89, n2}),
                                 inc(q_key(n2 - 1), 2, op_id{89, n2 - 1})},
                             clock);
  BOOST_TEST(read_values(c, {"q0", "q1", "q2", "q3"}, after)
             == std::vector<std::int64_t>({sums["q0"], sums["q1"], sums["q2"],
                                           sums["q3"]}));
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(fbf_window_below_the_retry_timeout_is_refused_with_exit_2) {
  for (std::vector<const char*> bad :
       {std::vector<const char*>{"--fbf-refresh-ms", "1000", "--fbf-past-filters", "1"},
        std::vector<const char*>{"--fbf-target-fpp", "1.5"},
        std::vector<const char*>{"--snapshot-retention-ms", "0"}}) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::vector<char*> argv{const_cast<char*>(TALLYD_PATH),
                              const_cast<char*>("--port"), const_cast<char*>("0")};
      for (auto* a : bad)
        argv.push_back(const_cast<char*>(a));
      argv.push_back(nullptr);
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::dup2(null, 1);
      ::execv(TALLYD_PATH, argv.data());
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 2, bad[0]);
  }
}

// Issue 17, defect 1: an over-long key used to stop its partition (the
// journal refused the batch and the failure was treated as fatal), after
// which writes there failed and reads froze. Now it is refused at the door
// with an error naming the limit, and every partition keeps serving.
BOOST_AUTO_TEST_CASE(over_long_key_is_refused_and_every_partition_keeps_serving) {
  temp_dir d;
  server s{d.path, "batch"};
  const std::uint32_t q = 4;
  BOOST_REQUIRE(s.start({"--partitions", std::to_string(q)}));
  conn c{s.port};
  static_update_objects_req bad;
  bad.updates = {update_op{bound_object{object_key{"fb", std::string(600, 'k')},
                                        crdt_type::counter},
                           counter_op{counter_update{1}, std::nullopt}}};
  auto r = c.call(bad);
  auto* e = std::get_if<error_resp>(&r);
  BOOST_REQUIRE_MESSAGE(e, "expected an ErrorResp for a 602-byte object");
  BOOST_TEST(e->err.code() == errc::invalid_argument);
  BOOST_TEST(e->err.message().find("max_object_key_bytes") != std::string::npos);
  BOOST_TEST(e->err.message().find("509") != std::string::npos);
  // Interactive: refused in UpdateObjects too, the transaction still usable.
  auto start = c.call(start_transaction_req{});
  auto desc = std::get<start_transaction_resp>(start).transaction_descriptor;
  auto up = c.call(update_objects_req{bad.updates, desc});
  BOOST_TEST(std::holds_alternative<error_resp>(up));
  BOOST_TEST(std::get<operation_resp>(c.call(abort_transaction_req{desc})).success);
  // One key per partition: each is written twice and reads back exactly.
  std::vector<std::string> keys(q);
  std::vector<bool> found(q, false);
  for (int i = 0, left = static_cast<int>(q); left > 0 && i < 10000; ++i) {
    auto k = "k" + std::to_string(i);
    auto p = partition_for("bucket", k, q);
    BOOST_REQUIRE(p);
    if (!found[*p]) {
      found[*p] = true;
      keys[*p] = k;
      --left;
    }
  }
  std::string clock;
  for (int round = 1; round <= 2; ++round) {
    std::vector<update_op> ups;
    for (std::uint32_t p = 0; p < q; ++p) {
      BOOST_REQUIRE(found[p]);
      ups.push_back(inc(keys[p], static_cast<std::int64_t>(p) + 1));
    }
    clock = static_update(c, ups);
  }
  auto vals = read_values(c, keys, clock);
  for (std::uint32_t p = 0; p < q; ++p)
    BOOST_TEST(vals[p] == 2 * (static_cast<std::int64_t>(p) + 1));
  // A read without a clock sees them too once the node's stable time passes
  // the commit (bounded: the stable time is the physical clock).
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    seen = read_values(c, keys) == vals;
    if (!seen)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_TEST(seen);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

namespace {
// One key on partition `p` of a ring of `q`.
std::string key_on(std::uint32_t p, std::uint32_t q, const std::string& prefix) {
  for (int i = 0; i < 100000; ++i) {
    auto k = prefix + std::to_string(i);
    auto at = partition_for("bucket", k, q);
    if (at && *at == p)
      return k;
  }
  BOOST_FAIL("no key found on partition " << p);
  return {};
}

// The entry-wise max of two clocks, as bytes.
std::optional<std::string> join_clock_bytes(const std::string& x, const std::string& y) {
  auto cx = decode_clock(x);
  auto cy = decode_clock(y);
  if (!cx || !cy)
    return std::nullopt;
  cx->merge(*cy);
  return encode_clock(*cx);
}

bool succeeded(const response& r) {
  auto* c = std::get_if<commit_resp>(&r);
  return c && c->success;
}
} // namespace

// Issue 17, defect 2: the retry T2 (a +1 under id X) of an update whose
// original transaction T1 is still undecided is applied exactly once,
// whatever T1's outcome and the order in which the two meet at a's
// partition. T1 and T2 are sent at once, on c1 and c2, `rounds` times per
// outcome:
// - T1 aborts: a +1 under X, plus b +7 under an id already used for b +1,
//   so that T1's prepare at b's partition is refused after a's partition
//   prepared. Before the fix a retry meeting T1 prepared was acknowledged
//   as a duplicate and dropped although T1 aborted.
// - T1 commits (a +1 under Y alone): the retry is a duplicate.
// Returns the clock of the last commit. The deterministic interleavings are
// in partition_core_test.cpp.
std::string retries_meet_their_undecided_originals(conn& c1, conn& c2, const std::string& a,
                                                   const std::string& b, std::uint64_t rounds,
                                                   std::string clock) {
  auto before = read_values(c1, {a, b}, clock);
  for (std::uint64_t i = 1; i <= rounds; ++i) {
    const op_id x{71, i}, y{73, i}, z{72, i};
    clock = static_update(c1, {inc(b, 1, z)}, clock);
    auto start = c1.call(start_transaction_req{clock});
    auto desc = std::get<start_transaction_resp>(start).transaction_descriptor;
    auto up = c1.call(update_objects_req{{inc(a, 1, x), inc(b, 7, z)}, desc});
    BOOST_REQUIRE(std::get<operation_resp>(up).success);
    static_update_objects_req retry;
    retry.transaction.timestamp = clock;
    retry.updates = {inc(a, 1, x)};
    c1.send(commit_transaction_req{desc});
    c2.send(retry);
    auto t1 = c1.receive();
    auto t2 = c2.receive();
    BOOST_TEST(!succeeded(t1), "round " << i << ": T1 must abort");
    BOOST_REQUIRE_MESSAGE(succeeded(t2), "round " << i << ": the retry commits");
    clock = std::get<commit_resp>(t2).commit_time;
    // T1 commits this time.
    start = c1.call(start_transaction_req{clock});
    desc = std::get<start_transaction_resp>(start).transaction_descriptor;
    up = c1.call(update_objects_req{{inc(a, 1, y)}, desc});
    BOOST_REQUIRE(std::get<operation_resp>(up).success);
    retry.updates = {inc(a, 1, y)};
    c1.send(commit_transaction_req{desc});
    c2.send(retry);
    t1 = c1.receive();
    t2 = c2.receive();
    BOOST_REQUIRE_MESSAGE(succeeded(t1), "round " << i << ": T1 commits");
    BOOST_REQUIRE_MESSAGE(succeeded(t2), "round " << i << ": the retry is acknowledged");
    clock = *join_clock_bytes(std::get<commit_resp>(t1).commit_time,
                              std::get<commit_resp>(t2).commit_time);
  }
  auto v = read_values(c1, {a, b}, clock);
  BOOST_TEST(v[0] - before[0] == static_cast<std::int64_t>(2 * rounds)); // X, Y once each
  BOOST_TEST(v[1] - before[1] == static_cast<std::int64_t>(rounds));     // no +7
  return clock;
}

// Issue 17, defect 2, through the client port of one node. A retry must
// carry the same operation: another delta under a used op id is refused.
// Retries meeting their undecided originals are exactly once (above).
BOOST_AUTO_TEST_CASE(op_id_retries_are_exactly_once_and_must_carry_the_same_operation) {
  temp_dir d;
  server s{d.path, "batch"};
  const std::uint32_t q = 4;
  BOOST_REQUIRE(s.start({"--partitions", std::to_string(q)}));
  conn c1{s.port};
  conn c2{s.port};
  const std::string a = key_on(0, q, "a");
  const std::string b = key_on(1, q, "b");
  // Conflicting reuse: refused with a clear error, nothing applied.
  auto clock = static_update(c1, {inc(a, 1, op_id{70, 1})});
  static_update_objects_req reuse;
  reuse.updates = {inc(a, 2, op_id{70, 1})};
  auto refused = c1.call(reuse);
  auto* e = std::get_if<error_resp>(&refused);
  BOOST_REQUIRE_MESSAGE(e, "a reused op id with another delta must be refused");
  BOOST_TEST(e->err.message().find("conflicting reuse of op id") != std::string::npos);
  // The same operation is a duplicate: acknowledged, not applied.
  clock = static_update(c1, {inc(a, 1, op_id{70, 1})}, clock);
  BOOST_TEST(read_values(c1, {a}, clock)[0] == 1);
  retries_meet_their_undecided_originals(c1, c2, a, b, 30, clock);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Issue 17, defect 2, through another node: the original T1 is coordinated
// by node 0 and the retry T2 arrives at node 1, which sends it to the
// partition on whichever node serves it (the status printed shows which:
// usually a's partition on node 0 and b's on node 1 once the join's first
// handoffs are done). The same guarantees hold, and a conflicting reuse
// through node 1 of an id used through node 0 is refused.
BOOST_AUTO_TEST_CASE(op_id_retries_through_another_node_are_exactly_once) {
  temp_dir d;
  const std::uint32_t q = 4;
  server n0{d.path + "/n0", "batch"};
  BOOST_REQUIRE(n0.start({"--partitions", std::to_string(q)}));
  server n1{d.path + "/n1", "batch"};
  BOOST_REQUIRE(n1.start({"--partitions", std::to_string(q), "--join",
                          "127.0.0.1:" + std::to_string(n0.cluster_port),
                          "--cluster-secret-file", n0.dir + "/cluster/secret"}));
  const std::string a = key_on(0, q, "a");
  const std::string b = key_on(1, q, "b");
  conn c1{n0.port};
  conn c2{n1.port};
  // Bounded wait until node 1 routes every partition (its join is done).
  bool serving = false;
  for (int i = 0; i < 200 && !serving; ++i) {
    static_read_objects_req rd;
    for (std::uint32_t p = 0; p < q; ++p)
      rd.objects.push_back(counter(key_on(p, q, "probe")));
    auto r = c2.call(rd);
    auto* ok = std::get_if<static_read_objects_resp>(&r);
    serving = ok && ok->objects.success;
    if (!serving)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_REQUIRE_MESSAGE(serving, "node 1 does not serve every partition");
  conn admin{unix_path{n0.dir + "/admin.sock"}};
  auto st = admin.call(admin_req{"status", {}});
  BOOST_TEST_MESSAGE(std::get<admin_resp>(st).text);
  auto clock = static_update(c1, {inc(a, 1, op_id{70, 1})});
  static_update_objects_req reuse;
  reuse.transaction.timestamp = clock;
  reuse.updates = {inc(a, 2, op_id{70, 1})};
  auto refused = c2.call(reuse);
  auto* e = std::get_if<error_resp>(&refused);
  BOOST_REQUIRE_MESSAGE(e, "a reused op id with another delta must be refused");
  BOOST_TEST(e->err.message().find("conflicting reuse of op id") != std::string::npos);
  retries_meet_their_undecided_originals(c1, c2, a, b, 20, clock);
  BOOST_TEST(n1.stop(SIGTERM) == 0);
  BOOST_TEST(n0.stop(SIGTERM) == 0);
}

// Issue 17, defect 4, through the client port: INT64_MAX + INT64_MAX used
// to be acknowledged twice and leave the key unreadable for good.
BOOST_AUTO_TEST_CASE(counter_overflow_is_refused_and_the_key_stays_readable) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--partitions", "4"}));
  conn c{s.port};
  auto clock = static_update(c, {inc("big", INT64_MAX)});
  static_update_objects_req again;
  again.updates = {inc("big", INT64_MAX)};
  auto r = c.call(again);
  auto* e = std::get_if<error_resp>(&r);
  BOOST_REQUIRE_MESSAGE(e, "an overflowing update must be refused");
  BOOST_TEST(e->err.code() == errc::overflow);
  BOOST_TEST(e->err.message().find("64-bit range") != std::string::npos);
  BOOST_TEST(read_values(c, {"big"}, clock)[0] == INT64_MAX);
  clock = static_update(c, {inc("big", -1)}, clock);
  BOOST_TEST(read_values(c, {"big"}, clock)[0] == INT64_MAX - 1);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Issue 17, defect 3, through the client port: a client clock far ahead of
// the node's used to push every later commit into the future (acknowledged
// increments invisible, then "snapshot too old"); near 2^64 commit times
// wrapped. Refused at the door now, and the node's clock is untouched.
BOOST_AUTO_TEST_CASE(clocks_from_the_future_are_refused_at_the_door) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--partitions", "4", "--max-clock-skew-ms", "2000"}));
  conn c{s.port};
  const std::uint64_t now = static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch())
      .count());
  auto expect_refused = [&](const request& req, const char* what) {
    auto r = c.call(req);
    auto* e = std::get_if<error_resp>(&r);
    BOOST_REQUIRE_MESSAGE(e, what << ": expected an ErrorResp");
    BOOST_TEST(e->err.code() == errc::invalid_argument, what);
    return e->err.message();
  };
  const auto hour_ahead = encode_clock(vector_clock{{1, now + 3'600'000'000ull}});
  const auto near_wrap = encode_clock(vector_clock{{1, UINT64_MAX - 1}});
  static_update_objects_req up;
  up.transaction.timestamp = hour_ahead;
  up.updates = {inc("f", 1)};
  BOOST_TEST(expect_refused(up, "static update").find("max_clock_skew")
             != std::string::npos);
  up.transaction.timestamp = near_wrap;
  BOOST_TEST(expect_refused(up, "near 2^64").find("2^63-1") != std::string::npos);
  static_read_objects_req rd;
  rd.transaction.timestamp = hour_ahead;
  rd.objects = {counter("f")};
  expect_refused(rd, "static read"); // was held forever
  expect_refused(start_transaction_req{hour_ahead}, "start");
  // Nothing moved the node's clock: a fresh increment is visible at once to
  // a read without a clock (bounded poll: the stable time is the physical
  // clock), and the returned commit time is near now.
  auto clock = static_update(c, {inc("f", 1)});
  auto t = decode_clock(clock);
  BOOST_REQUIRE(t);
  BOOST_TEST(t->get(1) < now + 60'000'000ull);
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    seen = read_values(c, {"f"})[0] == 1;
    if (!seen)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_TEST(seen);
  // A clock within the skew is accepted.
  up.transaction.timestamp = encode_clock(vector_clock{{1, now + 500'000}});
  BOOST_TEST(succeeded(c.call(up)));
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

// Issue 17, defect 1 (second path): a full LMDB map used to stop the
// partition like a disk failure. Now the writes of that batch fail with a
// clear "storage full" error, reads go on, and smaller writes proceed.
BOOST_AUTO_TEST_CASE(full_map_fails_that_write_only_and_the_node_keeps_serving) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--partitions", "2", "--map-size", "1048576"}));
  conn c{s.port};
  auto clock = static_update(c, {inc("small", 1)});
  // ~2.5 MB of update records: more than a 1 MiB map holds.
  static_update_objects_req big;
  big.transaction.timestamp = clock;
  for (int i = 0; i < 5000; ++i)
    big.updates.push_back(inc(std::to_string(i) + std::string(480, 'k'), 1));
  auto r = c.call(big);
  auto* e = std::get_if<error_resp>(&r);
  BOOST_REQUIRE_MESSAGE(e, "a write larger than the map must fail");
  BOOST_TEST(e->err.code() == errc::storage_full, e->err.to_string());
  BOOST_TEST(e->err.message().find("map") != std::string::npos);
  // Reads keep working, and later writes succeed and read back.
  BOOST_TEST(read_values(c, {"small"}, clock)[0] == 1);
  clock = static_update(c, {inc("small", 2), inc("other", 5)}, clock);
  auto v = read_values(c, {"small", "other", "0" + std::string(480, 'k')}, clock);
  BOOST_TEST(v[0] == 3);
  BOOST_TEST(v[1] == 5);
  BOOST_TEST(v[2] == 0); // nothing of the failed write was applied
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
