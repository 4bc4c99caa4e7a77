// apps/tally.cpp, the 'cluster' commands, run as a process: usage errors,
// 'cluster status', 'cluster leave' and 'cluster remove' against the scripted fake node
// (fake_server.hpp), and 'cluster local' with a fake tallyd (a shell script
// placed next to a copy of the tally binary) that records its arguments.
// tests/cluster/ runs 'cluster local' with the real tallyd.
#include <boost/test/unit_test.hpp>

#ifdef TALLY_CLI_PATH

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "protocol/messages.hpp"
#include "tests/client/fake_server.hpp"
#include "tests/support/child_process.hpp"
#ifdef TALLYD_PATH
#include "tests/support/tallyd_process.hpp"
#endif

using namespace tally;
using namespace tally::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct cli_dir { // a temp dir as a path (test::temp_dir holds a string)
  fs::path path;
  cli_dir() {
    std::random_device rd;
    path = fs::temp_directory_path()
           / ("tally-cli-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~cli_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct cli_result {
  int code = -1;
  std::string out, err;
};

cli_result run_cli(const std::vector<std::string>& args,
                   const std::vector<std::string>& env = {},
                   const std::string& binary = TALLY_CLI_PATH) {
  cli_dir dir;
  child_process p{binary, args, dir.path, env};
  BOOST_REQUIRE(p.started());
  cli_result r;
  r.code = p.wait();
  r.out = slurp(p.out);
  r.err = slurp(p.err);
  return r;
}

// Runs `tally --port PORT args...`, checks that it exits 0, returns stdout.
std::string succeeds_at(const std::string& port, std::vector<std::string> args) {
  args.insert(args.begin(), {"--port", port});
  auto r = run_cli(args);
  BOOST_TEST(r.code == 0, r.err);
  return r.out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A stand-in for tallyd: records "<pid> <args>" in <data-dir>/args, logs
// the ready line, stops on SIGTERM. FAKE_TALLYD_MODE changes that for the
// node on port FAKE_TALLYD_PORT: "exit" exits 3 before ready, "silent"
// never gets ready, "die" exits 4 shortly after ready.
constexpr const char* fake_tallyd = R"(#!/bin/sh
all="$*"; dir=""; port=""
while [ $# -gt 0 ]; do
  case "$1" in --data-dir) dir="$2"; shift;; --port) port="$2"; shift;; esac
  shift
done
echo "$$ $all" > "$dir/args"
echo "fake tallyd on $port"
trap 'echo "fake tallyd stopping" >&2; exit 0' TERM
if [ "$port" = "$FAKE_TALLYD_PORT" ]; then
  case "$FAKE_TALLYD_MODE" in
    exit) echo "fake failure" >&2; exit 3;;
    silent) while :; do sleep 0.05; done;;
  esac
fi
echo "tallyd ready on port $port" >&2
if [ "$port" = "$FAKE_TALLYD_PORT" ] && [ "$FAKE_TALLYD_MODE" = die ]; then
  sleep 0.3; exit 4
fi
while :; do sleep 0.05; done
)";

/// A directory with a copy of tally (so /proc/self/exe points there) and,
/// if asked, the fake tallyd next to it.
struct cli_install {
  cli_dir dir;
  std::string tally;
  explicit cli_install(bool with_tallyd) {
    tally = (dir.path / "tally").string();
    fs::copy_file(TALLY_CLI_PATH, tally);
    if (with_tallyd) {
      auto script = dir.path / "tallyd";
      std::ofstream{script} << fake_tallyd;
      fs::permissions(script, fs::perms::owner_all);
    }
  }
};

/// "<pid> <args>" the fake node i recorded.
std::string recorded_args(const fs::path& data, int i) {
  return slurp(data / ("node" + std::to_string(i)) / "args");
}

bool process_gone(const std::string& recorded) {
  auto pid = static_cast<pid_t>(std::stol(recorded));
  return ::kill(pid, 0) != 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cli_cluster)

