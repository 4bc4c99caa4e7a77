#include "actors/undecided_resolution.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/wire.hpp"
#include "common/log.hpp"
#include "replication/placement.hpp"

namespace tally {

namespace {

// This node's copy of partition p that may hold undecided transactions:
// the owner's copy while it is open, else (n_val > 1) its replica copy.
// Null when it holds none. (A copy that is not primary answers p_stale
// with nothing: its primary resolves.)
caf::actor copy_here(mem_self self, std::uint32_t p) {
  auto& st = self->state;
  if (st.local[p] && st.closed.count(p) == 0)
    return st.local[p];
  return p < st.copies.size() ? st.copies[p] : caf::actor{};
}

// How long one question of an attempt may take: a lost one (a link that
// dropped again) is asked again at the next attempt, a second later.
std::chrono::milliseconds ask_timeout(mem_self self) {
  return std::min(self->state.cfg.request_timeout, std::chrono::milliseconds{1000});
}

std::uint64_t request_timeout_us(mem_self self) {
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(self->state.cfg.request_timeout)
      .count());
}

// True when the run of the node that coordinated `u` (the tx id's origin)
// is over, so nothing can commit `u` any more except what its journals
// already hold: its coordinator's node (named by the prepare record) is up
// with another incarnation, was removed or has left, or is this node (a
// previous run). For a prepare that names no coordinator (written before
// issue 13): every member is up and none has that incarnation.
bool coordinator_run_over(mem_self self, const undecided_tx& u) {
  auto& st = self->state;
  if (u.tx.origin == st.cfg.incarnation)
    return false;
  if (!u.coordinator.empty()) {
    if (u.coordinator == self_id(self))
      return true;
    auto m = st.ring->members().find(u.coordinator);
    if (m == st.ring->members().end())
      return false; // not known here yet (a joiner): it may coordinate
    if (gone(m->second.status))
      return true;
    auto i = st.peers.find(u.coordinator);
    return i != st.peers.end() && i->second.up && i->second.incarnation != 0
           && i->second.incarnation != u.tx.origin;
  }
  for (const auto& [id, info] : st.ring->members()) {
    if (id == self_id(self) || gone(info.status))
      continue;
    auto i = st.peers.find(id);
    if (i == st.peers.end() || !i->second.up)
      return false; // it might be the coordinator's node
    if (i->second.incarnation == u.tx.origin)
      return false;
  }
  return true;
}

// True when no coordinator of `u` can still send a commit: its run is
// over, or the transaction is older than three request timeouts (a
// coordinator commits only after every prepare answered, within one request
// timeout of sending them, and its commit records land at once, or, held by
// a partition moving to another node, within one more; past that it only
// aborts).
bool coordinator_gone(mem_self self, const undecided_tx& u) {
  auto now = wall_clock_us();
  if (now > u.prepare_time && now - u.prepare_time > 3 * request_timeout_us(self))
    return true;
  return coordinator_run_over(self, u);
}

// Whether the coordinator of `u` is asked to decide now (force): see
// decision_forced. The nodes involved: its coordinator's and, for each
// participant, the node its route names now and, with replication, every
// node of its copy set: a failover moves the route off the node that went
// down, and a prepare passed on to that node by a replica was lost there
// (a stop 31 CI run: the coordinator, asked unforced, answered "still
// collecting" until its call timed out, 10 s). Not named: every peer.
bool force_decision(mem_self self, const undecided_tx& u) {
  auto& st = self->state;
  std::vector<std::uint64_t> down;
  auto down_at = [&](const node_id& n) {
    auto i = st.peers.find(n);
    down.push_back(i == st.peers.end() ? 0 : i->second.down_at_us);
  };
  if (u.coordinator.empty() || u.participants.empty()) {
    for (const auto& [id, pe] : st.peers)
      down.push_back(pe.down_at_us);
  } else {
    down_at(u.coordinator);
    auto table = st.routes->load();
    for (auto q : u.participants) {
      if (q < table->size())
        down_at((*table)[q].node);
      if (replicated(self) && q < st.cfg.q)
        for (const auto& n : copy_nodes(*st.ring, q))
          down_at(n);
    }
  }
  return decision_forced(wall_clock_us(), u.prepare_time, request_timeout_us(self),
                         st.started_us, down);
}

using resolution_key = std::pair<std::uint32_t, tx_id>;

// One attempt at resolving one transaction: its questions and what the
// answers said so far.
struct attempt {
  resolution_key key;
  undecided_tx u;
  std::uint64_t id = 0;
  std::size_t left = 0;        // questions not answered yet
  bool complete = true;        // every participant answered
  bool pruned = false;         // one cannot prove the absence of a decision
  bool coordinator_done = false; // the coordinator does not know it any more
  bool coordinator_silent = false; // no coordinator to ask, or no answer
  bool concluded = false;      // a decision was taken
};

// Sends the decision on `key` to its partition; on failure the transaction
// is asked about again at the next attempt. A partition that no longer
// holds it prepared (its coordinator's own decision got there first)
// answers not_found: done too.
void decide(mem_self self, const resolution_key& key, caf::atom_value kind,
            std::string bytes, bool on_coordinators_word = false) {
  auto& st = self->state;
  auto copy = copy_here(self, key.first);
  if (!copy) {
    st.resolving.erase(key); // moved away: its new owner resolves it
    return;
  }
  self->request(copy, st.cfg.request_timeout, kind, std::move(bytes))
    .then(
      [self, key, on_coordinators_word](std::string& reply) {
        auto a = decode_wire<part_ack>(reply);
        auto& st = self->state;
        if (a && (!a->err || a->err->code() == errc::not_found)) {
          st.resolving.erase(key);
          return;
        }
        if (a && a->err->code() == errc::aborted) {
          // Aborted here behind a fence (a commit on the coordinator's
          // word came after it) is expected; a split decision never is.
          const bool split = a->err->message().find("split decision") != std::string::npos;
          log(split ? log_level::error : log_level::info, "partition ", key.first, ": ",
              key.second, ": ", a->err->to_string());
          st.resolving.erase(key);
          return;
        }
        const bool fenced = a && a->err->message().find("fenced") != std::string::npos;
        log(fenced ? log_level::info : log_level::warn, "partition ", key.first, ": deciding ",
            key.second, " failed: ", a ? a->err->to_string() : a.err().to_string());
        if (auto i = st.resolving.find(key); i != st.resolving.end()) {
          i->second.deciding = false;
          if (fenced && on_coordinators_word)
            i->second.coordinator_word_refused = true;
        }
      },
      [self, key](caf::error&) {
        if (auto i = self->state.resolving.find(key); i != self->state.resolving.end())
          i->second.deciding = false;
      });
}

// Applies the decision an answer of attempt `a` brought (once per attempt).
// A commit `proven` by another participant's commit record is taken by a
// fenced partition too; one on the coordinator's word is not (a fence
// round may have aborted the transaction elsewhere since: docs/
// RELIABILITY.md, "The participant fence").
void conclude(mem_self self, const std::shared_ptr<attempt>& a, bool commit,
              std::uint64_t commit_time, const char* why, bool proven = false) {
  if (a->concluded)
    return;
  a->concluded = true;
  auto& st = self->state;
  auto i = st.resolving.find(a->key);
  if (i == st.resolving.end() || i->second.attempt != a->id)
    return;
  i->second.deciding = true;
  const auto& u = a->u;
  if (commit) {
    log(log_level::info, "partition ", u.p, ": ", u.tx, " committed at ", commit_time, " (",
        why, "): committed here too");
    decide(self, a->key, part_commit_atom::value,
           encode_wire(part_commit_req{u.tx, commit_time, proven}), !proven);
  } else {
    log(log_level::info, "partition ", u.p, ": ", u.tx, " ", why, ": aborted");
    decide(self, a->key, part_abort_atom::value, encode_wire(part_abort_req{u.tx}));
  }
}

void fence_round(mem_self self, const std::shared_ptr<attempt>& a);

// An answer of attempt `a` came (or its question failed); after the last
// one, the journals decide if no answer did.
void answered(mem_self self, const std::shared_ptr<attempt>& a) {
  if (--a->left > 0)
    return;
  auto& st = self->state;
  auto i = st.resolving.find(a->key);
  if (i == st.resolving.end() || i->second.attempt != a->id)
    return;
  auto& r = i->second;
  r.asking = false;
  if (a->concluded)
    return;
  if (a->complete && !a->pruned && (a->coordinator_done || coordinator_gone(self, r.u)))
    return conclude(self, a, false, 0,
                    "decided at no participant, and its coordinator cannot commit it");
  // Its coordinator is out of reach and may still commit (paused, cut
  // off): the participants decide without it, behind a fence.
  if (a->complete && !a->pruned && a->coordinator_silent && !r.u.participants.empty()
      && force_decision(self, r.u))
    return fence_round(self, a);
  if (a->pruned && !r.warned) {
    r.warned = true;
    log(log_level::warn, "partition ", r.u.p, ": ", r.u.tx, " prepared at ", r.u.prepare_time,
        " cannot be decided yet: a participant has dropped decisions that old, so its "
        "\"no decision\" proves nothing; it stays prepared until its coordinator answers");
  }
}

// The participant fence (docs/RELIABILITY.md, "The participant fence"):
// every participant of `a`'s transaction, this partition included, is asked
// to fence it. Each answers with its decision, or "fenced" once a fence
// record is on w of its copies; a fenced participant takes no commit from
// the coordinator any more. A commit anywhere commits it here (proven: a
// fenced partition takes it); an abort anywhere aborts it; "fenced" at
// every participant, each able to prove it holds no decision, aborts it: no
// commit can reach any of them any more, so the coordinator acknowledged
// nothing (it answers its client only once every participant took its
// commit). Anything else waits for the next attempt.
void fence_round(mem_self self, const std::shared_ptr<attempt>& a) {
  auto& st = self->state;
  auto i = st.resolving.find(a->key);
  if (i == st.resolving.end() || i->second.attempt != a->id)
    return;
  const auto& u = a->u;
  auto table = st.routes->load();
  std::vector<caf::actor> asks;
  for (auto q : u.participants) {
    caf::actor who = q == u.p ? copy_here(self, q)
                              : (q < table->size() ? (*table)[q].handle : caf::actor{});
    if (!who)
      return; // down or moving: the next attempt tries again
    asks.push_back(std::move(who));
  }
  i->second.asking = true; // no other attempt while the fences are out
  log(log_level::info, "partition ", u.p, ": ", u.tx,
      ": its coordinator is out of reach; fencing it at ", asks.size(), " participant(s)");
  struct round {
    std::size_t left = 0;
    bool all_fenced = true;
  };
  auto rd = std::make_shared<round>();
  rd->left = asks.size();
  auto one_done = [self, a, rd] {
    if (--rd->left > 0)
      return;
    auto& st = self->state;
    auto i = st.resolving.find(a->key);
    if (i == st.resolving.end() || i->second.attempt != a->id)
      return;
    i->second.asking = false;
    if (!a->concluded && rd->all_fenced)
      conclude(self, a, false, 0, "fenced at every participant with no decision");
  };
  const auto tx_bytes = encode_wire(u.tx);
  for (auto& who : asks)
    self->request(who, st.cfg.request_timeout, part_fence_atom::value, tx_bytes)
      .then(
        [self, a, rd, one_done](std::string& bytes) {
          auto f = decode_wire<part_find_resp>(bytes);
          if (!f || f->err) {
            rd->all_fenced = false;
          } else if (f->commit_time != 0) {
            rd->all_fenced = false;
            conclude(self, a, true, f->commit_time, "at a participant asked to fence it",
                     true);
          } else if (f->aborted) {
            rd->all_fenced = false;
            conclude(self, a, false, 0, "aborted at a participant asked to fence it");
          } else if (!f->fenced || f->folded_through >= a->u.prepare_time) {
            rd->all_fenced = false; // its "no decision" proves nothing
          }
          one_done();
        },
        [rd, one_done](caf::error&) {
          rd->all_fenced = false;
          one_done();
        });
}

// Asks the node whose run coordinates `u` (this one, or the peer its
// prepare names, up with that incarnation) how its two-phase commit of `u`
// ended; `done` gets nullopt when there is no one to ask or no answer.
void ask_coordinator(mem_self self, const undecided_tx& u, bool force,
                     std::function<void(std::optional<coordinator_answer>)> done) {
  auto& st = self->state;
  if (u.tx.origin == st.cfg.incarnation) {
    if (!st.cfg.coordinating)
      return done(std::nullopt);
    return done(st.cfg.coordinating->decide(u.tx, force));
  }
  caf::actor target;
  for (const auto& [id, pe] : st.peers) {
    if (!u.coordinator.empty() && id != u.coordinator)
      continue;
    if (pe.up && pe.membership && pe.incarnation == u.tx.origin) {
      target = pe.membership;
      break;
    }
  }
  if (!target)
    return done(std::nullopt);
  self->request(target, ask_timeout(self), tx_decide_atom::value,
                encode_wire(tx_decide_req{u.tx, force}))
    .then(
      [done](std::string& bytes) {
        auto r = decode_wire<tx_decide_resp>(bytes);
        if (!r)
          return done(std::nullopt);
        done(coordinator_answer{static_cast<coordinator_state>(r->state), r->commit_time});
      },
      [done](caf::error&) { done(std::nullopt); });
}

// One attempt at resolving the transaction of `key`: every participant
// and the coordinator are asked at once.
void ask(mem_self self, const resolution_key& key) {
  auto& st = self->state;
  auto it = st.resolving.find(key);
  if (it == st.resolving.end())
    return;
  if (!copy_here(self, key.first)) {
    st.resolving.erase(it); // moved away: its new owner resolves it
    return;
  }
  auto& r = it->second;
  r.asking = true;
  r.attempt = ++st.resolution_attempts;
  auto a = std::make_shared<attempt>();
  a->key = key;
  a->u = r.u;
  a->id = r.attempt;
  const auto& u = a->u;
  auto table = st.routes->load();
  std::vector<caf::actor> asks;
  auto consider = [&](std::uint32_t q) {
    if (q == u.p)
      return;
    if (q >= table->size() || !(*table)[q].handle)
      a->complete = false; // down or moving: it may hold the decision
    else
      asks.push_back((*table)[q].handle);
  };
  if (u.participants.empty()) { // not named (an old prepare): all of them
    for (std::uint32_t q = 0; q < table->size(); ++q)
      consider(q);
  } else {
    for (auto q : u.participants)
      consider(q);
  }
  a->left = asks.size() + 1; // and the coordinator
  const auto tx_bytes = encode_wire(u.tx);
  for (auto& who : asks)
    self->request(who, ask_timeout(self), part_find_atom::value, tx_bytes)
      .then(
        [self, a](std::string& bytes) {
          auto f = decode_wire<part_find_resp>(bytes);
          if (!f || f->err)
            a->complete = false;
          else if (f->commit_time != 0)
            conclude(self, a, true, f->commit_time, "at another participant", true);
          else if (f->aborted)
            conclude(self, a, false, 0, "aborted at another participant");
          else if (f->folded_through >= a->u.prepare_time)
            a->pruned = true;
          answered(self, a);
        },
        [self, a](caf::error&) {
          a->complete = false;
          answered(self, a);
        });
  // Last: a local coordinator answers at once, and may finish the attempt.
  const bool word_refused = r.coordinator_word_refused;
  ask_coordinator(self, u, force_decision(self, u),
                  [self, a, word_refused](std::optional<coordinator_answer> ans) {
                    // Its "committed" was refused behind a fence: the
                    // participants decide, as if it were silent.
                    if (ans && word_refused && ans->state == coordinator_state::committed)
                      ans.reset();
                    if (ans) {
                      switch (ans->state) {
                        case coordinator_state::committed:
                          conclude(self, a, true, ans->commit_time, "by its coordinator");
                          break;
                        case coordinator_state::aborted:
                          conclude(self, a, false, 0, "aborted by its coordinator");
                          break;
                        case coordinator_state::unknown:
                          a->coordinator_done = true;
                          break;
                        case coordinator_state::collecting:
                          break;
                      }
                    } else {
                      a->coordinator_silent = true;
                    }
                    answered(self, a);
                  });
}

// How often, and for how long after a link changed, prepared transactions
// are looked for: about a second sooner than the regular tick finds them.
constexpr std::chrono::milliseconds fast_tick{250};
constexpr std::chrono::seconds fast_ticking_for{10};

// Starts resolving `u` (once) and asks at once.
void track_undecided(mem_self self, const undecided_tx& u) {
  auto& st = self->state;
  resolution_key key{u.p, u.tx};
  if (!st.resolving.emplace(key, resolution{u}).second)
    return;
  log(log_level::info, "partition ", u.p, ": ", u.tx,
      " prepared over a second ago and not decided: asking ",
      u.participants.empty() ? std::string{"every partition"}
                             : std::to_string(u.participants.size()) + " participant(s)",
      " and its coordinator");
  ask(self, key);
}

} // namespace

