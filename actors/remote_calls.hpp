// Calls from this node to partitions on other nodes that wait for an answer
// (actors/partition_calls.cpp), by the node they went to, so that they fail
// at once when that node dies instead of waiting out their request timeout
// (10 s by default). CAF never fails a request to a node whose link is lost
// (CAF-NOTES.md, "Multi-node"): it only times out, and a message sent to a
// dead node's actor vanishes.
//
// Why it matters (issue 14, the failover stall): a two-phase commit with a
// prepare in flight to a node that is killed waited 10 s for it, holding
// its op ids prepared on the other partitions; the client's resends (same
// op ids) waited behind it, so a write through a survivor failed for 3 s
// (the client's retry window) or more, though every partition had a new
// primary within milliseconds.
//
// The membership actor reports a member's link lost (killed, paused past the
// failure detector, cut off) and up again. It does not report a member that
// leaves the cluster (or has left): its partitions forward requests to their
// new owners, whose answers come back on other links, so its calls are
// left to finish (failing them early made outcomes unknown under a
// join-and-leave load: docs/CLUSTER.md, "A paused coordinator").
//
// Thread-safe: calls are added from the client server's threads and
// finished on actor threads.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tally {

class remote_calls {
public:
  /// Registers a call to a partition on `node`: `on_lost` runs (once, on
  /// the thread that reports the loss) if the link to `node` is lost before
  /// the call is finished. Returns its id, or 0 when the link to `node` is
  /// lost already: then the caller fails the call itself.
  std::uint64_t add(const std::string& node, std::function<void()> on_lost) {
    std::lock_guard<std::mutex> g{mu_};
    if (lost_.count(node) != 0)
      return 0;
    const auto id = ++next_;
    calls_.emplace(id, std::make_pair(node, std::move(on_lost)));
    return id;
  }

  /// The call was answered or timed out (nothing to do for id 0 or an id
  /// already failed by link_lost).
  void finish(std::uint64_t id) {
    std::lock_guard<std::mutex> g{mu_};
    calls_.erase(id);
  }

  /// The link to `node` is lost: every call waiting on it fails now, and
  /// calls added from now on until link_up(node) fail at once (a route
  /// read before the membership moved it may still name that node).
  void link_lost(const std::string& node) {
    std::vector<std::function<void()>> lost;
    {
      std::lock_guard<std::mutex> g{mu_};
      lost_.insert(node);
      for (auto i = calls_.begin(); i != calls_.end();) {
        if (i->second.first == node) {
          lost.push_back(std::move(i->second.second));
          i = calls_.erase(i);
        } else {
          ++i;
        }
      }
    }
    for (auto& f : lost)
      f();
  }

  /// `node` is reachable again (a new run of it, or a link back).
  void link_up(const std::string& node) {
    std::lock_guard<std::mutex> g{mu_};
    lost_.erase(node);
  }

  /// Calls registered and not finished (for tests).
  std::size_t pending() const {
    std::lock_guard<std::mutex> g{mu_};
    return calls_.size();
  }

private:
  mutable std::mutex mu_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::uint64_t, std::pair<std::string, std::function<void()>>> calls_;
  std::set<std::string> lost_;
};

} // namespace tally