BOOST_AUTO_TEST_CASE(cluster_help_texts) {
  for (auto args : std::vector<std::vector<std::string>>{
         {"cluster", "--help"},
         {"cluster", "help"},
         {"cluster", "status", "--help"},
         {"cluster", "leave", "-h"},
         {"cluster", "remove", "--help"},
         {"cluster", "local", "--help"},
         {"cluster", "local", "--nodes", "0", "--help"}}) {
    auto r = run_cli(args);
    BOOST_TEST(r.code == 0);
    BOOST_TEST(contains(r.out, "usage: tally"));
  }
  auto local = run_cli({"cluster", "local", "--help"});
  for (auto part : {"--nodes N", "--data-dir DIR", "--base-port P",
                    "--partitions Q", "--durability MODE", "P+1000+i",
                    "--join 127.0.0.1:<P+1000>", "[node<i>] ", "SIGTERM",
                    "--cluster-secret-file DIR/node0/cluster/secret",
                    "--insecure-cluster-links",
                    "next to this tally binary"})
    BOOST_TEST(contains(local.out, part), part);
  BOOST_TEST(contains(run_cli({"--help"}).out, "cluster local --nodes N"));
  BOOST_TEST(contains(run_cli({"--help"}).out, "cluster remove NODE-ID [--force]"));
  auto remove = run_cli({"cluster", "remove", "--help"});
  for (auto part : {"NODE-ID [--force]", "re-created empty", "use 'cluster",
                    "names those partitions"})
    BOOST_TEST(contains(remove.out, part), part);
}

BOOST_AUTO_TEST_CASE(cluster_usage_errors_exit_2_with_a_clear_message) {
  struct bad {
    std::vector<std::string> args;
    std::string message;
  };
  for (const auto& b : std::vector<bad>{
         {{"cluster"}, "cluster needs a subcommand"},
         {{"cluster", "join"}, "unknown subcommand 'join'"},
         {{"cluster", "status", "x"}, "takes no arguments"},
         {{"cluster", "leave", "a", "b"}, "at most one NODE-ID"},
         {{"cluster", "leave", "--force"}, "unknown option '--force'"},
         {{"cluster", "leave", std::string(2000, 'n')}, "1024"},
         {{"cluster", "remove"}, "exactly one NODE-ID"},
         {{"cluster", "remove", "--force"}, "exactly one NODE-ID"},
         {{"cluster", "remove", "a", "b"}, "exactly one NODE-ID"},
         {{"cluster", "remove", "a", "--forse"}, "unknown option '--forse'"},
         {{"cluster", "remove", std::string(2000, 'n')}, "1024"},
         {{"cluster", "local"}, "needs --nodes N"},
         {{"cluster", "local", "--nodes", "0"}, "--nodes '0' is not a node count"},
         {{"cluster", "local", "--nodes", "65"}, "(1-64)"},
         {{"cluster", "local", "--nodes=x"}, "--nodes 'x'"},
         {{"cluster", "local", "--nodes"}, "--nodes needs a value"},
         {{"cluster", "local", "--nodes", "3", "--base-port", "64534"},
          "leaves no room"},
         {{"cluster", "local", "--nodes", "1", "--durability", "fast"},
          "full, batch or none"},
         {{"cluster", "local", "--nodes", "1", "--partitions", "3"},
          "not a power of two"},
         {{"cluster", "local", "--nodes", "1", "--bogus"},
          "unknown option '--bogus'"}}) {
    auto r = run_cli(b.args);
    BOOST_TEST(r.code == 2, b.message);
    BOOST_TEST(contains(r.err, "tally: "));
    BOOST_TEST(contains(r.err, b.message), r.err);
    BOOST_TEST(contains(r.err, "usage: tally"));
  }
}

