// The work queue of one shard thread (docs/PERFORMANCE.md, "The request
// path"): tasks posted here run on the shard's thread, between its I/O
// batches, in the order each thread posted them. Replies to the shard's
// connections come this way, and so do the partition actors hosted on the
// shard (actors/shard_host.hpp), whose CAF mailboxes schedule themselves
// here instead of on a thread of their own.
//
// Cost: a post from the shard's own thread is a push on a local queue (no
// lock, no system call), run before the shard sleeps again; a post from any
// other thread takes a mutex, and only the first post after the shard took
// its last batch writes the eventfd that wakes it.
//
// Tasks posted after close() are dropped, not run: what the shard's thread
// would have done (write a reply, run an actor) has no one to do it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "common/expected.hpp"

namespace tally {

class shard_inbox {
public:
  using task = std::function<void()>;

  shard_inbox() = default;
  ~shard_inbox();
  shard_inbox(const shard_inbox&) = delete;
  shard_inbox& operator=(const shard_inbox&) = delete;

  /// Creates the eventfd (errc::io_error when the kernel refuses).
  status open();
  /// The eventfd the shard's epoll watches: readable when tasks wait.
  int fd() const noexcept { return efd_; }

  /// Runs `t` on the shard's thread, from any thread.
  void post(task t);

  /// Called by the shard's thread once, before its loop: from then on its
  /// own posts take the local queue.
  void bind_to_this_thread() noexcept;
  /// True on the shard's own thread.
  bool on_own_thread() const noexcept;

  /// The shard's thread: runs the tasks waiting now: those posted from
  /// other threads when `woken` (epoll said fd() is readable), then the
  /// local ones, and the local ones those post, up to `max_rounds` rounds
  /// so that I/O is not starved. True when local tasks are still waiting
  /// (the shard must not sleep in epoll).
  bool run_ready(bool woken, std::size_t max_rounds = 64);
  /// True while local tasks wait.
  bool has_local() const noexcept { return !local_.empty(); }

  /// Drops every waiting task and every later post. Any thread.
  void close();

private:
  int efd_ = -1;
  std::mutex mu_;
  std::vector<task> remote_; // posted by other threads, under mu_
  bool signaled_ = false;    // the eventfd was written since the last take
  std::atomic<bool> closed_{false};
  std::vector<task> local_;  // posted by the shard's own thread
};

} // namespace tally
