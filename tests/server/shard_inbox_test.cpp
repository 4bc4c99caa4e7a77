// server/shard_inbox.hpp: tasks posted from other threads wake the shard
// once per batch; tasks the shard posts to itself cost no wake-up and run
// in the same turn; a task that keeps posting cannot starve the I/O; a
// closed inbox drops what it holds and what comes later.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include <poll.h>

#include "server/shard_inbox.hpp"

using namespace tally;

namespace {

// True when the inbox's eventfd is readable now (the shard would wake).
bool wakes(const shard_inbox& in) {
  pollfd p{in.fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shard_inbox_tests)

BOOST_AUTO_TEST_CASE(posts_from_another_thread_wake_the_shard_once_and_run_together) {
  shard_inbox in;
  BOOST_REQUIRE(in.open());
  in.bind_to_this_thread();
  std::vector<int> ran;
  std::thread other([&] {
    BOOST_CHECK(!in.on_own_thread());
    for (int i = 0; i < 3; ++i)
      in.post([&ran, i] { ran.push_back(i); });
  });
  other.join();
  BOOST_CHECK(wakes(in));
  BOOST_CHECK(ran.empty()); // nothing runs until the shard takes them
  BOOST_CHECK(!in.run_ready(true));
  BOOST_CHECK_EQUAL(ran.size(), 3u);
  BOOST_CHECK_EQUAL(ran[0], 0);
  BOOST_CHECK_EQUAL(ran[2], 2);
  BOOST_CHECK(!wakes(in)); // the eventfd was read with the batch
}

BOOST_AUTO_TEST_CASE(posts_from_its_own_thread_need_no_wake_up_and_run_in_the_same_turn) {
  shard_inbox in;
  BOOST_REQUIRE(in.open());
  in.bind_to_this_thread();
  BOOST_CHECK(in.on_own_thread());
  int steps = 0;
  // A task that posts a task (an actor's reply completing a request): both
  // run in one run_ready call.
  in.post([&] {
    ++steps;
    in.post([&] { ++steps; });
  });
  BOOST_CHECK(!wakes(in));
  BOOST_CHECK(in.has_local());
  BOOST_CHECK(!in.run_ready(false));
  BOOST_CHECK_EQUAL(steps, 2);
  BOOST_CHECK(!in.has_local());
}

BOOST_AUTO_TEST_CASE(a_task_that_keeps_posting_leaves_room_for_io_after_the_round_limit) {
  shard_inbox in;
  BOOST_REQUIRE(in.open());
  in.bind_to_this_thread();
  int runs = 0;
  std::function<void()> again = [&] {
    ++runs;
    in.post(again);
  };
  in.post(again);
  BOOST_CHECK(in.run_ready(false, 5)); // still work to do: do not sleep
  BOOST_CHECK_EQUAL(runs, 5);
  BOOST_CHECK(in.run_ready(false, 2));
  BOOST_CHECK_EQUAL(runs, 7);
  in.close();
  BOOST_CHECK(!in.run_ready(false, 2)); // closed: the rest is dropped
}

BOOST_AUTO_TEST_CASE(a_closed_inbox_drops_waiting_and_later_tasks) {
  shard_inbox in;
  BOOST_REQUIRE(in.open());
  std::atomic<int> ran{0};
  std::thread other([&] { in.post([&] { ++ran; }); });
  other.join();
  in.close();
  std::thread later([&] { in.post([&] { ++ran; }); });
  later.join();
  in.bind_to_this_thread();
  in.post([&] { ++ran; });
  BOOST_CHECK(!in.run_ready(true));
  BOOST_CHECK_EQUAL(ran.load(), 0);
}

BOOST_AUTO_TEST_SUITE_END()