BOOST_AUTO_TEST_CASE(cluster_local_without_tallyd_exits_2) {
  cli_install install{false};
  auto r = run_cli({"cluster", "local", "--nodes", "2", "--data-dir",
                    (install.dir.path / "data").string()},
                   {"PATH=" + (install.dir.path / "empty").string()},
                   install.tally);
  BOOST_TEST(r.code == 2);
  BOOST_TEST(contains(r.err, "cannot find tallyd"), r.err);
  BOOST_TEST(contains(r.err, install.dir.path.string()));
  BOOST_TEST(!fs::exists(install.dir.path / "data"));
}

BOOST_AUTO_TEST_CASE(cluster_local_starts_nodes_in_order_and_stops_them) {
  cli_install install{true};
  auto data = install.dir.path / "data";
  cli_dir out;
  child_process p{install.tally,
                {"cluster", "local", "--nodes", "3", "--base-port", "31000",
                 "--data-dir", data.string(), "--partitions", "16",
                 "--durability", "none"},
                out.path};
  BOOST_REQUIRE(p.started());
  BOOST_REQUIRE_MESSAGE(p.wait_for_stdout("stop:"), slurp(p.err));
  auto summary = slurp(p.out);
  for (auto part : {"3 nodes", "client port 31000", "client port 31001",
                    "client port 31002", "tally@127.0.0.1:32002",
                    "--port 31000 cluster status"})
    BOOST_TEST(contains(summary, part), part);
  auto flags = [&](int i) {
    auto a = recorded_args(data, i);
    return a.substr(a.find(' ') + 1);
  };
  auto dir = [&](int i) { return (data / ("node" + std::to_string(i))).string(); };
  BOOST_TEST(flags(0) == "--data-dir " + dir(0) + " --port 31000 --cluster-port"
                           " 32000 --partitions 16 --durability none\n");
  BOOST_TEST(flags(1) == "--data-dir " + dir(1) + " --port 31001 --cluster-port"
                           " 32001 --join 127.0.0.1:32000 --cluster-secret-file "
                           + dir(0) + "/cluster/secret --partitions 16 --durability none\n");
  BOOST_TEST(flags(2) == "--data-dir " + dir(2) + " --port 31002 --cluster-port"
                           " 32002 --join 127.0.0.1:32000 --cluster-secret-file "
                           + dir(0) + "/cluster/secret --partitions 16 --durability none\n");
  auto err = slurp(p.err);
  BOOST_TEST(contains(err, "[node0] fake tallyd on 31000"));
  BOOST_TEST(contains(err, "[node2] tallyd ready on port 31002"));
  // Each node started only after the previous one was ready.
  BOOST_TEST(err.find("[node0] tallyd ready") < err.find("starting node1"));
  BOOST_TEST(err.find("[node1] tallyd ready") < err.find("starting node2"));

  ::kill(p.pid, SIGTERM);
  BOOST_TEST(p.wait() == 0);
  err = slurp(p.err);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(contains(err, "[node" + std::to_string(i)
                               + "] fake tallyd stopping"));
    BOOST_TEST(process_gone(recorded_args(data, i)));
  }
  BOOST_TEST(contains(err, "the cluster is stopped"));
}

BOOST_AUTO_TEST_CASE(cluster_local_node_failing_at_start_stops_the_others) {
  cli_install install{true};
  auto data = install.dir.path / "data";
  auto r = run_cli({"cluster", "local", "--nodes", "3", "--base-port", "31100",
                    "--data-dir", data.string()},
                   {"FAKE_TALLYD_MODE=exit", "FAKE_TALLYD_PORT=31101"},
                   install.tally);
  BOOST_TEST(r.code == 1);
  BOOST_TEST(contains(r.err, "[node1] fake failure"));
  BOOST_TEST(contains(r.err, "node1 (pid"));
  BOOST_TEST(contains(r.err, "exited with code 3 before it was ready"), r.err);
  BOOST_TEST(contains(r.err, "[node0] fake tallyd stopping"));
  BOOST_TEST(!contains(r.err, "starting node2"));
  BOOST_TEST(process_gone(recorded_args(data, 0)));
  BOOST_TEST(r.out.empty());
}