bool decision_forced(std::uint64_t now_us, std::uint64_t prepare_us, std::uint64_t limit_us,
                     std::uint64_t run_started_us, const std::vector<std::uint64_t>& down_us) {
  if (now_us > prepare_us && now_us - prepare_us > limit_us)
    return true;
  // Prepared before this run started: recovered, its messages lost.
  if (prepare_us <= run_started_us)
    return true;
  for (auto at : down_us)
    if (at != 0 && at + limit_us >= prepare_us)
      return true;
  return false;
}

void resolve_all(mem_self self, bool again) {
  std::vector<resolution_key> keys;
  for (const auto& [key, r] : self->state.resolving)
    if ((again || !r.asking) && !r.deciding)
      keys.push_back(key);
  for (const auto& key : keys)
    ask(self, key);
}

void link_changed(mem_self self) {
  auto& st = self->state;
  st.link_changed = std::chrono::steady_clock::now();
  if (!st.fast_ticking) {
    st.fast_ticking = true;
    self->delayed_send(self, fast_tick, resolve_tick_atom::value);
  }
}

void collect_stale(mem_self self, std::uint64_t quiet_us) {
  auto& st = self->state;
  auto now = wall_clock_us();
  if (now <= quiet_us)
    return;
  auto before = encode_wire(std::uint64_t{now - quiet_us});
  for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
    auto copy = copy_here(self, p);
    if (!copy)
      continue;
    self->request(copy, st.cfg.request_timeout, part_stale_atom::value, before)
      .then(
        [self, p](std::string& bytes) {
          auto r = decode_wire<part_stale_resp>(bytes);
          if (!r || r->err)
            return;
          for (std::size_t i = 0; i < r->txs.size() && i < r->prepare_times.size(); ++i) {
            undecided_tx u{p, r->txs[i], r->prepare_times[i], {}, {}};
            if (i < r->participants.size())
              u.participants = std::move(r->participants[i]);
            if (i < r->coordinators.size())
              u.coordinator = std::move(r->coordinators[i]);
            track_undecided(self, u);
          }
        },
        [](caf::error&) {});
  }
}

void resolve_tick(mem_self self) {
  auto& st = self->state;
  if (std::chrono::steady_clock::now() - st.link_changed >= fast_ticking_for) {
    st.fast_ticking = false;
    return;
  }
  collect_stale(self, std::chrono::microseconds{fast_tick}.count());
  resolve_all(self);
  self->delayed_send(self, fast_tick, resolve_tick_atom::value);
}

} // namespace tally
