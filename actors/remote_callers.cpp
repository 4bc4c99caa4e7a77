#include "actors/remote_callers.hpp"

#include <map>
#include <utility>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/shard_host.hpp"
#include "server/shard_inbox.hpp"

namespace tally {

namespace {

using sweep_atom = caf::atom_constant<caf::atom("rc_sweep")>;

// A call handed to a caller actor by its shard (never leaves the node).
struct remote_call_msg {
  caf::actor target;
  caf::atom_value kind;
  std::string bytes;
  remote_reply_fn done;
};

} // namespace
} // namespace tally

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tally::remote_call_msg)

namespace tally {

namespace {

struct caller_state {
  struct pending_call {
    remote_reply_fn done;
    std::chrono::steady_clock::time_point deadline;
  };
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, pending_call> pending;
  std::chrono::milliseconds timeout{10000};
  bool sweep_scheduled = false;
  static inline const char* name = "remote_caller";
};

using caller_self = caf::stateful_actor<caller_state, hosted_actor>*;

void schedule_sweep(caller_self self) {
  auto& st = self->state;
  if (st.sweep_scheduled || st.pending.empty())
    return;
  st.sweep_scheduled = true;
  self->delayed_send(self, remote_callers::sweep_period, sweep_atom::value);
}

caf::behavior remote_caller(caller_self self, std::chrono::milliseconds timeout) {
  self->state.timeout = timeout;
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto pending = std::move(self->state.pending);
    self->state.pending.clear();
    for (auto& [id, c] : pending)
      c.done(make_error(errc::unavailable, "node shutting down"));
    self->quit(msg.reason);
  });
  return {
    [self](remote_call_msg& m) {
      auto& st = self->state;
      const auto id = st.next_id++;
      st.pending.emplace(id, caller_state::pending_call{
                               std::move(m.done),
                               std::chrono::steady_clock::now() + st.timeout});
      self->send(m.target, p_call_atom::value, id, m.kind, std::move(m.bytes));
      schedule_sweep(self);
    },
    [self](p_reply_atom, std::uint64_t id, std::string& bytes) {
      auto& st = self->state;
      auto i = st.pending.find(id);
      if (i == st.pending.end())
        return; // answered after its deadline: its caller has moved on
      auto done = std::move(i->second.done);
      st.pending.erase(i);
      done(std::move(bytes));
    },
    [self](sweep_atom) {
      auto& st = self->state;
      st.sweep_scheduled = false;
      const auto now = std::chrono::steady_clock::now();
      std::vector<remote_reply_fn> overdue;
      for (auto i = st.pending.begin(); i != st.pending.end();) {
        if (i->second.deadline <= now) {
          overdue.push_back(std::move(i->second.done));
          i = st.pending.erase(i);
        } else {
          ++i;
        }
      }
      for (auto& done : overdue)
        done(make_error(errc::timeout, "a partition did not answer in time"));
      schedule_sweep(self);
    },
  };
}

} // namespace

remote_callers::remote_callers(caf::actor_system& sys,
                               const std::vector<std::shared_ptr<caf::execution_unit>>& units,
                               const std::vector<std::shared_ptr<shard_inbox>>& inboxes,
                               std::chrono::milliseconds timeout) {
  for (std::size_t i = 0; i < units.size(); ++i) {
    hosted_on scope{units[i]};
    callers_.push_back(sys.spawn(remote_caller, timeout));
    inboxes_.push_back(i < inboxes.size() ? inboxes[i].get() : nullptr);
  }
  if (callers_.empty()) {
    callers_.push_back(sys.spawn(remote_caller, timeout));
    inboxes_.push_back(nullptr);
  }
}

void remote_callers::call(const caf::actor& target, caf::atom_value kind, std::string bytes,
                          remote_reply_fn done) const {
  std::size_t i = 0;
  for (std::size_t j = 0; j < inboxes_.size(); ++j)
    if (inboxes_[j] && inboxes_[j]->on_own_thread())
      i = j;
  caf::anon_send(callers_[i], remote_call_msg{target, kind, std::move(bytes), std::move(done)});
}

} // namespace tally
