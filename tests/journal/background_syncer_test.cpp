// journal/background_syncer.hpp: each job's sync runs on a sync thread and
// its outcome (success or the store's error) reaches the job's callback;
// jobs queued when the syncer is destroyed still run; after that, a job
// runs on the caller's thread. A recording store stands in for LMDB.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "journal/background_syncer.hpp"
#include "journal/storage_env.hpp"

using namespace tally;

namespace {

// A store whose sync() records its thread and returns `outcome`.
class recording_env final : public storage_env {
public:
  explicit recording_env(status outcome = {}) : outcome_(std::move(outcome)) {}
  expected<std::unique_ptr<storage_txn>> begin(bool) override {
    return make_error(errc::unavailable, "no transactions here");
  }
  status sync() override {
    std::lock_guard<std::mutex> g{mu_};
    threads_.insert(std::this_thread::get_id());
    ++syncs_;
    return outcome_;
  }
  expected<env_stats> stats() override { return env_stats{}; }
  const std::string& path() const noexcept override { return path_; }
  bool sync_from_any_thread() const noexcept override { return true; }

  int syncs() const {
    std::lock_guard<std::mutex> g{mu_};
    return syncs_;
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> g{mu_};
    return threads_;
  }

private:
  status outcome_;
  std::string path_ = "recording";
  mutable std::mutex mu_;
  std::set<std::thread::id> threads_;
  int syncs_ = 0;
};

} // namespace

BOOST_AUTO_TEST_SUITE(background_syncer_tests)

BOOST_AUTO_TEST_CASE(a_job_syncs_on_a_sync_thread_and_reports_its_outcome) {
  background_syncer syncer{2};
  auto ok = std::make_shared<recording_env>();
  auto bad = std::make_shared<recording_env>(make_error(errc::io_error, "EIO"));
  std::promise<status> a, b;
  syncer.run([ok] { return ok->sync(); }, [&a](status s) { a.set_value(std::move(s)); });
  syncer.run([bad] { return bad->sync(); }, [&b](status s) { b.set_value(std::move(s)); });
  BOOST_CHECK(a.get_future().get());
  auto failed = b.get_future().get();
  BOOST_REQUIRE(!failed);
  BOOST_CHECK(failed.err().code() == errc::io_error);
  BOOST_CHECK_EQUAL(ok->syncs(), 1);
  BOOST_CHECK(ok->threads().count(std::this_thread::get_id()) == 0);
}

BOOST_AUTO_TEST_CASE(jobs_queued_at_destruction_still_run) {
  auto env = std::make_shared<recording_env>();
  std::atomic<int> done{0};
  {
    background_syncer syncer{1};
    for (int i = 0; i < 50; ++i)
      syncer.run([env] { return env->sync(); }, [&done](status s) {
        if (s)
          ++done;
      });
  }
  BOOST_CHECK_EQUAL(done.load(), 50);
  BOOST_CHECK_EQUAL(env->syncs(), 50);
}

BOOST_AUTO_TEST_CASE(many_jobs_spread_over_the_threads_and_each_runs_once) {
  auto env = std::make_shared<recording_env>();
  std::atomic<int> done{0};
  {
    background_syncer syncer{4};
    for (int i = 0; i < 400; ++i)
      syncer.run([env] { return env->sync(); }, [&done](status) { ++done; });
  }
  BOOST_CHECK_EQUAL(done.load(), 400);
  BOOST_CHECK_EQUAL(env->syncs(), 400);
  BOOST_CHECK_LE(env->threads().size(), 4u);
}

BOOST_AUTO_TEST_SUITE_END()
