// The two-phase commits a node coordinates, and how they ended (issue 13;
// docs/CLUSTER.md, "Recovery of undecided transactions").
//
// commit_writes (actors/transactions.cpp) registers each two-phase commit
// here while it runs: begin() before its prepares are sent, commit() when
// every prepare has answered and it decides to commit, end() when it is
// over. A node holding one of its transactions prepared, whose decision did
// not arrive (a link dropped by a pause or a kill), asks the coordinator's
// node through the membership actors (m_txdec, tx_decide_req) and gets the
// answer from decide():
//
//   committed at T  the coordinator decided commit: commit there at T;
//   aborted         it decided abort, or ended without committing;
//   collecting      it still waits for prepares (asked without force);
//   unknown         no such transaction in this run's memory (it ended
//                   longer ago than the keep time, or another run
//                   coordinated it): only the participants' journals tell.
//
// Asked with force, a commit still collecting its prepares is aborted at
// once: the coordinator has not decided yet, so it may decide abort
// (cooperative termination of two-phase commit; Bernstein, Hadzilacos and
// Goodman, "Concurrency Control and Recovery in Database Systems", 1987,
// Sec. 7.4), and its commit() then returns false. A holder asks with force
// only when a link may have lost messages of the commit (a node went down
// since shortly before its prepare) or the prepare is older than a request
// timeout, so a healthy commit is never aborted by it.
//
// Outcomes are kept for keep_for() after end() (by default 60 s; the
// membership sets 3 request timeouts + 30 s): a holder that asks later is
// told "unknown", and by then no message of the commit can still arrive. A
// commit every participant acknowledged is forgotten at once (each holds
// its commit record, so no one asks), which keeps the memory to the
// commits that failed or aborted.
//
// Thread-safe: coordinators run on the client server's threads, the
// membership actor on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "common/ids.hpp"

namespace tally {

/// What a coordinator says about one of its transactions (tx_decide_resp's
/// state on the wire: these numbers).
enum class coordinator_state : std::uint8_t {
  collecting = 0,
  committed = 1,
  aborted = 2,
  unknown = 3,
};

struct coordinator_answer {
  coordinator_state state = coordinator_state::unknown;
  std::uint64_t commit_time = 0; // when committed
};

class coordinated_txs {
public:
  using clock = std::chrono::steady_clock;

  explicit coordinated_txs(clock::duration keep = std::chrono::seconds{60}) : keep_(keep) {}

  /// How long an outcome is remembered after end().
  void keep_for(clock::duration keep) {
    std::lock_guard<std::mutex> g{mu_};
    keep_ = keep;
  }

  /// A two-phase commit of `tx` starts (before any prepare is sent).
  void begin(const tx_id& tx) {
    std::lock_guard<std::mutex> g{mu_};
    expire(clock::now());
    txs_[tx] = entry{};
  }

  /// The coordinator decides to commit `tx` at `t`. False when a holder
  /// forced an abort first: the coordinator must abort it instead.
  bool commit(const tx_id& tx, std::uint64_t t) {
    std::lock_guard<std::mutex> g{mu_};
    auto i = txs_.find(tx);
    if (i == txs_.end())
      return true; // not registered (begin() not called): nothing to check
    if (i->second.state == coordinator_state::aborted)
      return false;
    i->second.state = coordinator_state::committed;
    i->second.commit_time = t;
    return true;
  }

  /// The two-phase commit of `tx` is over: committed if commit() said so,
  /// else aborted. Its outcome is kept for keep_for(), unless
  /// `all_acknowledged` (every participant has durably committed it).
  void end(const tx_id& tx, bool all_acknowledged = false) {
    std::lock_guard<std::mutex> g{mu_};
    auto now = clock::now();
    auto i = txs_.find(tx);
    if (i != txs_.end() && all_acknowledged
        && i->second.state == coordinator_state::committed && !i->second.ended) {
      txs_.erase(i);
    } else if (i != txs_.end() && !i->second.ended) {
      if (i->second.state == coordinator_state::collecting)
        i->second.state = coordinator_state::aborted;
      i->second.ended = true;
      ended_.emplace_back(now, tx);
    }
    expire(now);
  }

  /// What the coordinator says about `tx` (see the header); with `force`, a
  /// commit still collecting its prepares is aborted now.
  coordinator_answer decide(const tx_id& tx, bool force) {
    std::lock_guard<std::mutex> g{mu_};
    expire(clock::now());
    auto i = txs_.find(tx);
    if (i == txs_.end())
      return {};
    auto& e = i->second;
    if (e.state == coordinator_state::collecting && force)
      e.state = coordinator_state::aborted;
    return {e.state, e.commit_time};
  }

  /// Transactions known (running or remembered).
  std::size_t size() const {
    std::lock_guard<std::mutex> g{mu_};
    return txs_.size();
  }

private:
  struct entry {
    coordinator_state state = coordinator_state::collecting;
    std::uint64_t commit_time = 0;
    bool ended = false;
  };

  void expire(clock::time_point now) {
    while (!ended_.empty() && now - ended_.front().first >= keep_) {
      txs_.erase(ended_.front().second);
      ended_.pop_front();
    }
  }

  mutable std::mutex mu_;
  clock::duration keep_;
  std::unordered_map<tx_id, entry, tx_id_hash> txs_;
  std::deque<std::pair<clock::time_point, tx_id>> ended_; // in end() order
};

} // namespace tally
