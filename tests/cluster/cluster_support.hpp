// A local cluster of real tallyd processes on 127.0.0.1 for the cluster
// tests (docs/CLUSTER.md, "Tests"): node 0 founds it, the others join
// through node 0's cluster port. Every node gets the cluster's secret
// (--cluster-secret-file, a file made per cluster) unless the test gives
// other link flags. Every wait is a bounded loop.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>


#include "client/client.hpp"
#include "clock/vector_clock.hpp"
#include "protocol/descriptor.hpp"
#include "ring/partition.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/tallyd_process.hpp"

namespace tally::test {

/// The ring size every cluster test uses (server::start passes it).
constexpr std::uint32_t cluster_partitions = 8;

/// One key per partition of an 8-partition ring: a transaction over them
/// touches every partition, so every node of the cluster.
inline std::vector<object_key> one_key_per_partition(const std::string& bucket) {
  std::vector<object_key> out(cluster_partitions);
  std::vector<bool> found(cluster_partitions, false);
  std::size_t left = cluster_partitions;
  for (int i = 0; left > 0 && i < 100000; ++i) {
    auto k = "k" + std::to_string(i);
    auto p = *partition_for(bucket, k, cluster_partitions);
    if (!found[p]) {
      found[p] = true;
      out[p] = object_key{bucket, k};
      --left;
    }
  }
  return out;
}

inline std::vector<bound_object> bound(const std::vector<object_key>& keys) {
  std::vector<bound_object> out;
  for (const auto& k : keys)
    out.push_back(bound_object{k, crdt_type::counter});
  return out;
}

/// The join (entry-wise max) of clock bytes, as bytes; nullopt for none.
inline std::optional<std::string> join_clocks(const std::vector<std::string>& clocks) {
  std::optional<vector_clock> acc;
  for (const auto& c : clocks) {
    auto v = decode_clock(c);
    if (!v)
      continue;
    if (!acc)
      acc = *v;
    else
      acc->merge(*v);
  }
  if (!acc)
    return std::nullopt;
  return encode_clock(*acc);
}

/// A client of the admin socket of the node whose data dir is `dir`
/// (tallyd's default DATA-DIR/admin.sock): admin requests need it.
inline expected<client> connect_admin(const std::string& dir) {
  client_options o;
  o.admin_socket = dir + "/admin.sock";
  return client::connect(o);
}

/// The answer to the admin command "status" of the node whose data dir is
/// `dir` (through its admin socket), or the error as text.
inline std::string status_of_dir(const std::string& dir) {
  auto c = connect_admin(dir);
  if (!c)
    return c.err().to_string();
  auto r = c->admin("status", {});
  return r ? *r : r.err().to_string();
}

inline std::string status_of(const server& s) { return status_of_dir(s.dir); }

/// Raw bytes to 127.0.0.1:`port` (a cluster port, in the tests of node
/// links); true when they were all written. Returns once the node closes
/// the connection (10 s receive timeout at most).
inline bool send_raw(std::uint16_t port, const std::string& bytes) {
  int fd = try_connect(port);
  if (fd < 0)
    return false;
  bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  char b;
  ::recv(fd, &b, 1, 0);
  ::close(fd);
  return ok;
}

/// A client of the node on `port`. The default timeout keeps the client's
/// retry window (2 resends x 2 x 1 s) inside the node's FBF retry timeout,
/// so resends stay exactly-once (docs/CLIENT.md).
inline expected<client> connect_to(std::uint16_t port, std::chrono::milliseconds timeout =
                                                          std::chrono::milliseconds{1000}) {
  client_options o;
  o.port = port;
  o.timeout = timeout;
  return client::connect(o);
}

/// Writes a new cluster secret (64 hex digits of std::random_device) to
/// `path` with mode 0600, as `openssl rand -hex 32 > path` would.
inline void write_secret_file(const std::string& path) {
  std::random_device rd;
  std::string text;
  for (int i = 0; i < 64; ++i)
    text += "0123456789abcdef"[rd() % 16];
  text += "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    auto n = ::write(fd, text.data(), text.size());
    (void)n;
    ::close(fd);
  }
}

struct local_cluster {
  temp_dir root;
  std::string durability;
  std::vector<std::string> extra; // flags every node gets
  std::vector<std::unique_ptr<server>> nodes;
  std::string secret_file; // the cluster's secret (--cluster-secret-file)

  explicit local_cluster(std::string mode = "batch") : durability(std::move(mode)) {
    std::filesystem::create_directories(root.path);
    secret_file = root.path + "/cluster.secret";
    write_secret_file(secret_file);
  }

  /// --cluster-secret-file, unless `extra` sets up links another way
  /// (--tls-cert, --insecure-cluster-links, its own secret).
  std::vector<std::string> link_flags() const {
    for (const auto& f : extra)
      if (f == "--tls-cert" || f == "--insecure-cluster-links" || f == "--cluster-secret-file")
        return {};
    return {"--cluster-secret-file", secret_file};
  }

  std::string dir_of(std::size_t i) const {
    return root.path + "/node" + std::to_string(i);
  }

