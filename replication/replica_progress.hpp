// The primary's side of replication (docs/REPLICATION.md,
// "Acknowledgement"): how far each replica's journal goes, and which held
// writes may be acknowledged.
//
// Rule: a write whose batch ends at LSN e (every record < e) is
// acknowledged once w copies hold every LSN below e durably; the primary's
// own journal is one of them. Since every replica's journal is a prefix of
// the primary's, "holds every LSN below e" is one number per copy, and the
// quorum point is the w-th largest of them.
//
// Plain values: no actors, no clock, no I/O; one owner (the partition actor).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.hpp"
#include "journal/record.hpp"
#include "ring/claim.hpp"

namespace tally {

class replica_progress {
public:
  /// `replicas`: the other nodes of the preference list (may be empty);
  /// `w`: copies that must hold a write before it is acknowledged, the
  /// primary's own included. errc::invalid_argument unless
  /// 1 <= w <= replicas + 1 and the replicas are distinct.
  static expected<replica_progress> make(std::vector<node_id> replicas,
                                         std::uint32_t w);

  /// The primary's journal is durable below `end`.
  void local_durable(lsn end) noexcept;
  /// Replica `r` acknowledged: it holds every LSN below `end` durably.
  /// Acknowledgements may arrive out of order: a smaller end than the one
  /// known is ignored, as is an unknown replica.
  void acked(const node_id& r, lsn end);
  /// Replica `r` refused a batch because its journal ends at `end` (it
  /// restarted, or missed a batch): its position is set to exactly that,
  /// also when smaller (it lost an unacknowledged tail), so that the next
  /// batch it is sent starts there.
  void rewound(const node_id& r, lsn end);

  /// Every LSN below this is on at least w copies.
  lsn quorum_end() const;
  /// Every LSN below this is on every copy: the primary keeps its log from
  /// here for catch-up (the checkpoint's replicated LSN).
  lsn all_end() const;
  /// How far replica `r` goes (0 for an unknown replica).
  lsn end_of(const node_id& r) const;

  const std::vector<node_id>& replicas() const noexcept { return replicas_; }
  std::uint32_t w() const noexcept { return w_; }

private:
  replica_progress(std::vector<node_id> replicas, std::uint32_t w)
      : replicas_(std::move(replicas)), ends_(replicas_.size(), 0), w_(w) {}
  std::size_t find(const node_id& r) const;

  std::vector<node_id> replicas_;
  std::vector<lsn> ends_; // per replica: holds every LSN below it
  lsn local_ = 0;
  std::uint32_t w_ = 1;
};

/// Writes held until their batch is on w copies, in batch order.
template <class T>
class quorum_queue {
public:
  /// Holds `item` until quorum_end() reaches `end`. Ends must not decrease.
  void push(lsn end, T item) { items_.emplace_back(end, std::move(item)); }
  /// Every held item whose end is <= `quorum_end`, oldest first.
  std::vector<T> take_ready(lsn quorum_end) {
    std::vector<T> out;
    while (!items_.empty() && items_.front().first <= quorum_end) {
      out.push_back(std::move(items_.front().second));
      items_.pop_front();
    }
    return out;
  }
  /// The held items from the oldest on while `pred(item)` holds (to fail
  /// those held too long).
  template <class Pred>
  std::vector<T> take_front_while(Pred pred) {
    std::vector<T> out;
    while (!items_.empty() && pred(items_.front().second)) {
      out.push_back(std::move(items_.front().second));
      items_.pop_front();
    }
    return out;
  }
  /// Every held item (to fail them).
  std::vector<T> take_all() { return take_ready(~lsn{0}); }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  /// The oldest held item (the queue must not be empty).
  const T& front() const { return items_.front().second; }

private:
  std::deque<std::pair<lsn, T>> items_;
};

} // namespace tally
