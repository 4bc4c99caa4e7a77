// actors/remote_callers.hpp: a call reaches its target as (p_call, id, kind,
// bytes) and its answer (p_reply, id, bytes) reaches the caller's function;
// a target that never answers fails the call with errc::timeout once the
// request timeout has passed (found by the caller's periodic sweep, no
// timer per call); an answer after that is dropped; stopping the caller
// fails what is still pending. The targets are local stand-ins for remote
// partitions (the messages are the ones a peer node's partition gets).
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/remote_callers.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
};

// Answers every call with its kind and bytes, reversed.
// (The unused argument: CAF 0.17 dereferences a null argument tuple for a
// function actor without arguments; actors/spawn_helper.hpp.)
caf::behavior echoing(caf::event_based_actor* self, caf::unit_t) {
  return {[self](p_call_atom, std::uint64_t id, caf::atom_value kind, std::string& bytes) {
    std::string out(bytes.rbegin(), bytes.rend());
    self->send(caf::actor_cast<caf::actor>(self->current_sender()), p_reply_atom::value, id,
               to_string(kind) + ":" + out);
  }};
}

// Holds every p_read call unanswered and echoes p_commit calls; asked
// (p_reply), it answers every held call late, then says so.
caf::behavior silent(caf::event_based_actor* self,
                     std::shared_ptr<std::vector<std::pair<caf::actor, std::uint64_t>>> held) {
  return {
    [self, held](p_call_atom, std::uint64_t id, caf::atom_value kind, std::string& bytes) {
      auto from = caf::actor_cast<caf::actor>(self->current_sender());
      if (kind == part_read_atom::value)
        held->emplace_back(from, id);
      else
        self->send(from, p_reply_atom::value, id, bytes);
    },
    [self, held](p_reply_atom) {
      for (auto& [to, id] : *held)
        self->send(to, p_reply_atom::value, id, std::string{"late"});
      return true;
    },
  };
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(remote_callers_tests, fixture)

BOOST_AUTO_TEST_CASE(a_call_reaches_its_target_and_its_answer_the_caller) {
  remote_callers callers{sys, {}, {}, 2s};
  auto target = sys.spawn(echoing, caf::unit);
  std::promise<expected<std::string>> a, b;
  callers.call(target, part_read_atom::value, "abc", [&a](expected<std::string> r) {
    a.set_value(std::move(r));
  });
  callers.call(target, part_commit_atom::value, "xy", [&b](expected<std::string> r) {
    b.set_value(std::move(r));
  });
  auto ra = a.get_future().get();
  auto rb = b.get_future().get();
  BOOST_REQUIRE(ra);
  BOOST_REQUIRE(rb);
  BOOST_CHECK_EQUAL(*ra, "p_read:cba");
  BOOST_CHECK_EQUAL(*rb, "p_commit:yx");
  for (auto& c : callers.actors())
    caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(an_unanswered_call_times_out_and_a_late_answer_is_dropped) {
  const auto timeout = 150ms;
  remote_callers callers{sys, {}, {}, timeout};
  auto held = std::make_shared<std::vector<std::pair<caf::actor, std::uint64_t>>>();
  auto target = sys.spawn(silent, held);
  std::atomic<int> calls{0};
  std::promise<expected<std::string>> done;
  const auto sent = std::chrono::steady_clock::now();
  callers.call(target, part_read_atom::value, "q", [&](expected<std::string> r) {
    if (++calls == 1)
      done.set_value(std::move(r));
  });
  auto f = done.get_future();
  BOOST_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  const auto took = std::chrono::steady_clock::now() - sent;
  auto r = f.get();
  BOOST_REQUIRE(!r);
  BOOST_CHECK(r.err().code() == errc::timeout);
  // Not before the timeout, and within one sweep period after it (plus
  // scheduling slack on a loaded machine).
  BOOST_CHECK(took >= timeout);
  BOOST_CHECK(took < timeout + remote_callers::sweep_period + 2s);
  // The late answer finds no call: the function is not run twice. The
  // late answers are in the caller's mailbox once `silent` has answered
  // this request; a call made after that is answered after them.
  caf::scoped_actor self{sys};
  self->request(target, 10s, p_reply_atom::value).receive([](bool) {}, [](caf::error&) {});
  std::promise<expected<std::string>> after;
  callers.call(target, part_commit_atom::value, "z",
               [&after](expected<std::string> r) { after.set_value(std::move(r)); });
  auto fa = after.get_future();
  BOOST_REQUIRE(fa.wait_for(10s) == std::future_status::ready);
  BOOST_CHECK(fa.get());
  BOOST_CHECK_EQUAL(calls.load(), 1);
  for (auto& c : callers.actors())
    caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(stopping_the_callers_fails_the_pending_calls) {
  remote_callers callers{sys, {}, {}, 60s};
  auto held = std::make_shared<std::vector<std::pair<caf::actor, std::uint64_t>>>();
  auto target = sys.spawn(silent, held);
  std::promise<expected<std::string>> done;
  callers.call(target, part_read_atom::value, "q",
               [&](expected<std::string> r) { done.set_value(std::move(r)); });
  auto f = done.get_future();
  BOOST_CHECK(f.wait_for(200ms) == std::future_status::timeout);
  for (auto& c : callers.actors())
    caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  BOOST_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  auto r = f.get();
  BOOST_REQUIRE(!r);
  BOOST_CHECK(r.err().code() == errc::unavailable);
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
