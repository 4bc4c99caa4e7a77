#include "journal/background_syncer.hpp"

#include <algorithm>
#include <utility>

namespace tally {

background_syncer::background_syncer(std::size_t threads) {
  for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i)
    threads_.emplace_back([this] { loop(); });
}

background_syncer::~background_syncer() {
  {
    std::lock_guard<std::mutex> g{mu_};
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    // The last owner may be a job's own callback: never join oneself.
    if (t.get_id() == std::this_thread::get_id())
      t.detach();
    else
      t.join();
  }
}

void background_syncer::run(std::function<status()> sync, std::function<void(status)> done) {
  {
    std::lock_guard<std::mutex> g{mu_};
    if (!stopping_) {
      jobs_.push_back(job{std::move(sync), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(sync());
}

std::size_t background_syncer::pending() const {
  std::lock_guard<std::mutex> g{mu_};
  return jobs_.size() + running_;
}

void background_syncer::loop() {
  std::unique_lock<std::mutex> lock{mu_};
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty())
      return; // stopping, and every job is done
    auto j = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    auto outcome = j.sync();
    j.done(std::move(outcome));
    j = job{};
    lock.lock();
    --running_;
  }
}

} // namespace tally
