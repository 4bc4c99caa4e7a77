// Syncs of partition journals on threads of their own (docs/NODE.md,
// "Threading and disk I/O"): the partitions run on the shard threads, which
// also serve the client sockets, so none of them may wait for the disk. A
// partition appends its group-committed batch without syncing, hands the
// sync here (journal::background_sync), goes on serving, and is told when
// the sync is done; in durability batch its writes are answered, and its
// commits become visible, only then.
//
// A few threads, since fdatasyncs of different files proceed in parallel
// in the kernel and the device; each job is one storage_env::sync(). A
// partition has at most one job here at a time: what it appends meanwhile
// waits for its next sync, so one sync covers many batches (group commit
// at the disk).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/expected.hpp"

namespace tally {

class background_syncer {
public:
  /// Starts `threads` sync threads (at least one).
  explicit background_syncer(std::size_t threads);
  /// Runs the jobs still queued, then joins the threads.
  ~background_syncer();
  background_syncer(const background_syncer&) = delete;
  background_syncer& operator=(const background_syncer&) = delete;

  /// Runs `sync` (a journal::sync_job's run(): storage_env::sync or
  /// tail_sync) on a sync thread, then `done` with its outcome, on
  /// that thread (it must hand the outcome on, not block). After the
  /// destructor began, the job runs on the caller's thread instead.
  void run(std::function<status()> sync, std::function<void(status)> done);

  /// Jobs waiting or running now (for tests and status).
  std::size_t pending() const;

private:
  struct job {
    std::function<status()> sync;
    std::function<void(status)> done;
  };
  void loop();

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<job> jobs_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace tally
