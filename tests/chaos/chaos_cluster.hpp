// A local cluster of real tallyd processes on 127.0.0.1 whose node links all
// run through the link proxy (link_proxy.hpp), and the faults the chaos
// nemesis injects into it: kill -9 and restart, SIGSTOP and SIGCONT, and
// cutting a node off from the others (docs/RELIABILITY.md, "Cluster runs").
//
// Node i listens for node links on its own cluster port R_i and advertises
// the proxy's front port F_i (`--advertise 127.0.0.1:F_i --cluster-port
// R_i`, at every start), so its id is tally@127.0.0.1:F_i and every peer
// connects to it through the proxy; nodes 1.. join through F_0. Clients
// reach the nodes directly on their client ports (the cut is between the
// nodes: a cut-off node still takes clients, as it would in a real network
// partition that leaves its clients on its side).
//
// Used from the test thread only (Boost.Test calls); the workers read the
// client ports through `ports`.
#pragma once

#include <signal.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/chaos/link_proxy.hpp"
#include "tests/chaos/workload.hpp"
#include "tests/cluster/cluster_support.hpp"

namespace tally::chaos {

/// The node a process is, by the --data-dir on its command line (-1: none
/// of `dirs`). Reads /proc/<pid>/cmdline.
inline int node_by_data_dir(pid_t pid, const std::vector<std::string>& dirs) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary};
  std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    auto end = all.find('\0', at);
    if (end == std::string::npos)
      end = all.size();
    args.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--data-dir")
      for (std::size_t n = 0; n < dirs.size(); ++n)
        if (dirs[n] == args[i + 1])
          return static_cast<int>(n);
  return -1;
}

class chaos_cluster {
public:
  /// `tls`: node links authenticated by a cluster secret (the default of
  /// tallyd); else --insecure-cluster-links. `extra`: flags for every node.
  /// Each node logs at `log_level` to its own file (keep_logs copies them
  /// out of the temporary root).
  chaos_cluster(std::size_t n, bool tls, std::vector<std::string> extra,
                std::string log_level = "info")
      : ports(n), tls_(tls), extra_(std::move(extra)), log_level_(std::move(log_level)) {
    std::filesystem::create_directories(root_.path + "/logs");
    secret_file_ = root_.path + "/cluster.secret";
    test::write_secret_file(secret_file_);
    for (std::size_t i = 0; i < n; ++i)
      dirs_.push_back(root_.path + "/node" + std::to_string(i));
    proxy_ = std::make_unique<link_proxy>(
      [dirs = dirs_](pid_t pid) { return node_by_data_dir(pid, dirs); });
  }
  ~chaos_cluster() {
    proxy_.reset(); // first: no more links
    for (auto& s : nodes_)
      if (s && s->pid > 0)
        s->stop(SIGKILL);
  }
  chaos_cluster(const chaos_cluster&) = delete;
  chaos_cluster& operator=(const chaos_cluster&) = delete;

  std::size_t size() const { return dirs_.size(); }
  link_proxy& proxy() { return *proxy_; }
  const std::string& dir_of(std::size_t i) const { return dirs_[i]; }
  pid_t pid_of(std::size_t i) const { return nodes_[i]->pid; }

