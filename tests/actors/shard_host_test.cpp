// actors/shard_host.hpp: an actor hosted on a shard runs only on that
// shard's thread, whoever sends to it (another thread, the CAF scheduler, a
// response to its own request), and a message the shard's own thread sends
// to it is handled in the same turn, without waking the shard through its
// eventfd. The test thread is the shard: it drives the inbox by hand.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <thread>

#include <poll.h>

#include <caf/all.hpp>

#include "actors/shard_host.hpp"
#include "actors/spawn_helper.hpp"
#include "server/shard_inbox.hpp"

using namespace tally;

namespace {

using ping_atom = caf::atom_constant<caf::atom("t_ping")>;
using ask_atom = caf::atom_constant<caf::atom("t_ask")>;

bool wakes(const shard_inbox& in) {
  pollfd p{in.fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

struct shard_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::shared_ptr<shard_inbox> inbox = std::make_shared<shard_inbox>();
  std::shared_ptr<caf::execution_unit> unit;
  const std::thread::id shard_thread = std::this_thread::get_id();

  shard_fixture() {
    BOOST_REQUIRE(inbox->open());
    inbox->bind_to_this_thread();
    unit = std::make_shared<shard_unit>(sys, inbox);
  }

  // The shard's loop, by hand: waits for the eventfd (at most 1 ms a turn)
  // and runs what is ready, until `done` or 5,000 turns.
  template <class Pred>
  bool turn_until(Pred done) {
    for (int i = 0; i < 5000 && !done(); ++i) {
      pollfd p{inbox->fd(), POLLIN, 0};
      bool woken = ::poll(&p, 1, inbox->has_local() ? 0 : 1) == 1;
      inbox->run_ready(woken);
    }
    return done();
  }
};

// Records the thread of every message it handles.
struct probe {
  std::atomic<int> handled{0};
  std::atomic<bool> off_shard{false};
  std::atomic<bool> answered{false};
};

caf::behavior probing(hosted_actor* self, std::shared_ptr<probe> p, std::thread::id shard) {
  if (std::this_thread::get_id() != shard)
    p->off_shard = true; // the behavior is made on launch
  return {
    [p, shard](ping_atom) {
      if (std::this_thread::get_id() != shard)
        p->off_shard = true;
      ++p->handled;
    },
    [self, p, shard](ask_atom, caf::actor helper) {
      self->request(helper, std::chrono::seconds{5}, ping_atom::value)
        .then([p, shard](int) {
          if (std::this_thread::get_id() != shard)
            p->off_shard = true;
          p->answered = true;
        });
    },
  };
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(shard_host_tests, shard_fixture)

BOOST_AUTO_TEST_CASE(a_hosted_actor_runs_only_on_its_shard_whoever_sends) {
  auto p = std::make_shared<probe>();
  caf::actor a;
  {
    hosted_on scope{unit};
    a = sys.spawn(probing, p, shard_thread);
  }
  // From another thread: the shard wakes through its eventfd.
  std::thread other([&] {
    for (int i = 0; i < 10; ++i)
      caf::anon_send(a, ping_atom::value);
  });
  other.join();
  BOOST_CHECK(turn_until([&] { return p->handled == 10; }));
  // A request to an actor on CAF's scheduler: its response comes back to
  // the shard too.
  auto helper = spawn_self_only(sys, [](caf::event_based_actor*) -> caf::behavior {
    return {[](ping_atom) { return 42; }};
  });
  caf::anon_send(a, ask_atom::value, helper);
  BOOST_CHECK(turn_until([&] { return p->answered.load(); }));
  BOOST_CHECK(!p->off_shard);
  caf::anon_send_exit(helper, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  turn_until([&] { return false; }); // let the exit run (bounded)
}

BOOST_AUTO_TEST_CASE(a_message_the_shard_sends_itself_is_handled_in_the_same_turn) {
  auto p = std::make_shared<probe>();
  caf::actor a;
  {
    hosted_on scope{unit};
    a = sys.spawn(probing, p, shard_thread);
  }
  BOOST_REQUIRE(turn_until([&] { return !inbox->has_local(); })); // launched
  // As a client request read by the shard: sent from the shard's thread.
  inbox->post([&] { caf::anon_send(a, ping_atom::value); });
  BOOST_CHECK(!wakes(*inbox));
  BOOST_CHECK(!inbox->run_ready(false)); // one turn
  BOOST_CHECK_EQUAL(p->handled.load(), 1);
  BOOST_CHECK(!wakes(*inbox)); // no eventfd write on the way
  BOOST_CHECK(!p->off_shard);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  inbox->run_ready(false);
}

BOOST_AUTO_TEST_CASE(an_actor_spawned_outside_a_hosted_scope_runs_as_usual) {
  auto p = std::make_shared<probe>();
  auto a = sys.spawn(probing, p, shard_thread); // no scope: CAF's scheduler
  caf::anon_send(a, ping_atom::value);
  // The shard (this thread) never turns: a scheduler thread handles it.
  for (int i = 0; i < 5000 && p->handled == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  BOOST_CHECK_EQUAL(p->handled.load(), 1);
  BOOST_CHECK(p->off_shard);
  BOOST_CHECK(!inbox->has_local());
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