  /// Starts one more node (joining node 0 unless it is the first); false
  /// when it does not serve. `cluster_port`: its node-to-node port, so its
  /// node id, when the test chose it (0: a free one).
  bool add(std::uint16_t cluster_port = 0) {
    auto i = nodes.size();
    nodes.push_back(std::make_unique<server>(dir_of(i), durability));
    nodes.back()->cluster_port = cluster_port;
    auto args = extra;
    for (auto& f : link_flags())
      args.push_back(f);
    if (i > 0) {
      args.push_back("--join");
      args.push_back("127.0.0.1:" + std::to_string(nodes[0]->cluster_port));
    }
    return nodes.back()->start(args);
  }

  /// Restarts node i on its data dir (it finds its cluster from its ring).
  /// `more`: flags after the cluster's own (a later --log-level wins);
  /// `log_path`: where this start's stdout and stderr go (the test's
  /// stderr when empty).
  bool restart(std::size_t i, const std::vector<std::string>& more = {},
               const std::string& log_path = {}) {
    auto cport = nodes[i]->cluster_port;
    nodes[i] = std::make_unique<server>(dir_of(i), durability);
    nodes[i]->cluster_port = cport;
    nodes[i]->log_path = log_path;
    auto args = extra;
    for (auto& f : link_flags())
      args.push_back(f);
    args.insert(args.end(), more.begin(), more.end());
    return nodes[i]->start(args);
  }

  /// True once every node's `cluster status` (through its admin socket)
  /// shows every member up and serving exactly what it owns, no handoff
  /// under way and, with replication, a primary for every partition and
  /// n_val current copies of each: the ring has settled after joins
  /// (within `limit`).
  bool wait_settled(std::chrono::milliseconds limit = std::chrono::milliseconds{60000}) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      bool all = true;
      for (std::size_t i = 0; i < nodes.size() && all; ++i) {
        client_options o;
        o.admin_socket = dir_of(i) + "/admin.sock";
        auto c = client::connect(o);
        auto text = c ? c->admin("status", {}) : expected<std::string>{c.err()};
        all = text && settled_status(*text, nodes.size());
      }
      if (all)
        return true;
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // One node's status text says the ring has settled (see wait_settled).
  static bool settled_status(const std::string& text, std::size_t members) {
    std::istringstream in{text};
    std::size_t rows = 0, led = 0;
    bool replicated = false, all_copies = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("handoff in progress", 0) == 0 || line.rfind("no reachable copy", 0) == 0)
        return false;
      if (line.rfind("replication:", 0) == 0)
        replicated = true;
      if (line.rfind("copies: every partition has", 0) == 0)
        all_copies = true;
      if (line.rfind("tally@", 0) != 0)
        continue;
      std::vector<std::string> f;
      for (std::size_t at = 0;;) {
        auto bar = line.find(" | ", at);
        f.push_back(line.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
        if (bar == std::string::npos)
          break;
        at = bar + 3;
      }
      if (f.size() == 5) { // a member: id | status | up | owns | serves
        ++rows;
        if (f[2] != "up" || f[3] != f[4])
          return false;
      } else if (f.size() == 2) { // a primary and how many it leads
        led += std::stoul(f[1]);
      }
    }
    // With replication, also n_val current copies of every partition: a
    // copy opened empty after a join (one the join adds to a copy set) does
    // not count until it has caught up, and while the
    // only current copy of a partition is on one node, a kill of that node
    // leaves the partition unserved until it is back (docs/REPLICATION.md,
    // "Failover").
    return rows == members && (!replicated || (led > 0 && all_copies));
  }

  /// True once a read of one key per partition succeeds through every node
  /// listed (every partition is routed and answers), within `limit`.
  bool wait_serving(const std::vector<std::size_t>& through,
                    std::chrono::milliseconds limit = std::chrono::milliseconds{20000}) {
    auto keys = bound(one_key_per_partition("probe"));
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (auto i : through) {
      for (;;) {
        auto c = connect_to(nodes[i]->port);
        if (c && c->read(keys))
          break;
        if (std::chrono::steady_clock::now() > deadline)
          return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return true;
  }
};

/// What a tallyd run that is expected to stop by itself printed.
struct finished_run {
  int exit_code = -1; // -1: did not exit within the limit (then killed)
  std::string output; // stderr and stdout
};

/// A transaction's updates: +1 on every key.
inline std::vector<counter_inc> increments(const std::vector<object_key>& keys) {
  std::vector<counter_inc> ups;
  ups.reserve(keys.size());
  for (const auto& k : keys)
    ups.push_back(counter_inc{k, 1});
  return ups;
}

/// Starts three nodes with three copies of every partition (`extra` flags
/// besides --n-val 3) and waits until their views have settled.
inline bool start_three_copies(local_cluster& cl, std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"--n-val", "3"});
  cl.extra = std::move(extra);
  for (int i = 0; i < 3; ++i)
    if (!cl.add())
      return false;
  return cl.wait_settled();
}

inline finished_run run_tallyd(const std::vector<std::string>& args,
                               std::chrono::milliseconds limit) {
  temp_dir out_dir;
  std::filesystem::create_directories(out_dir.path);
  finished_run r;
  {
    child_process p{TALLYD_PATH, args, out_dir.path};
    if (p.started())
      r.exit_code = p.wait(limit);
    r.output = slurp(p.err) + slurp(p.out);
  }
  return r;
}

} // namespace tally::test