  /// Starts every node: node 0 founds, the others join through node 0's
  /// front port. False (and `why`) when one does not serve.
  bool start(std::string& why) {
    for (std::size_t i = 0; i < size(); ++i) {
      auto s = std::make_unique<test::server>(dirs_[i], "batch");
      s->log_path = log_of(i);
      do
        s->cluster_port = test::free_port();
      while (taken(s->cluster_port));
      auto front = proxy_->add_node(static_cast<int>(i), s->cluster_port);
      if (front == 0) {
        why = "the proxy cannot listen for node " + std::to_string(i);
        return false;
      }
      fronts_.push_back(front);
      nodes_.push_back(std::move(s));
      // Up to 6 attempts on the same ports, 1 to 5 s apart: a node that
      // exits at once leaves its status and log here (seen: a joiner
      // exiting without a word while the machine was busy, and, under a
      // parallel ctest, three joins in 5 s whose connection to the member
      // timed out; docs/RELIABILITY.md, finding 6).
      for (int attempt = 0;; ++attempt) {
        if (start_node(i, true))
          break;
        auto& n = *nodes_[i];
        why += "node " + std::to_string(i) + " did not start (" + exit_text(n.exit_status)
               + "); its log ends:\n" + log_tail(i) + "\n";
        if (attempt == 5)
          return false;
        if (n.pid > 0)
          n.stop(SIGKILL);
        std::filesystem::remove_all(dirs_[i]);
        // Its cluster port taken between free_port() and its listen (CI saw
        // a node of another suite running beside this one keep it for the
        // six attempts): a new one behind the same front port.
        if (log_tail(i).find("cannot listen on cluster port") != std::string::npos) {
          do
            n.cluster_port = test::free_port();
          while (taken(n.cluster_port));
          proxy_->retarget(static_cast<int>(i), n.cluster_port);
        }
        std::this_thread::sleep_for(std::chrono::seconds(1 + attempt));
      }
    }
    return true;
  }

  /// Restarts node i on its data dir (after a kill): it finds its cluster
  /// from its ring. Up to 3 attempts (a client port may be taken between
  /// free_port() and tallyd's listen).
  bool restart(std::size_t i) {
    for (int attempt = 0; attempt < 3; ++attempt)
      if (start_node(i, false))
        return true;
    return false;
  }

  void kill9(std::size_t i) { nodes_[i]->stop(SIGKILL); }
  bool alive(std::size_t i) const { return nodes_[i]->pid > 0; }
  void pause(std::size_t i) { ::kill(nodes_[i]->pid, SIGSTOP); }
  void resume(std::size_t i) { ::kill(nodes_[i]->pid, SIGCONT); }

