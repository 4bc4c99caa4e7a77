#include "server/shard_inbox.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <sys/eventfd.h>
#include <unistd.h>

namespace tally {

namespace {
// The inbox whose shard runs on this thread (none on other threads).
thread_local const shard_inbox* own_inbox = nullptr;
} // namespace

shard_inbox::~shard_inbox() {
  if (efd_ >= 0)
    ::close(efd_);
}

status shard_inbox::open() {
  efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0)
    return make_error(errc::io_error, std::string{"eventfd: "} + std::strerror(errno));
  return {};
}

void shard_inbox::bind_to_this_thread() noexcept {
  own_inbox = this;
}

bool shard_inbox::on_own_thread() const noexcept {
  return own_inbox == this;
}

void shard_inbox::post(task t) {
  if (own_inbox == this) {
    if (!closed_.load(std::memory_order_relaxed))
      local_.push_back(std::move(t));
    return;
  }
  {
    std::lock_guard<std::mutex> g{mu_};
    if (closed_.load(std::memory_order_relaxed))
      return;
    remote_.push_back(std::move(t));
    if (signaled_)
      return;
    signaled_ = true;
  }
  // One eventfd write per batch: only the first post after the shard took
  // the last batch wakes it.
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(efd_, &one, sizeof one);
}

bool shard_inbox::run_ready(bool woken, std::size_t max_rounds) {
  std::vector<task> batch;
  if (woken) {
    // The eventfd first, then the queue: a post that lands between the two
    // is taken now and its eventfd write only wakes the loop once more.
    std::uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(efd_, &count, sizeof count);
    std::lock_guard<std::mutex> g{mu_};
    batch.swap(remote_);
    signaled_ = false;
  }
  for (auto& t : batch)
    t();
  // Local tasks post more local tasks (an actor's reply completes a
  // request whose connection then hands on the next one): run them in
  // rounds, each round what the previous one left.
  for (std::size_t round = 0; round < max_rounds && !local_.empty(); ++round) {
    batch.clear();
    batch.swap(local_);
    for (auto& t : batch)
      t();
  }
  if (closed_.load(std::memory_order_relaxed))
    local_.clear();
  return !local_.empty();
}

void shard_inbox::close() {
  std::lock_guard<std::mutex> g{mu_};
  closed_.store(true, std::memory_order_relaxed);
  remote_.clear();
}

} // namespace tally