BOOST_AUTO_TEST_CASE(cluster_local_node_never_ready_times_out) {
  cli_install install{true};
  auto data = install.dir.path / "data";
  auto r = run_cli({"cluster", "local", "--nodes", "2", "--base-port", "31200",
                    "--data-dir", data.string(), "--ready-timeout", "1"},
                   {"FAKE_TALLYD_MODE=silent", "FAKE_TALLYD_PORT=31200"},
                   install.tally);
  BOOST_TEST(r.code == 1);
  BOOST_TEST(contains(r.err, "node0"));
  BOOST_TEST(contains(r.err, "within 1 s"), r.err);
  BOOST_TEST(contains(r.err, "[node0] fake tallyd stopping"));
  BOOST_TEST(process_gone(recorded_args(data, 0)));
  BOOST_TEST(!fs::exists(data / "node1" / "args"));
}

BOOST_AUTO_TEST_CASE(cluster_local_reports_a_node_that_dies_and_keeps_the_rest) {
  cli_install install{true};
  auto data = install.dir.path / "data";
  cli_dir out;
  child_process p{install.tally,
                {"cluster", "local", "--nodes", "3", "--base-port", "31300",
                 "--data-dir", data.string()},
                out.path,
                {"FAKE_TALLYD_MODE=die", "FAKE_TALLYD_PORT=31301"}};
  BOOST_REQUIRE(p.started());
  BOOST_REQUIRE_MESSAGE(p.wait_for_stdout("stop:"), slurp(p.err));
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!contains(slurp(p.err), "exited with code 4")
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  auto err = slurp(p.err);
  BOOST_TEST(contains(err, "node1 (pid"));
  BOOST_TEST(contains(err, "exited with code 4; 2 nodes keep running"), err);
  BOOST_TEST(!process_gone(recorded_args(data, 0)));
  BOOST_TEST(!process_gone(recorded_args(data, 2)));
  ::kill(p.pid, SIGINT);
  BOOST_TEST(p.wait() == 0);
  BOOST_TEST(process_gone(recorded_args(data, 0)));
  BOOST_TEST(process_gone(recorded_args(data, 2)));
}

BOOST_AUTO_TEST_CASE(cluster_status_and_leave_print_the_nodes_text) {
  test::fake_server node{3, [](std::size_t conn, test::fake_peer& peer) {
    if (!peer.read_frame())
      return;
    if (conn == 0)
      peer.reply(admin_resp{true, "member tally@127.0.0.1:9087 owns 64", 0});
    else if (conn == 1)
      peer.reply(admin_resp{true, "tally@127.0.0.1:9088 is leaving\n", 0});
    else
      peer.reply(admin_resp::failure(errc::not_found,
                                     "tally@x:1 is not a member"));
  }};
  auto port = std::to_string(node.port());
  auto status = run_cli({"--port", port, "cluster", "status"});
  BOOST_TEST(status.code == 0);
  BOOST_TEST(status.out == "member tally@127.0.0.1:9087 owns 64\n");
  auto leave = run_cli({"--port", port, "cluster", "leave",
                        "tally@127.0.0.1:9088"});
  BOOST_TEST(leave.code == 0);
  BOOST_TEST(leave.out == "tally@127.0.0.1:9088 is leaving\n");
  auto refused = run_cli({"--port", port, "cluster", "leave", "tally@x:1"});
  BOOST_TEST(refused.code == 1);
  BOOST_TEST(refused.err == "tally: tally@x:1 is not a member\n");
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 3u);
  auto decoded = [&](std::size_t i) {
    auto r = decode_request(f[i].code, f[i].body);
    BOOST_REQUIRE(r.has_value());
    return *r;
  };
  BOOST_TEST((decoded(0) == request{admin_req{"status", {}}}));
  BOOST_TEST((decoded(1) == request{admin_req{"leave", {"tally@127.0.0.1:9088"}}}));
  BOOST_TEST((decoded(2) == request{admin_req{"leave", {"tally@x:1"}}}));
}