  /// True once every node's `cluster status` shows every member up and
  /// serving what it owns, no handoff under way and a primary for every
  /// partition (the settled ring of cluster_support.hpp), within `limit`.
  bool wait_settled(std::chrono::milliseconds limit) {
    auto deadline = steady::now() + limit;
    for (;;) {
      bool all = true;
      for (std::size_t i = 0; i < size() && all; ++i) {
        auto text = test::status_of_dir(dirs_[i]);
        all = test::local_cluster::settled_status(text, size());
      }
      if (all)
        return true;
      if (steady::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  /// What the final reads found: the last value of each key through each
  /// node (a key whose read failed there is missing), whether every node
  /// read every key and two rounds agreed, and the last failure.
  struct final_reads {
    std::map<int, std::map<std::string, std::int64_t>> by_node;
    bool settled = false;
    std::string why;
  };

  /// Reads every key, one at a time, through every node, in rounds 500 ms
  /// apart, until two rounds in a row read every key through every node at
  /// the same values (the load has stopped and the nodes have caught up),
  /// or `limit` passes. `with_clock`: each read carries a client clock at
  /// the wall clock now, so it sees every update acknowledged before it;
  /// without, each node reads at its own stable time, as a client without
  /// a clock does.
  final_reads read_finally(const workload_keys& keys, std::chrono::milliseconds limit,
                           bool with_clock) {
    auto deadline = steady::now() + limit;
    final_reads out;
    std::map<int, std::map<std::string, std::int64_t>> last;
    for (;;) {
      std::map<int, std::map<std::string, std::int64_t>> round;
      bool all = true;
      for (std::size_t i = 0; i < size(); ++i)
        for (const auto& k : keys.all()) {
          std::string why;
          auto v = read_values(ports.get(i), workload_keys{{k}, {}}, why,
                               with_clock ? std::optional<std::string>{clock_now()}
                                          : std::nullopt);
          if (v.empty()) {
            all = false;
            out.why = "node " + std::to_string(i) + ", key " + k + ": " + why;
            continue;
          }
          round[static_cast<int>(i)][k] = v.begin()->second;
        }
      for (const auto& [n, values] : round) // the newest value of each key
        for (const auto& [k, v] : values)
          out.by_node[n][k] = v;
      auto apart = check_convergence(round);
      if (all && apart.empty() && round == last) {
        out.settled = true;
        return out;
      }
      if (all && !apart.empty())
        out.why = "the nodes disagree: " + apart.front().detail;
      else if (all)
        out.why = "values still changing between rounds";
      last = std::move(round);
      if (steady::now() > deadline)
        return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }

  /// Each node's `cluster status` (through its admin socket), as text.
  std::string statuses() const {
    std::string out;
    for (std::size_t i = 0; i < size(); ++i)
      out += "\n--- node " + std::to_string(i) + " status:\n" + test::status_of_dir(dirs_[i]);
    return out;
  }

  /// The lines of every node's log (all its runs) that contain `needle`.
  std::vector<std::string> log_lines_with(const std::string& needle) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < size(); ++i) {
      std::istringstream in{test::slurp(log_of(i))};
      for (std::string line; std::getline(in, line);)
        if (line.find(needle) != std::string::npos)
          out.push_back("node " + std::to_string(i) + ": " + line);
    }
    return out;
  }

  /// Copies every node's log to <temp dir>/<prefix>-node<i>.log; the paths.
  std::string keep_logs(const std::string& prefix) const {
    std::string out;
    for (std::size_t i = 0; i < size(); ++i) {
      auto to = std::filesystem::temp_directory_path() / (prefix + "-node" + std::to_string(i) + ".log");
      std::error_code ec;
      std::filesystem::copy_file(log_of(i), to, std::filesystem::copy_options::overwrite_existing,
                                 ec);
      out += (out.empty() ? "" : " ") + to.string();
    }
    return out;
  }

  node_ports ports;

private:
  static std::string exit_text(int status) {
    if (status == -1)
      return "no answer on its client port within 5 s";
    if (WIFEXITED(status))
      return "exit code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
      return "killed by signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
  }

  std::string log_tail(std::size_t i) const {
    auto text = test::slurp(log_of(i));
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  std::string log_of(std::size_t i) const {
    return root_.path + "/logs/node" + std::to_string(i) + ".log";
  }

  bool taken(std::uint16_t port) const {
    for (const auto& s : nodes_)
      if (s->cluster_port == port || s->port == port)
        return true;
    for (auto f : fronts_)
      if (f == port)
        return true;
    return false;
  }

  bool start_node(std::size_t i, bool first) {
    auto& s = *nodes_[i];
    std::vector<std::string> args{"--n-val", "3", "--advertise",
                                  "127.0.0.1:" + std::to_string(fronts_[i])};
    // The first start gets --cluster-port from server::start (a fresh data
    // dir); later ones must repeat it, since it differs from the
    // advertised port (docs/CLUSTER.md, "Nodes and their identity").
    if (!first) {
      args.push_back("--cluster-port");
      args.push_back(std::to_string(s.cluster_port));
    }
    if (tls_) {
      args.push_back("--cluster-secret-file");
      args.push_back(secret_file_);
    } else {
      args.push_back("--insecure-cluster-links");
    }
    if (first && i > 0) {
      args.push_back("--join");
      args.push_back("127.0.0.1:" + std::to_string(fronts_[0]));
    }
    args.push_back("--log-level"); // after server::start's own "warn": the last one counts
    args.push_back(log_level_);
    args.insert(args.end(), extra_.begin(), extra_.end());
    if (!s.start(args))
      return false;
    ports.set(i, s.port);
    return true;
  }

  test::temp_dir root_;
  bool tls_;
  std::vector<std::string> extra_;
  std::string log_level_;
  std::string secret_file_;
  std::vector<std::string> dirs_;
  std::vector<std::unique_ptr<test::server>> nodes_;
  std::vector<std::uint16_t> fronts_;
  std::unique_ptr<link_proxy> proxy_;
};

} // namespace tally::chaos
