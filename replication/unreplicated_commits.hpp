// The commits a primary journaled that are not yet on w copies
// (docs/REPLICATION.md, "Acknowledgement and visibility"), as what reads
// must wait for: no snapshot at or above the smallest of their commit times
// is served, so no read shows a commit a failover could take back.
//
// Plain C++: the partition's replication (actors/partition_replication.hpp)
// feeds it the batches it flushes and the quorum end as copies acknowledge.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

#include "journal/record.hpp"

namespace tally {

class unreplicated_commits {
public:
  /// A flushed batch ending before `end` whose smallest commit time is
  /// `smallest_commit`. A later batch can commit below an earlier one (a
  /// transaction prepared here before another, whose coordinator's commit
  /// time is below the other's, commits after it): every entry keeps the
  /// smallest time of its batch and every later one, so the front is the
  /// smallest of all.
  void add(lsn end, std::uint64_t smallest_commit) {
    for (auto i = batches_.rbegin(); i != batches_.rend() && i->second > smallest_commit; ++i)
      i->second = smallest_commit;
    batches_.emplace_back(end, smallest_commit);
  }

  /// Every record below `quorum_end` is on w copies: the batches ending at
  /// or below it are dropped. Returns whether any was.
  bool acknowledged(lsn quorum_end) {
    bool dropped = false;
    while (!batches_.empty() && batches_.front().first <= quorum_end) {
      batches_.pop_front();
      dropped = true;
    }
    return dropped;
  }

  /// Snapshots at or above this wait (UINT64_MAX: none does).
  std::uint64_t visible_below() const noexcept {
    return batches_.empty() ? UINT64_MAX : batches_.front().second;
  }

  bool empty() const noexcept { return batches_.empty(); }
  void clear() noexcept { batches_.clear(); }

private:
  std::deque<std::pair<lsn, std::uint64_t>> batches_; // (batch end, smallest commit time)
};

} // namespace tally