// `cluster remove NODE --force` (or `--force NODE`) sends {NODE, "--force"};
// a refusal is printed with exit code 1.
BOOST_AUTO_TEST_CASE(cluster_remove_sends_the_node_and_force_and_prints_the_answer) {
  test::fake_server node{3, [](std::size_t conn, test::fake_peer& peer) {
    if (!peer.read_frame())
      return;
    if (conn == 0)
      peer.reply(admin_resp::failure(errc::invalid_argument,
                                     "cannot remove tally@x:1: it holds the only copy of "
                                     "partition(s) 0,3"));
    else
      peer.reply(admin_resp{true, "tally@x:1 is removed", 0});
  }};
  auto port = std::to_string(node.port());
  auto refused = run_cli({"--port", port, "cluster", "remove", "tally@x:1"});
  BOOST_TEST(refused.code == 1);
  BOOST_TEST(contains(refused.err, "only copy of partition(s) 0,3"), refused.err);
  auto forced = run_cli({"--port", port, "cluster", "remove", "tally@x:1", "--force"});
  BOOST_TEST(forced.code == 0);
  BOOST_TEST(forced.out == "tally@x:1 is removed\n");
  auto first = run_cli({"--port", port, "cluster", "remove", "--force", "tally@x:1"});
  BOOST_TEST(first.code == 0);
  node.join();
  const auto& f = node.frames();
  BOOST_REQUIRE_EQUAL(f.size(), 3u);
  auto decoded = [&](std::size_t i) {
    auto r = decode_request(f[i].code, f[i].body);
    BOOST_REQUIRE(r.has_value());
    return *r;
  };
  BOOST_TEST((decoded(0) == request{admin_req{"remove", {"tally@x:1"}}}));
  BOOST_TEST((decoded(1) == request{admin_req{"remove", {"tally@x:1", "--force"}}}));
  BOOST_TEST((decoded(2) == request{admin_req{"remove", {"tally@x:1", "--force"}}}));
}

