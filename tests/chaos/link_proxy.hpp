// The chaos suite's network nemesis (issue 13; docs/RELIABILITY.md, "The
// link proxy"): a TCP proxy, run by the test process, that stands between
// the nodes of a local cluster, so a test can cut one node off from the
// others and heal it again while every process keeps running.
//
// Each node gets one front port on 127.0.0.1 that forwards to its real
// cluster port; the node advertises the front port (`tallyd --advertise`),
// so every other node reaches it only through the proxy (a node connects
// to a member at the address in its id: docs/CLUSTER.md, "Nodes and their
// identity"; the joiners' `--join` names the front port too). One TCP
// connection carries both directions of a pair of nodes (CAF's BASP), so
// the link X-Y runs through X's front port or Y's, whichever side opened
// it. To know which node opened a connection, the proxy finds the process
// that owns the other end of each accepted socket (/proc/net/tcp gives the
// socket's inode, /proc/<pid>/fd of the test's child processes gives its
// owner) and asks the test which node that process is. That lookup runs on
// a thread of its own: a new link waits for it, the links already open go
// on forwarding meanwhile (a slow lookup on a loaded machine once stalled
// every link at once, docs/RELIABILITY.md, "Node links collapse"). Node X
// is cut off
// when every connection into X's front port and every connection X opened
// into another front port is cut.
//
// Two ways to cut:
//   reset      existing connections are closed with a TCP reset, new ones
//              are accepted and reset at once (a crashed switch port: the
//              nodes see the link drop at once);
//   blackhole  existing connections are frozen (the proxy stops reading
//              and writing them: bytes wait in the socket buffers), new
//              ones are accepted and held unanswered (a dropped cable: the
//              nodes see silence until their heartbeat timeout). Healing
//              unfreezes the old connections (what was sent arrives late,
//              as TCP would deliver it after a short outage) and resets
//              the ones opened meanwhile (their connect attempt was lost).
//
// Plain POSIX (poll on one thread, the opener lookups on another); Linux
// only (/proc). Never any Boost.Test call from the proxy's threads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tally::chaos {

enum class cut_mode { reset, blackhole };

/// The pid of the process holding the other end of a TCP connection on
/// 127.0.0.1 from `peer_port` to `local_port` (this process's side), among
/// the children of this process; -1 when none holds it (it closed it, or
/// the connection came from elsewhere). Reads /proc/net/tcp{,6} and
/// /proc/<child>/fd.
pid_t child_owning_connection(std::uint16_t peer_port, std::uint16_t local_port);

class link_proxy {
public:
  struct counters {
    std::uint64_t accepted = 0;        // connections accepted on front ports
    std::uint64_t refused = 0;         // reset at accept: a cut node's, or no known origin
    std::uint64_t unknown_origin = 0;  // of those: a live socket no node owned
    // Of those: the opener's end was closed before it could be told apart
    // (no process holds it any more: a node killed while it connected);
    // such a connection carries nothing.
    std::uint64_t opener_gone = 0;
    std::uint64_t reset_by_cut = 0;    // open connections reset by a cut
    std::uint64_t frozen_by_cut = 0;   // open connections frozen by a blackhole cut
    std::uint64_t bytes = 0;           // forwarded, both directions
    std::uint64_t slowest_lookup_ms = 0; // the longest one opener lookup took
  };

  /// `node_of_pid` names the node a process is (-1: none); it is called on
  /// the proxy's lookup thread.
  explicit link_proxy(std::function<int(pid_t)> node_of_pid);
  ~link_proxy();
  link_proxy(const link_proxy&) = delete;
  link_proxy& operator=(const link_proxy&) = delete;

  /// Listens on 127.0.0.1:`front_port` (0: a free port below the ephemeral
  /// range) for node `node`, forwarding to 127.0.0.1:`target_port`; returns
  /// the front port, 0 when it cannot listen. Call before the node starts.
  std::uint16_t add_node(int node, std::uint16_t target_port, std::uint16_t front_port = 0);
  /// Forwards node `node`'s front port to 127.0.0.1:`target_port` from now
  /// on (a node that could not listen on its first cluster port is started
  /// on another one, its front port unchanged).
  void retarget(int node, std::uint16_t target_port);

  /// Cuts every link of `node` (connections into its front port and
  /// connections it opened into others) until heal(node). Returns once the
  /// proxy's thread has applied it (so do heal and heal_all).
  void isolate(int node, cut_mode mode);
  void heal(int node);
  void heal_all();
  /// The nodes cut off now.
  std::vector<int> isolated() const;

  /// Open connections (forwarding, frozen or held).
  std::size_t open_connections() const;
  counters stats() const;

private:
  struct connection;
  struct front;
  // An accepted connection whose opener is being looked up.
  struct newcomer {
    std::unique_ptr<connection> c;
    std::uint16_t peer = 0;       // the opener's port
    std::uint16_t front_port = 0; // where it came in
    std::uint16_t target_port = 0;
    bool opener_gone = false;     // found closed by its opener
    std::uint64_t lookup_ms = 0;
  };
  void run();
  void look_up_openers();
  void identify(newcomer& n) const;
  void admit(newcomer n);
  void wake();
  void change_cuts(const std::function<void()>& change);
  void apply_cuts_locked();
  bool affected_locked(const connection& c) const;
  void accept_on(front& f);
  void pump(connection& c, bool down_readable, bool down_writable, bool up_readable,
            bool up_writable);
  void close_connection(connection& c, bool reset);

  std::function<int(pid_t)> node_of_pid_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<front>> fronts_;
  std::vector<std::unique_ptr<connection>> conns_;
  std::map<int, cut_mode> cut_;  // node -> how it is cut
  std::uint64_t cuts_asked_ = 0;   // changes of cut_ so far
  std::uint64_t cuts_applied_ = 0; // of those, applied by the thread
  std::condition_variable applied_;
  counters stats_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  // The lookup thread's queues (guarded by lookup_mu_, never taken with mu_
  // held by that thread): newcomers to identify, and those identified.
  std::mutex lookup_mu_;
  std::condition_variable lookup_cv_;
  std::vector<newcomer> to_identify_;
  std::vector<newcomer> identified_;
  std::thread lookup_thread_;
  std::thread thread_;
};

} // namespace tally::chaos
