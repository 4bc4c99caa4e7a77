// The node's memory budget for client requests (docs/SECURITY.md, "Big
// frames and the request memory budget"): one count, shared by every
// connection of every I/O thread, of the bytes of requests the node holds
// on behalf of clients. A frame is charged its announced size when its
// length arrives, before any byte of its body is buffered; the charge stays
// while the frame is received, waits to be decoded, and while the decoded
// request is served, and is given back when its reply is produced. A frame
// whose charge would take the count over the limit is refused, so many big
// frames at once get an error instead of exhausting memory.
//
// Plain C++, no I/O; thread-safe (one atomic).
#pragma once

#include <atomic>
#include <cstddef>

namespace tally {

class request_memory_budget {
public:
  /// `limit` bytes in all (tallyd --max-request-memory).
  explicit request_memory_budget(std::size_t limit) : limit_(limit) {}
  request_memory_budget(const request_memory_budget&) = delete;
  request_memory_budget& operator=(const request_memory_budget&) = delete;

  /// Adds `bytes` to the count; false (nothing changed) when the count
  /// would exceed the limit.
  bool try_charge(std::size_t bytes) noexcept {
    auto now = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || now > limit_ - bytes)
        return false;
    } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return true;
  }
  /// Gives back `bytes` charged earlier.
  void release(std::size_t bytes) noexcept {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_; }

private:
  std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

} // namespace tally