BOOST_AUTO_TEST_CASE(cluster_leave_without_node_id_sends_no_argument) {
  test::fake_server node{1, [](std::size_t, test::fake_peer& peer) {
    if (peer.read_frame())
      peer.reply(admin_resp{true, "", 0});
  }};
  auto r = run_cli({"--port", std::to_string(node.port()), "cluster", "leave"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(r.out == "the node accepted 'leave'\n");
  node.join();
  BOOST_REQUIRE_EQUAL(node.frames().size(), 1u);
  auto req = decode_request(node.frames()[0].code, node.frames()[0].body);
  BOOST_REQUIRE(req.has_value());
  BOOST_TEST((*req == request{admin_req{"leave", {}}}));
}

BOOST_AUTO_TEST_CASE(cluster_status_of_a_node_that_is_down_exits_3) {
  test::local_socket closed{false}; // bound, not listening: refuses
  auto r = run_cli({"--port", std::to_string(closed.port()), "cluster",
                    "status"});
  BOOST_TEST(r.code == 3);
  BOOST_TEST(contains(r.err, "connection refused"), r.err);
  BOOST_TEST(contains(r.err, "is tallyd running?"));
}

// Issue 17, defect 8: "snapshot too old" is errc::unavailable, like a node
// that cannot be reached, but the node answered it: tally read (and inc)
// exit 1, not 3.
BOOST_AUTO_TEST_CASE(read_exits_1_when_the_node_answers_an_error) {
  test::fake_server node{2, [](std::size_t conn, test::fake_peer& peer) {
    if (!peer.read_frame())
      return;
    if (conn == 0)
      peer.reply(error_resp{make_error(
        errc::unavailable, "snapshot too old: start a new transaction")});
    else
      peer.reply(error_resp{make_error(errc::invalid_argument,
                                       "request refused: too long")});
  }};
  auto port = std::to_string(node.port());
  auto r = run_cli({"--port", port, "read", "b", "k"});
  BOOST_TEST(r.code == 1, r.err);
  BOOST_TEST(contains(r.err, "snapshot too old"), r.err);
  auto i = run_cli({"--port", port, "inc", "b", "k", "1"});
  BOOST_TEST(i.code == 1, i.err);
  BOOST_TEST(contains(i.err, "too long"), i.err);
  node.join();
}

BOOST_AUTO_TEST_CASE(read_of_a_node_that_is_down_still_exits_3) {
  test::local_socket closed{false};
  auto r = run_cli({"--port", std::to_string(closed.port()), "read", "b", "k"});
  BOOST_TEST(r.code == 3, r.err);
}

#ifdef TALLYD_PATH
// set, reg and flag against a real tallyd: updates, reads, usage errors and
// a wrong type (exit 1, the node's message).
BOOST_AUTO_TEST_CASE(set_reg_and_flag_commands_against_a_real_node) {
  test::temp_dir dir;
  test::server node{dir.path + "/data", "none"};
  BOOST_REQUIRE(node.start());
  auto port = std::to_string(node.port);
  auto ok = [&](std::vector<std::string> args) { return succeeds_at(port, std::move(args)); };
  ok({"set", "add", "shop", "tags", "red", "green", "blue"});
  ok({"set", "remove", "shop", "tags", "blue"});
  BOOST_TEST(contains(ok({"set", "read", "shop", "tags"}), "shop/tags = {green, red}"));
  ok({"set", "add", "shop", "rw", "x", "--type", "rwset"});
  BOOST_TEST(contains(ok({"set", "read", "shop", "rw", "--type", "rwset"}), "= {x}"));
  ok({"set", "reset", "shop", "rw", "--type", "rwset"});
  BOOST_TEST(contains(ok({"set", "read", "shop", "rw", "--type", "rwset"}), "= {}"));
  ok({"reg", "set", "shop", "motto", "best prices"});
  BOOST_TEST(contains(ok({"reg", "read", "shop", "motto"}), "shop/motto = \"best prices\""));
  ok({"reg", "set", "shop", "mv", "a", "--type", "mvreg"});
  BOOST_TEST(contains(ok({"reg", "read", "shop", "mv", "--type", "mvreg"}), "= [a]"));
  BOOST_TEST(contains(ok({"flag", "read", "shop", "open"}), "shop/open = false"));
  ok({"flag", "enable", "shop", "open"});
  BOOST_TEST(contains(ok({"flag", "read", "shop", "open"}), "shop/open = true"));
  ok({"flag", "disable", "shop", "open"});
  BOOST_TEST(contains(ok({"flag", "read", "shop", "open"}), "shop/open = false"));

  auto wrong = run_cli({"--port", port, "inc", "shop", "tags"});
  BOOST_TEST(wrong.code == 1, wrong.err);
  BOOST_TEST(contains(wrong.err, "orset"), wrong.err);
  auto as_rw = run_cli({"--port", port, "set", "add", "shop", "tags", "x", "--type", "rwset"});
  BOOST_TEST(as_rw.code == 1, as_rw.err);
  BOOST_TEST(contains(ok({"set", "read", "shop", "tags"}), "= {green, red}"));

  for (auto args : std::vector<std::vector<std::string>>{
         {"set", "add", "shop", "tags"},              // no elements
         {"set", "read", "shop", "tags", "x"},        // read takes none
         {"reg", "set", "shop", "m", "a", "b"},       // one value
         {"flag", "toggle", "shop", "open"},          // unknown verb
         {"set", "add", "b", "k", "x", "--type", "lwwreg"}}) {
    args.insert(args.begin(), {"--port", port});
    auto r = run_cli(args);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(contains(r.err, "usage:"), r.err);
  }
}

// txn against a real tallyd: reads see the transaction's own increments; the
// increments after the last read leave with the commit (commit_with), and a
// failed one among them aborts the whole transaction: nothing is stored.
BOOST_AUTO_TEST_CASE(txn_command_against_a_real_node) {
  test::temp_dir dir;
  test::server node{dir.path + "/data", "none"};
  BOOST_REQUIRE(node.start());
  auto port = std::to_string(node.port);
  auto ok = [&](std::vector<std::string> args) { return succeeds_at(port, std::move(args)); };
  auto out = ok({"txn", "inc", "shop", "a", "1", "read", "shop", "a", "inc", "shop", "b", "2",
                 "inc", "shop", "c", "3"});
  BOOST_TEST(contains(out, "shop/a += 1"), out);
  BOOST_TEST(contains(out, "shop/a = 1"), out);
  BOOST_TEST(contains(out, "shop/b += 2"), out);
  BOOST_TEST(contains(out, "shop/c += 3"), out);
  BOOST_TEST(contains(out, "committed at"), out);
  auto after = ok({"read", "shop", "a", "shop", "b", "shop", "c"});
  BOOST_TEST(contains(after, "shop/a = 1"), after);
  BOOST_TEST(contains(after, "shop/b = 2"), after);
  BOOST_TEST(contains(after, "shop/c = 3"), after);

  ok({"set", "add", "shop", "tags", "red"});
  auto bad = run_cli({"--port", port, "txn", "inc", "shop", "b", "5", "inc", "shop", "tags", "1"});
  BOOST_TEST(bad.code == 1, bad.err);
  BOOST_TEST(contains(bad.err, "orset"), bad.err);
  BOOST_TEST(contains(ok({"read", "shop", "b"}), "shop/b = 2")); // the +5 was not stored
}

// bcounter against a real tallyd: increments and decrements read back; a
// decrement beyond the rights is the node's refusal (exit 1) and changes
// nothing; usage errors exit 2 before the network.
BOOST_AUTO_TEST_CASE(bcounter_commands_against_a_real_node) {
  test::temp_dir dir;
  test::server node{dir.path + "/data", "none"};
  BOOST_REQUIRE(node.start());
  auto port = std::to_string(node.port);
  auto ok = [&](std::vector<std::string> args) { return succeeds_at(port, std::move(args)); };
  BOOST_TEST(contains(ok({"bcounter", "inc", "shop", "stock", "10"}), "shop/stock += 10"));
  BOOST_TEST(contains(ok({"bcounter", "dec", "shop", "stock", "3"}), "shop/stock -= 3"));
  ok({"bcounter", "dec", "shop", "stock"});
  BOOST_TEST(contains(ok({"bcounter", "read", "shop", "stock"}), "shop/stock = 6"));

  auto over = run_cli({"--port", port, "bcounter", "dec", "shop", "stock", "7"});
  BOOST_TEST(over.code == 1, over.err);
  BOOST_TEST(contains(ok({"bcounter", "read", "shop", "stock"}), "shop/stock = 6"));

  for (auto args : std::vector<std::vector<std::string>>{
         {"bcounter", "inc", "shop", "stock", "0"},       // not positive
         {"bcounter", "dec", "shop", "stock", "x"},       // not a number
         {"bcounter", "inc", "shop", "stock", "1", "2"},  // one amount
         {"bcounter", "read", "shop", "stock", "1"},      // read takes none
         {"bcounter", "add", "shop", "stock"},            // unknown verb
         {"bcounter", "inc", "shop", "stock", "--type", "counter"}}) {
    args.insert(args.begin(), {"--port", port});
    auto r = run_cli(args);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(contains(r.err, "usage:"), r.err);
  }
  BOOST_TEST(contains(ok({"bcounter", "read", "shop", "stock"}), "shop/stock = 6"));
}

// map against a real tallyd: entries of every CLI type updated in one
// command, read back one per line, removed (rrmap), reset; a gmap refuses
// removes at the door; usage errors (exit 2) change nothing stored; a wrong
// map type is the node's error (exit 1).
BOOST_AUTO_TEST_CASE(map_commands_against_a_real_node) {
  test::temp_dir dir;
  test::server node{dir.path + "/data", "none"};
  BOOST_REQUIRE(node.start());
  auto port = std::to_string(node.port);
  auto ok = [&](std::vector<std::string> args) { return succeeds_at(port, std::move(args)); };
  auto up = ok({"map", "update", "shop", "cart", "counter:apples", "inc", "3", "set:tags", "add",
                "red", "green", "reg:note", "set", "gift wrap", "flag:paid", "enable"});
  BOOST_TEST(contains(up, "shop/cart: counter:apples inc 3, set:tags add red green, "
                          "reg:note set gift wrap, flag:paid enable  (committed at"),
             up);
  ok({"map", "update", "shop", "cart", "counter:apples", "dec", "1", "counter:pears", "inc"});
  auto read = ok({"map", "read", "shop", "cart"});
  BOOST_TEST(contains(read, "shop/cart (rrmap):\n" // sorted by name, then type
                            "  counter:apples = 2\n"
                            "  lwwreg:note = \"gift wrap\"\n"
                            "  flag_ew:paid = true\n"
                            "  counter:pears = 1\n"
                            "  orset:tags = {green, red}\n"),
             read);
  ok({"map", "remove", "shop", "cart", "set:tags", "flag_ew:paid"});
  read = ok({"map", "read", "shop", "cart"});
  BOOST_TEST(!contains(read, "tags"), read);
  BOOST_TEST(!contains(read, "paid"), read);
  BOOST_TEST(contains(read, "  counter:apples = 2\n"), read); // counters have no reset
  ok({"map", "update", "shop", "g", "counter:n", "inc", "5", "--type", "gmap"});
  BOOST_TEST(contains(ok({"map", "read", "shop", "g", "--type", "gmap"}),
                      "shop/g (gmap):\n  counter:n = 5\n"));
  ok({"map", "update", "shop", "r", "rwset:s", "add", "x"});
  ok({"map", "reset", "shop", "r"});
  BOOST_TEST(contains(ok({"map", "read", "shop", "r"}), "shop/r (rrmap): empty\n"));

  auto wrong = run_cli({"--port", port, "map", "read", "shop", "cart", "--type", "gmap"});
  BOOST_TEST(wrong.code == 1, wrong.err);
  BOOST_TEST(contains(wrong.err, "rrmap"), wrong.err);
  for (auto args : std::vector<std::vector<std::string>>{
         {"map", "update", "shop", "cart"},                           // no entry
         {"map", "update", "shop", "cart", "counter:apples"},         // no op
         {"map", "update", "shop", "cart", "apples", "inc"},          // no TYPE:
         {"map", "update", "shop", "cart", "bcounter:b", "inc"},      // not from the CLI
         {"map", "update", "shop", "cart", "counter:apples", "add", "x"},
         {"map", "update", "shop", "cart", "counter:apples", "inc", "1", "2"},
         {"map", "update", "shop", "cart", "counter:apples", "inc", "lots"},
         {"map", "update", "shop", "cart", "set:tags", "add"},        // no elements
         {"map", "update", "shop", "cart", "reg:note", "set", "a", "b"},
         {"map", "update", "shop", "cart", "flag:paid", "enable", "x"},
         {"map", "remove", "shop", "cart"},                           // no entry
         {"map", "remove", "shop", "g", "counter:n", "--type", "gmap"},
         {"map", "reset", "shop", "g", "--type", "gmap"},
         {"map", "read", "shop", "cart", "counter:apples"},
         {"map", "get", "shop", "cart"},
         {"map", "read", "shop", "cart", "--type", "orset"}}) {
    args.insert(args.begin(), {"--port", port});
    auto r = run_cli(args);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(contains(r.err, "usage: tally [options] map"), r.err);
  }
  BOOST_TEST(contains(ok({"map", "read", "shop", "cart"}), "  counter:apples = 2\n"));
  auto help = run_cli({"--help"});
  BOOST_TEST(contains(help.out, "map update <bucket> <key> <entry> <op>"), help.out);
  BOOST_TEST(contains(ok({"map", "--help"}), "counter:NAME, fatcounter:NAME"));
}
#endif

BOOST_AUTO_TEST_SUITE_END()

#endif // TALLY_CLI_PATH
