#include "actors/partition_actor.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "common/log.hpp"
#include "ring/ring_state.hpp"
#include "actors/partition_core.hpp"
#include "actors/partition_replication.hpp"
#include "actors/shard_host.hpp"
#include "actors/wire.hpp"
#include "journal/background_syncer.hpp"
#include "journal/file_sync.hpp"

namespace tally {

namespace {

using flush_atom = caf::atom_constant<caf::atom("flush")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using timer_atom = caf::atom_constant<caf::atom("p_timer")>;
using expire_atom = caf::atom_constant<caf::atom("p_expire")>;
// (p_synced, upto, error text): a background sync of this partition's
// journal ended (empty text: it succeeded).
using synced_atom = caf::atom_constant<caf::atom("p_synced")>;
// A draining primary checks again whether it may fence its copy set
// (close_if_drained).
using fence_check_atom = caf::atom_constant<caf::atom("h_fencechk")>;

// How long a handoff waits for prepared transactions to commit or abort.
constexpr std::chrono::milliseconds drain_wait{2000};
// How long a draining primary tries to fence its copy set under the new
// view before it closes without (partition_replication::fence_for_handoff),
// and how often it looks again meanwhile. Closed without, its store keeps
// the set it led, and the new owner's first round is joint over that set
// (docs/REPLICATION.md, "Handoffs whose fence gave up"): waiting longer
// here only holds the partition's writes.
constexpr std::chrono::milliseconds handoff_fence_wait{2000};
constexpr std::chrono::milliseconds fence_recheck{20};
constexpr std::chrono::milliseconds fence_retry{200};
// At most this many requests wait at a copy for a leader (the rest are
// refused at once, as before there was a wait).
constexpr std::size_t max_awaiting_leader = 4096;

// Where an answer goes: the request's promise (request() from another
// actor, encoded as wire bytes), or the function of a part_*_call from the
// client server.
template <class Resp>
struct reply_to {
  caf::response_promise rp;
  std::function<void(Resp)> fn;

  void operator()(Resp r) {
    if (fn)
      fn(std::move(r));
    else
      rp.deliver(encode_wire(r));
  }
};
using prepare_reply = reply_to<part_time_resp>;

// A write answered after the flush that makes it durable: a prepare (or
// one-step commit) with its time, a commit with an ack, or a fence with
// "fenced" (fence_reply set: docs/RELIABILITY.md, "The participant fence").
struct waiting_write {
  bool is_ack = false;
  part_time_resp time;       // a prepare's answer when the flush succeeds
  prepare_reply prepared;    // !is_ack
  reply_to<part_ack> acked;  // is_ack
  std::optional<caf::response_promise> fence_reply;
  part_find_resp fenced;     // the fence's answer when the flush succeeds

  void answer(std::optional<error> err) {
    if (fence_reply) {
      if (err)
        fenced = part_find_resp{std::move(err), 0, 0};
      fence_reply->deliver(encode_wire(fenced));
    } else if (is_ack) {
      acked(part_ack{std::move(err)});
    } else {
      prepared(err ? part_time_resp{std::move(err), 0, 0} : time);
    }
  }
};

// A prepare that waits in partition_core for the outcome of another
// transaction holding one of its op ids (partition_core::take_ready).
struct parked_prepare {
  prepare_reply reply;
  bool two_phase = false;
};

// A read parked until the safe time reaches its snapshot.
struct waiting_read {
  part_read_req req;
  reply_to<part_read_resp> answer;
  std::chrono::steady_clock::time_point since;
};

// A request held while the partition is handed off (docs/CLUSTER.md,
// "Handoff"), forwarded to the new owner once it has everything; or held
// at a copy for a leader (partition_state::awaiting_leader).
struct deferred_request {
  caf::atom_value kind;
  std::string bytes;
  caf::response_promise rp;
  std::chrono::steady_clock::time_point since;
  bool passed_on; // came from another copy (part_fwd_atom): not passed on again
};

enum class partition_mode {
  serving,    // the normal case
  draining,   // a handoff waits for prepared transactions to finish:
              // new prepares are deferred, everything else is served
  closed,     // journal closed, files ready for the handoff: all deferred
  forwarding, // handed off: every request goes to `target`
};

// A request a replica passed on to its primary (divert), until the answer
// comes back or the primary it went to is no longer this copy's.
struct forwarded_request {
  caf::atom_value kind;
  caf::response_promise rp;
  caf::actor to;
};

struct partition_state {
  std::unique_ptr<partition_core> core;
  std::uint32_t index = 0;
  std::vector<waiting_write> writes;
  std::vector<waiting_read> reads;
  std::map<tx_id, parked_prepare> parked;
  bool flush_scheduled = false;
  bool retry_scheduled = false;
  partition_mode mode = partition_mode::serving;
  std::vector<deferred_request> deferred;
  // Requests that came while this copy did not lead and knew of no copy
  // that did and that it could reach (a take-over round under way, a
  // replica not yet told its primary, or one whose primary's node is seen
  // down): served once it leads, passed on once it reaches a primary,
  // refused once stale or after the read timeout (docs/REPLICATION.md,
  // "Failover").
  std::vector<deferred_request> awaiting_leader;
  // Requests passed on to the primary, by number (fail_forwarded).
  std::map<std::uint64_t, forwarded_request> forwarded;
  std::uint64_t last_forwarded = 0;
  caf::response_promise drained; // answered when the journal is closed
  caf::actor target;             // mode forwarding
  std::chrono::milliseconds defer_limit{10000};
  std::chrono::steady_clock::time_point drain_deadline;
  // A handoff's fence of the copy set (close_if_drained): the ring epoch of
  // the view that moves the partition, until when it is tried, whether a
  // round is out, and whether it is done (or given up).
  std::uint64_t handoff_epoch = 0;
  std::chrono::steady_clock::time_point fence_deadline;
  bool fencing = false;
  bool fenced = false;
  std::shared_ptr<std::atomic<std::uint64_t>> slot; // node_context::board
  partition_timers timers;
  std::uint64_t ticks = 0;
  // When this copy last warned that it holds the node's stable time back.
  std::chrono::steady_clock::time_point held_warned{};
  // When it last logged its parked reads (debug).
  std::chrono::steady_clock::time_point parked_logged{};
  // Durability periodic: when the journal was last synced.
  std::chrono::steady_clock::time_point last_sync = std::chrono::steady_clock::now();
  // This copy's role among the partition's copies (docs/REPLICATION.md).
  partition_replication repl;
  // Syncs on the node's sync threads (partition_options::sync_elsewhere):
  // whether one of this partition's is running, and, in durability batch,
  // the writes it answers once a sync covers their batch: (batch end,
  // answers), oldest first. Null syncer: syncs run here.
  std::shared_ptr<background_syncer> syncer;
  bool sync_running = false;
  std::deque<std::pair<lsn, std::vector<partition_replication::answer_fn>>> awaiting_sync;
  // A replica's batches waiting for a sync before they are acknowledged to
  // the primary (partition_replication::on_needs_sync): (batch end, then).
  std::deque<std::pair<lsn, std::function<void(status)>>> replica_awaiting_sync;
  static inline const char* name = "partition";
};

using partition_self = caf::stateful_actor<partition_state, hosted_actor>*;

void publish(partition_self self) {
  if (!self->state.slot)
    return;
  // visible_below() 0 (every snapshot waits, for the moment a new primary's
  // term record takes to reach w copies: partition_replication::
  // become_primary) does not hold the node's stable time back: its reads
  // wait briefly; published as 0 it would give clients without a clock
  // snapshot 0.
  const auto v = self->state.repl.visible_below();
  self->state.slot->store(std::min(self->state.core->blocked_from(), v == 0 ? UINT64_MAX : v),
                          std::memory_order_release);
}

void publish_if_open(partition_self self) {
  if (self->state.core)
    publish(self);
}

// The newest snapshot this partition can serve now: its safe time, kept
// below commits not yet on w copies (partition_replication::visible_below).
std::uint64_t readable_time(partition_self self) {
  auto safe = self->state.core->safe_time();
  auto v = self->state.repl.visible_below();
  if (v == 0)
    return 0; // nothing visible for the moment (after a take-over round)
  return v == UINT64_MAX ? safe : std::min(safe, v - 1);
}

// Whether `req` can be served now: its snapshot is at or below the
// partition's readable time, or (issue 13) at or below the safe time of
// every key it reads (a transaction left prepared holds back only the keys
// it writes) and below the replication bound.
bool readable(partition_self self, const part_read_req& req) {
  const auto s = req.snapshot.get(local_dc);
  if (s <= readable_time(self))
    return true;
  auto v = self->state.repl.visible_below();
  if (v != UINT64_MAX && s >= v)
    return false;
  for (const auto& it : req.items)
    if (s > self->state.core->safe_time_for(it.key))
      return false;
  return true;
}

part_read_resp serve(partition_core& core, const part_read_req& req) {
  part_read_resp out;
  auto fail = [&out](error e) {
    out.err = std::move(e);
    out.values.clear();
    out.states.clear();
    return out;
  };
  for (const auto& it : req.items) {
    if (it.want_state) { // read before write: the object itself, not its value
      auto obj = core.read_object(it.key, it.type, req.snapshot, it.own);
      if (!obj)
        return fail(obj.err());
      // The coordinator prepares against the state and never looks at the
      // value (transactions.cpp, prepare_writes): building it cost a copy
      // of every element of a big set per update (docs/DATATYPES.md, "Big
      // objects"). An empty placeholder keeps values and states aligned.
      out.values.emplace_back();
      out.states.push_back(obj->encode());
      continue;
    }
    auto v = core.read(it.key, it.type, req.snapshot, it.own);
    if (!v)
      return fail(v.err());
    out.values.push_back(*v);
    out.states.emplace_back();
  }
  return out;
}

void redrive_ready(partition_self self);

// Hands the sync of everything appended so far to the node's sync threads,
// unless one is running (what is appended meanwhile waits for the next:
// one sync covers many batches). Its end comes back as a synced_atom.
void start_sync(partition_self self) {
  auto& st = self->state;
  if (st.sync_running || !st.syncer || !st.core)
    return;
  auto job = st.core->sync_job();
  if (!job)
    return;
  st.sync_running = true;
  caf::actor me{self};
  st.syncer->run([job = *job] { return job.run(); }, [me, upto = job->upto](status outcome) {
    caf::anon_send(me, synced_atom::value, static_cast<std::uint64_t>(upto),
                   outcome ? std::string{} : outcome.err().to_string());
  });
}

// Durability periodic: syncs the journal when the last sync is at least
// `due` old. Called after each flush with the interval (so busy partitions
// sync when their own writes come, spread over time rather than all 64 on
// one tick) and on every tick with the interval less one tick (so an idle
// partition's last writes are synced within the interval too).
void sync_if_due(partition_self self, std::chrono::milliseconds due) {
  auto& st = self->state;
  if (st.timers.sync_interval.count() <= 0 || !st.core)
    return;
  auto now = std::chrono::steady_clock::now();
  if (now - st.last_sync < due)
    return;
  st.last_sync = now;
  if (st.syncer) {
    start_sync(self);
    return;
  }
  if (auto s = st.core->sync(); !s)
    log(log_level::error, "partition ", st.core->index(),
        ": journal sync failed, partition stopped: ", s.err().to_string());
}

void retry_reads(partition_self self);

// A sync of this partition's journal ended (upto 0: it ran here, synchronously
// in core->sync()): the batches it covers are applied, their writes answered
// (through the replication's quorum), and the reads waiting for their
// commits served; then the next sync starts if more was appended meanwhile.
void on_synced(partition_self self, lsn upto, status outcome) {
  auto& st = self->state;
  st.sync_running = false;
  if (!st.core)
    return;
  status st_ok = upto == 0 ? outcome : st.core->synced(upto, outcome);
  if (!st_ok) {
    log(log_level::error, "partition ", st.index,
        ": journal sync failed, partition stopped: ", st_ok.err().to_string());
    auto failed = std::move(st.awaiting_sync);
    st.awaiting_sync.clear();
    for (auto& [end, answers] : failed)
      for (auto& a : answers)
        a(st_ok.err());
    auto replicated = std::move(st.replica_awaiting_sync);
    st.replica_awaiting_sync.clear();
    for (auto& [end, then] : replicated)
      then(st_ok);
    publish(self);
    return;
  }
  const lsn durable = st.core->durable_end();
  while (!st.replica_awaiting_sync.empty()
         && st.replica_awaiting_sync.front().first <= durable) {
    auto then = std::move(st.replica_awaiting_sync.front().second);
    st.replica_awaiting_sync.pop_front();
    then(status{});
  }
  std::vector<partition_replication::answer_fn> ready;
  while (!st.awaiting_sync.empty() && st.awaiting_sync.front().first <= durable) {
    for (auto& a : st.awaiting_sync.front().second)
      ready.push_back(std::move(a));
    st.awaiting_sync.pop_front();
  }
  publish(self);
  if (!ready.empty())
    st.repl.flushed(self, *st.core, std::move(ready));
  redrive_ready(self);
  retry_reads(self);
  if (st.core->has_unsynced() || !st.awaiting_sync.empty()
      || !st.replica_awaiting_sync.empty())
    start_sync(self);
}

void flush_now(partition_self self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  auto res = st.core->flush();
  if (!res && st.core->stopped())
    log(log_level::error, "partition ", st.core->index(),
        ": journal write failed, partition stopped: ", res.err().to_string());
  publish(self);
  auto writes = std::move(st.writes);
  st.writes.clear();
  if (res) {
    // Answered once on w copies (at once without replication) and, when
    // the batch waits for a sync on the sync threads (durability batch),
    // once that sync is done.
    std::vector<partition_replication::answer_fn> answers;
    answers.reserve(writes.size());
    for (auto& w : writes)
      answers.emplace_back([w](std::optional<error> err) mutable { w.answer(std::move(err)); });
    if (st.core->has_unsynced()) {
      st.repl.flushed(self, *st.core, {}); // ships the batch to the replicas now
      st.awaiting_sync.emplace_back(st.core->log_end(), std::move(answers));
      if (st.syncer)
        start_sync(self);
      else
        on_synced(self, 0, st.core->sync()); // no sync threads: here
    } else {
      st.repl.flushed(self, *st.core, std::move(answers));
    }
  } else {
    for (auto& w : writes)
      w.answer(res.err());
  }
  sync_if_due(self, st.timers.sync_interval); // acknowledged first: periodic
  redrive_ready(self);
}

void schedule_flush(partition_self self);

// The rest of a prepare once partition_core has answered: parked while it
// waits for another transaction's outcome, else staged (plus the commit of
// a one-step transaction) and answered after the flush.
void admit_prepare(partition_self self, const tx_id& tx, bool two_phase,
                   expected<prepare_outcome> out, prepare_reply reply) {
  auto& st = self->state;
  if (out && out->blocked_by) {
    st.parked[tx] = parked_prepare{std::move(reply), two_phase};
    if (out->wait_bound_us != 0)
      self->delayed_send(self, std::chrono::microseconds(out->wait_bound_us),
                         expire_atom::value);
    return;
  }
  if (!out)
    return reply(part_time_resp{out.err(), 0, 0});
  if (!two_phase) {
    if (auto c = st.core->stage_commit(tx, out->prepare_time); !c)
      return reply(part_time_resp{c.err(), 0, 0});
  }
  st.writes.push_back(
    {false, part_time_resp{std::nullopt, out->prepare_time, out->dismissed},
     std::move(reply), {}, std::nullopt, {}});
  publish(self);
  schedule_flush(self);
}

// Drops a prepare waiting in the core for another transaction's outcome,
// staging nothing: cancelled (stage_abort of a waiting prepare), then
// taken out (resume_prepare answers "aborted").
void cancel_waiting_prepare(partition_core& core, const tx_id& tx) {
  if (auto a = core.stage_abort(tx); !a)
    log(log_level::warn, "partition ", core.index(), ": cancelling the waiting prepare of ", tx,
        ": ", a.err().to_string());
  if (auto r = core.resume_prepare(tx); r)
    log(log_level::error, "partition ", core.index(), ": the waiting prepare of ", tx,
        " was staged while cancelled");
}

// Re-drives the parked prepares whose blocking transaction is decided.
void redrive_ready(partition_self self) {
  auto& st = self->state;
  for (const auto& tx : st.core->take_ready()) {
    auto i = st.parked.find(tx);
    if (i == st.parked.end())
      continue;
    auto parked = std::move(i->second);
    st.parked.erase(i);
    if (!st.repl.serves_clients()) {
      // No longer the primary: nothing of a client's is staged here (it
      // would put records in a replica's journal that its primary never
      // wrote); the coordinator retries at the primary.
      cancel_waiting_prepare(*st.core, tx);
      parked.reply(part_time_resp{st.repl.refusal(st.index), 0, 0});
      continue;
    }
    admit_prepare(self, tx, parked.two_phase, st.core->resume_prepare(tx),
                  std::move(parked.reply));
  }
}

// This copy stopped leading (docs/REPLICATION.md): the reads parked for
// their snapshot and the prepares waiting for another transaction are
// refused (their coordinators retry at the primary). Served here later,
// a read would see this copy's state, which no longer follows every
// commit, and a prepare would be journaled by a replica.
void refuse_waiting(partition_self self) {
  auto& st = self->state;
  if (!st.core)
    return;
  auto refusal = st.repl.refusal(st.index);
  auto reads = std::move(st.reads);
  st.reads.clear();
  for (auto& r : reads)
    r.answer(part_read_resp{refusal, {}});
  auto parked = std::move(st.parked);
  st.parked.clear();
  for (auto& [tx, p] : parked) {
    cancel_waiting_prepare(*st.core, tx);
    p.reply(part_time_resp{refusal, 0, 0});
  }
}

void schedule_flush(partition_self self) {
  auto& st = self->state;
  if (st.core->log().mode() == durability::full) {
    flush_now(self); // one sync per commit
    return;
  }
  if (!st.flush_scheduled) {
    st.flush_scheduled = true;
    self->send(self, flush_atom::value);
  }
}

// Serves every parked read whose snapshot is now safe; keeps a short timer
// while some wait for the clock to pass their snapshot.
void retry_reads(partition_self self) {
  auto& st = self->state;
  if (st.reads.empty())
    return;
  if (!st.repl.serves_clients()) {
    refuse_waiting(self);
    return;
  }
  auto safe = readable_time(self);
  std::vector<waiting_read> still;
  std::uint64_t ahead = 0;
  for (auto& r : st.reads) {
    auto s = r.req.snapshot.get(local_dc);
    if (s <= safe || readable(self, r.req))
      r.answer(serve(*st.core, r.req));
    else {
      ahead = std::max(ahead, s - safe);
      still.push_back(std::move(r));
    }
  }
  st.reads = std::move(still);
  if (!st.reads.empty() && !st.retry_scheduled) {
    st.retry_scheduled = true;
    // A read waits either for a prepared transaction (retried after every
    // flush and abort) or for the clock; poll at most every millisecond.
    auto wait = std::chrono::microseconds(std::clamp<std::uint64_t>(ahead, 100, 1000));
    self->delayed_send(self, wait, retry_atom::value);
  }
}

// The reply a request of `kind` gets when it fails with `err`.
std::string error_reply_bytes(caf::atom_value kind, const error& err) {
  if (kind == part_read_atom::value)
    return encode_wire(part_read_resp{err, {}});
  if (kind == part_prepare_atom::value)
    return encode_wire(part_time_resp{err, 0, 0});
  if (kind == part_find_atom::value || kind == part_fence_atom::value)
    return encode_wire(part_find_resp{err, 0, 0});
  return encode_wire(part_ack{err});
}

void defer(partition_self self, caf::atom_value kind, std::string bytes,
           caf::response_promise rp) {
  self->state.deferred.push_back(
    {kind, std::move(bytes), std::move(rp), std::chrono::steady_clock::now(), false});
}

// A part_*_call that this partition cannot serve now (it is draining,
// closed or forwarding for a handoff): sent through its own mailbox as an
// ordinary request, so the handler that holds or forwards requests answers
// it, and the answer goes to `fn`.
template <class Req, class Resp>
void via_mailbox(partition_self self, caf::atom_value kind, const Req& req,
                 std::function<void(Resp)> fn) {
  self->request(caf::actor{self}, caf::infinite, kind, encode_wire(req))
    .then(
      [fn](std::string& bytes) {
        auto r = decode_wire<Resp>(bytes);
        if (!r) {
          Resp failed;
          failed.err = r.err();
          fn(std::move(failed));
        } else {
          fn(std::move(*r));
        }
      },
      [fn, self](caf::error& e) {
        Resp failed;
        failed.err = make_error(errc::unavailable, "partition request failed: "
                                                     + self->system().render(e));
        fn(std::move(failed));
      });
}

void via_mailbox(partition_self self, part_read_req req,
                 std::function<void(part_read_resp)> fn) {
  via_mailbox(self, part_read_atom::value, req, std::move(fn));
}

void close_if_drained(partition_self self);

// n_val > 1: before a draining primary closes, its copy set is fenced under
// the view that moves the partition (docs/REPLICATION.md, "Handoffs across
// two copy sets"). True once done or given up (the partition may close);
// false while it waits: for its writes held for w copies to be answered
// (its own batches would be refused once the copies promised), or for the
// round. A round that fails is tried again until handoff_fence_wait has
// passed since the drain began; then it closes without, with a warning,
// and its store keeps the set it led (journal meta `led_set`) for the new
// owner's joint round.
bool fence_copy_set(partition_self self) {
  auto& st = self->state;
  if (st.fenced)
    return true;
  if (st.fencing)
    return false;
  if (std::chrono::steady_clock::now() >= st.fence_deadline) {
    log(log_level::warn, "partition ", st.index, ": closes for handoff without fencing its "
        "copy set under view ", view_rank_name(st.handoff_epoch), " (no promises within ",
        handoff_fence_wait.count(), " ms): the new owner's first round is joint with that set");
    st.fenced = true;
    return true;
  }
  if (st.repl.holds_writes()) {
    self->delayed_send(self, fence_recheck, fence_check_atom::value);
    return false;
  }
  st.fencing = true;
  st.repl.fence_for_handoff(self, *st.core, st.handoff_epoch, [self](bool ok) {
    auto& st = self->state;
    st.fencing = false;
    if (!ok) {
      self->delayed_send(self, fence_retry, fence_check_atom::value);
      return;
    }
    st.fenced = true;
    close_if_drained(self);
  });
  return false;
}

// Draining ends when nothing is prepared or staged: the journal is flushed
// and closed, the board slot cleared, and the membership told the files
// are ready to ship. A transaction still prepared at the drain deadline (one
// left undecided by a crash, or a coordinator that went silent) does not
// hold the handoff back: the new owner recovers it from the journal as it is.
void close_if_drained(partition_self self) {
  auto& st = self->state;
  if (st.mode != partition_mode::draining || !st.core)
    return;
  bool past_deadline = std::chrono::steady_clock::now() >= st.drain_deadline;
  if (!st.writes.empty() || st.core->has_staged() || st.core->has_unsynced()
      || !st.awaiting_sync.empty() || st.sync_running
      || (st.core->prepared_count() != 0 && !past_deadline))
    return;
  if (!fence_copy_set(self))
    return;
  for (auto& r : st.reads) {
    if (r.answer.fn)
      via_mailbox(self, std::move(r.req), std::move(r.answer.fn));
    else
      defer(self, part_read_atom::value, encode_wire(r.req), r.answer.rp);
  }
  st.reads.clear();
  for (auto& [tx, p] : st.parked)
    p.reply(part_time_resp{make_error(errc::timeout, "partition " + std::to_string(st.index)
                                                       + " was moving to another node; retry"),
                           0, 0});
  st.parked.clear();
  st.core.reset(); // closes the LMDB environment
  if (st.slot)
    st.slot->store(UINT64_MAX, std::memory_order_release);
  st.mode = partition_mode::closed;
  log(log_level::info, "partition ", st.index, ": closed for handoff (",
      st.deferred.size(), " requests held)");
  st.drained.deliver(drained_atom::value, st.index);
}

// Sends every held request on to `target`, except prepares held longer than
// a coordinator waits (their coordinator has given up and may have aborted:
// applying them late could leave a transaction prepared forever).
void forward_deferred(partition_self self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  auto held = std::move(st.deferred);
  st.deferred.clear();
  for (auto& d : held) {
    // Only a prepare is dropped: a commit or abort is a decision already
    // taken and always reaches the partition.
    if (d.kind == part_prepare_atom::value && now - d.since > st.defer_limit) {
      d.rp.deliver(error_reply_bytes(
        d.kind, make_error(errc::timeout, "partition " + std::to_string(st.index)
                                            + " was moving to another node; retry")));
      continue;
    }
    d.rp.delegate(st.target, d.kind, std::move(d.bytes));
  }
}

// Requests passed on to a primary this copy no longer follows (its role or
// configuration changed: another primary, this copy leads, the primary's
// node is seen down) are answered now: that primary may never answer (a
// killed node's actor drops them), and waiting out the request's bound held
// a two-phase commit's op ids prepared on its other partitions, so that the
// client's retries with the same ids waited behind it (a write through a
// survivor of a kill -9 failed for 3 s in a CI run of stop 31). Whether
// the old primary applied it is unknown: the client retries with the same
// op ids, which exactly-once makes safe.
void fail_forwarded(partition_self self) {
  auto& st = self->state;
  if (st.forwarded.empty())
    return;
  const auto now_primary = st.repl.primary_handle();
  for (auto f = st.forwarded.begin(); f != st.forwarded.end();) {
    if (f->second.to == now_primary) {
      ++f;
      continue;
    }
    f->second.rp.deliver(error_reply_bytes(
      f->second.kind,
      make_error(errc::unavailable,
                 "partition " + std::to_string(st.index)
                   + ": the request was passed on to a primary this copy no longer follows; "
                     "if this was a write, its outcome is unknown: retry with the same op "
                     "ids")));
    f = st.forwarded.erase(f);
  }
}

// After a change of role or of the copies' links: the requests held for
// want of a leader are sent again through this actor's mailbox (their
// answers still going to their senders) once this copy leads or knows a
// primary it can reach, where they are served or passed on to it (divert);
// refused once the copy has gone stale; and otherwise kept, with the time
// they came, until expire_awaiting_leader.
void release_awaiting_leader(partition_self self) {
  auto& st = self->state;
  if (st.awaiting_leader.empty() || st.repl.awaits_leader() || st.repl.awaits_primary_link())
    return;
  auto held = std::move(st.awaiting_leader);
  st.awaiting_leader.clear();
  const bool again = st.mode == partition_mode::serving
                     && (st.repl.serves_clients() || st.repl.primary_handle());
  for (auto& d : held) {
    if (!again)
      d.rp.deliver(error_reply_bytes(d.kind, st.repl.refusal(st.index)));
    else if (d.passed_on) // still passed on at most once
      d.rp.delegate(caf::actor{self}, part_fwd_atom::value, d.kind, std::move(d.bytes));
    else
      d.rp.delegate(caf::actor{self}, d.kind, std::move(d.bytes));
  }
}

// Held requests older than `limit` are refused: no copy took the lead in
// time.
void expire_awaiting_leader(partition_self self, std::chrono::milliseconds limit) {
  auto& st = self->state;
  if (st.awaiting_leader.empty())
    return;
  const auto oldest = std::chrono::steady_clock::now() - limit;
  std::vector<deferred_request> still;
  for (auto& d : st.awaiting_leader) {
    if (d.since < oldest)
      d.rp.deliver(error_reply_bytes(d.kind, st.repl.refusal(st.index)));
    else
      still.push_back(std::move(d));
  }
  st.awaiting_leader = std::move(still);
}

// Requests while the partition is not serving: deferred, or forwarded, or
// (a copy that does not lead and knows of no copy that does) held for a
// leader. Returns the request's promise when it was taken care of here,
// nullopt when the handler serves it. Only then is a promise made: a
// handler that made one must answer through it (CAF 0.17 moves the
// request's reply address into the promise), so the serving path returns
// its reply.
std::optional<caf::response_promise> divert(partition_self self, caf::atom_value kind,
                                            std::string& bytes, bool may_forward = true) {
  auto& st = self->state;
  if (st.mode == partition_mode::serving && !st.repl.serves_clients()
      && kind != part_find_atom::value) {
    auto rp = self->make_response_promise();
    // Held: by a copy in a take-over round or told no primary, and by a
    // replica whose primary it cannot reach (unless the request was passed
    // on to it already: the copy that passed it on answers its sender).
    const bool hold = st.repl.awaits_leader() || (may_forward && st.repl.awaits_primary_link());
    if (hold && st.awaiting_leader.size() < max_awaiting_leader) {
      st.awaiting_leader.push_back(
        {kind, std::move(bytes), rp, std::chrono::steady_clock::now(), !may_forward});
      return rp;
    }
    // A replica that follows a known primary passes the request on to it
    // (once: the primary serves, holds or refuses it), so that a sender whose
    // route is behind the copy set's (a failover, a node just back) is
    // served instead of refused. The answer comes back through here,
    // bounded as a held request is (a paused primary answers nothing);
    // a timer per request, but only on this path of a route behind.
    // A copy that stops following that primary (reconfigured, its node
    // seen down) answers at once instead (fail_forwarded): a message to a
    // dead node's actor is lost without a word (CAF-NOTES.md, "Multi-node").
    if (may_forward)
      if (auto primary = st.repl.primary_handle()) {
        const auto bound = st.timers.read_timeout.count() > 0 ? st.timers.read_timeout
                                                              : std::chrono::milliseconds{2000};
        const auto id = ++st.last_forwarded;
        st.forwarded.emplace(id, forwarded_request{kind, rp, primary});
        self->request(primary, bound, part_fwd_atom::value, kind, std::move(bytes))
          .then(
            [self, id](std::string& reply) {
              auto f = self->state.forwarded.find(id);
              if (f == self->state.forwarded.end())
                return; // answered already (fail_forwarded)
              f->second.rp.deliver(std::move(reply));
              self->state.forwarded.erase(f);
            },
            [self, id](caf::error& e) {
              auto f = self->state.forwarded.find(id);
              if (f == self->state.forwarded.end())
                return;
              f->second.rp.deliver(error_reply_bytes(
                f->second.kind,
                make_error(errc::unavailable,
                           "partition " + std::to_string(self->state.index)
                             + ": this copy is a replica and its primary did not "
                               "answer (" + self->system().render(e)
                             + "); if this was a write, its outcome is unknown: "
                               "retry with the same op ids")));
              self->state.forwarded.erase(f);
            });
        return rp;
      }
    rp.deliver(error_reply_bytes(kind, st.repl.refusal(st.index)));
    return rp;
  }
  // Draining: prepares wait for the new owner; so do commits and aborts
  // once the copy set is being fenced (their batches would be refused by
  // the copies that promised: fence_copy_set); reads are served.
  const bool fencing = st.fencing || st.fenced;
  if (st.mode == partition_mode::serving
      || (st.mode == partition_mode::draining && kind != part_prepare_atom::value
          && (!fencing || kind == part_read_atom::value)))
    return std::nullopt;
  auto rp = self->make_response_promise();
  switch (st.mode) {
    case partition_mode::serving:
    case partition_mode::draining:
      defer(self, kind, std::move(bytes), rp);
      return rp;
    case partition_mode::closed:
      if (kind == part_abort_atom::value) {
        // The abort of a held prepare: drop the prepare, never apply it.
        auto req = decode_wire<part_abort_req>(bytes);
        if (req) {
          auto& held = st.deferred;
          for (auto i = held.begin(); i != held.end(); ++i) {
            if (i->kind != part_prepare_atom::value)
              continue;
            auto prep = decode_wire<part_prepare_req>(i->bytes);
            if (prep && prep->tx == req->tx) {
              i->rp.deliver(error_reply_bytes(
                i->kind, make_error(errc::aborted, "transaction aborted")));
              held.erase(i);
              rp.deliver(encode_wire(part_ack{}));
              return rp;
            }
          }
        }
      }
      defer(self, kind, std::move(bytes), rp);
      return rp;
    case partition_mode::forwarding:
      rp.delegate(st.target, kind, std::move(bytes));
      return rp;
  }
  return rp;
}

// A replica replaces its store with the full copy its primary sent into
// `dir` (docs/REPLICATION.md, "Full copies"): the copy is made durable, the
// core closed, the folders swapped, the core reopened on the copy. If the
// copy does not open, the old store is put back and reopened.
expected<lsn> take_full_copy(partition_self self, const std::string& dir) {
  namespace fs = std::filesystem;
  auto& st = self->state;
  if (!st.core || st.mode != partition_mode::serving)
    return make_error(errc::unavailable, "partition " + std::to_string(st.index)
                                           + " is closed or moving");
  if (auto s = sync_path(dir + "/data.mdb", false); !s)
    return s.err();
  if (auto s = sync_path(dir, true); !s)
    return s.err();
  auto opts = st.core->options();
  const std::string old = opts.path + ".replaced";
  st.core.reset(); // closes the LMDB environment
  std::error_code ec;
  fs::remove_all(old, ec);
  fs::rename(opts.path, old, ec);
  if (!ec)
    fs::rename(dir, opts.path, ec);
  if (!ec)
    (void)sync_path(fs::path(opts.path).parent_path().string(), true);
  auto fresh = ec ? expected<std::unique_ptr<partition_core>>{make_error(
                      errc::io_error, "cannot put the copy in place: " + ec.message())}
                  : partition_core::open(opts);
  if (!fresh) {
    std::error_code ignore;
    if (fs::exists(old, ignore)) {
      fs::remove_all(opts.path, ignore);
      fs::rename(old, opts.path, ignore);
    }
    auto back = partition_core::open(opts);
    if (back)
      st.core = std::move(*back);
    else
      log(log_level::error, "partition ", st.index, ": cannot reopen after a failed copy: ",
          back.err().to_string());
    publish_if_open(self);
    return fresh.err();
  }
  fs::remove_all(old, ec);
  st.core = std::move(*fresh);
  publish(self);
  return st.core->log_end();
}

void run_checkpoint(partition_self self) {
  auto& core = *self->state.core;
  const auto started = std::chrono::steady_clock::now();
  auto cp = core.checkpoint();
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
    std::chrono::steady_clock::now() - started);
  if (!cp) {
    log(cp.err().code() == errc::io_error ? log_level::error : log_level::warn,
        "partition ", core.index(), ": checkpoint failed: ",
        cp.err().to_string());
    return;
  }
  if (!cp->ran)
    return;
  const auto& r = cp->report;
  // A first checkpoint of a long log (an upgrade, a long pause) is worth
  // seeing; the periodic ones are debug chatter.
  constexpr std::uint64_t large_drop = 100000;
  log(r.records_dropped >= large_drop ? log_level::info : log_level::debug,
      "partition ", core.index(), ": checkpoint ", r.sequence, " at ",
      core.checkpoint_time(), ": folded ", r.transactions_folded,
      " transactions (", r.effects_folded, " effects, ", r.keys_written,
      " keys), dropped ", r.records_dropped, " records, ",
      r.index_entries_dropped, " index entries, ", r.op_ids_dropped,
      " op ids; log starts at ", r.truncation_lsn, " (", r.limited_by,
      "), spans ", cp->log_span, " LSNs; FBF horizon ", cp->fbf_horizon_us,
      "; set aside ", cp->set_aside, " transaction(s) left prepared (",
      r.records_relocated, " records moved to the log's end); took ", took.count(), " us");
}

void schedule_tick(partition_self self) {
  auto period = self->state.timers.tick();
  if (period.count() > 0)
    self->delayed_send(self, period, timer_atom::value);
}

// The first tick, at the partition's own phase (partition_timers::first_tick).
void schedule_first_tick(partition_self self) {
  auto& st = self->state;
  if (st.timers.tick().count() > 0)
    self->delayed_send(self, st.timers.first_tick(st.index), timer_atom::value);
}

// Parked reads older than the read timeout get a timeout error: a read
// whose snapshot is never reached (a transaction left prepared, a clock far
// ahead) must not wait forever. Reads sent with request() have their own
// timer too; a part_read_call has only this one.
void expire_reads(partition_self self) {
  auto& st = self->state;
  if (st.timers.read_timeout.count() <= 0 || st.reads.empty())
    return;
  auto oldest = std::chrono::steady_clock::now() - st.timers.read_timeout;
  std::vector<waiting_read> still;
  for (auto& r : st.reads) {
    if (r.since < oldest)
      r.answer(part_read_resp{
        make_error(errc::timeout, "partition " + std::to_string(st.index)
                                    + ": the snapshot was not reached in time "
                                      "(a transaction is still prepared, or "
                                      "the snapshot is ahead of the clock); retry"),
        {}});
    else
      still.push_back(std::move(r));
  }
  st.reads = std::move(still);
}

// The error for a read that would wait while max_parked_reads already do
// (issue 17: 120,000 reads held for a future clock took 364 MB); nullopt
// when there is room.
std::optional<error> parked_reads_full(partition_self self) {
  auto& st = self->state;
  if (st.timers.max_parked_reads == 0 || st.reads.size() < st.timers.max_parked_reads)
    return std::nullopt;
  return make_error(errc::unavailable,
                    "partition " + std::to_string(st.index) + " already holds "
                      + std::to_string(st.reads.size())
                      + " reads waiting for their snapshot; retry later");
}

// A copy whose board slot stays far below the clock holds back the stable
// time of its whole node (clients without a clock read old snapshots there,
// then "snapshot too old"): it says so, with what holds it, every 10 s.
void warn_if_holding(partition_self self) {
  auto& st = self->state;
  constexpr std::uint64_t held_limit_us = 10'000'000;
  const std::uint64_t prepared = st.core->blocked_from();
  // 0 (a new primary's first round trip, or a read lease run out) holds
  // only this partition's reads, not the node's stable time (publish).
  const std::uint64_t v = st.repl.visible_below();
  const std::uint64_t visible = v == 0 ? UINT64_MAX : v;
  const std::uint64_t held = std::min(prepared, visible);
  const auto now = std::chrono::steady_clock::now();
  if (held == UINT64_MAX || held + held_limit_us > wall_clock_us()
      || now - st.held_warned < std::chrono::seconds{10})
    return;
  st.held_warned = now;
  std::ostringstream why;
  if (prepared == held) {
    why << "transaction(s) prepared and undecided here:";
    for (const auto& u : st.core->prepared_before(held + 1))
      why << " " << u.tx << " at " << u.prepare_time;
  } else {
    why << "commits not yet on a write quorum of copies";
  }
  log(log_level::warn, "partition ", st.index, ": holds this node's stable time at ", held,
      " (", (wall_clock_us() - held) / 1000000, " s ago): ", why.str(), " (",
      st.repl.describe(), ")");
}

// Reads parked for over half a second (their snapshot above what this copy
// can serve): at debug level, once a second, what holds them.
void log_parked_reads(partition_self self) {
  auto& st = self->state;
  if (st.reads.empty() || current_log_level() > log_level::debug)
    return;
  const auto now = std::chrono::steady_clock::now();
  auto oldest = st.reads.front().since;
  std::uint64_t lowest = UINT64_MAX;
  for (const auto& r : st.reads) {
    oldest = std::min(oldest, r.since);
    lowest = std::min(lowest, r.req.snapshot.get(local_dc));
  }
  if (now - oldest < std::chrono::milliseconds{500}
      || now - st.parked_logged < std::chrono::seconds{1})
    return;
  st.parked_logged = now;
  log(log_level::debug, "partition ", st.index, ": ", st.reads.size(),
      " read(s) parked, the oldest for ",
      std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest).count(),
      " ms; lowest snapshot ", lowest, ", readable up to ", readable_time(self),
      " (prepared from ", st.core->blocked_from(), ", visible below ",
      st.repl.visible_below(), "; ", st.repl.describe(), ")");
}

void on_tick(partition_self self) {
  auto& st = self->state;
  if (!st.core)
    return; // closed for a handoff or forwarding: nothing to tick
  ++st.ticks;
  warn_if_holding(self);
  log_parked_reads(self);
  expire_reads(self);
  expire_awaiting_leader(self, st.timers.read_timeout.count() > 0
                                 ? st.timers.read_timeout
                                 : std::chrono::milliseconds{2000});
  sync_if_due(self, std::max(st.timers.sync_interval - st.timers.tick(),
                             std::chrono::milliseconds{0}));
  if (st.timers.fbf_tick.count() > 0)
    st.core->advance_filters();
  st.repl.tick(self, *st.core,
               st.timers.read_timeout.count() > 0 ? st.timers.read_timeout
                                                  : std::chrono::milliseconds{10000});
  // Batches a replica took without syncing them at once (not one of the
  // w - 1 copies that do): synced by the tick at the latest.
  if (!st.replica_awaiting_sync.empty())
    start_sync(self);
  // Decisions kept after a failed batch (a full map) are retried.
  if (st.core->has_staged() && !st.core->stopped())
    schedule_flush(self);
  if (st.timers.checkpoint_due(st.ticks, st.index)) {
    run_checkpoint(self);
    publish(self); // a set-aside transaction stops pinning the stable time
  }
  schedule_tick(self);
}

// The requests (part_*_atom with their encoded request): served here, or
// diverted (deferred, held for a leader, passed on to the primary when
// `may_forward`, or refused: divert()).
caf::result<std::string> serve_read(partition_self self, std::string& bytes, bool may_forward) {
  auto& st = self->state;
  if (auto held = divert(self, part_read_atom::value, bytes, may_forward))
    return *held;
  auto req = decode_wire<part_read_req>(bytes);
  if (!req)
    return encode_wire(part_read_resp{req.err(), {}});
  st.repl.note_read(self); // keeps the read lease (replicated primary)
  if (readable(self, *req))
    return encode_wire(serve(*st.core, *req));
  if (auto full = parked_reads_full(self))
    return encode_wire(part_read_resp{*full, {}});
  auto rp = self->make_response_promise();
  st.reads.push_back({std::move(*req), {rp, {}}, std::chrono::steady_clock::now()});
  retry_reads(self);
  return rp;
}

caf::result<std::string> serve_prepare(partition_self self, std::string& bytes, bool may_forward) {
  auto& st = self->state;
  if (auto held = divert(self, part_prepare_atom::value, bytes, may_forward))
    return *held;
  auto req = decode_wire<part_prepare_req>(bytes);
  if (!req)
    return encode_wire(part_time_resp{req.err(), 0, 0});
  auto out = st.core->stage_prepare(req->tx, std::move(req->updates),
                                    req->snapshot_time, req->two_phase,
                                    std::move(req->participants),
                                    std::move(req->coordinator));
  auto rp = self->make_response_promise();
  admit_prepare(self, req->tx, req->two_phase, std::move(out), prepare_reply{rp, {}});
  return rp;
}

caf::result<std::string> serve_commit(partition_self self, std::string& bytes, bool may_forward) {
  auto& st = self->state;
  if (auto held = divert(self, part_commit_atom::value, bytes, may_forward))
    return *held;
  auto req = decode_wire<part_commit_req>(bytes);
  if (!req)
    return encode_wire(part_ack{req.err()});
  auto c = st.core->stage_commit(req->tx, req->commit_time, req->from_recovery);
  if (!c)
    return encode_wire(part_ack{c.err()});
  auto rp = self->make_response_promise();
  st.writes.push_back({true, {}, {}, {rp, {}}, std::nullopt, {}});
  schedule_flush(self);
  return rp;
}

caf::result<std::string> serve_abort(partition_self self, std::string& bytes, bool may_forward) {
  auto& st = self->state;
  if (auto held = divert(self, part_abort_atom::value, bytes, may_forward))
    return *held;
  auto req = decode_wire<part_abort_req>(bytes);
  if (!req)
    return encode_wire(part_ack{req.err()});
  auto a = st.core->stage_abort(req->tx);
  redrive_ready(self);
  publish(self);
  if (st.core->has_staged())
    schedule_flush(self);
  retry_reads(self);
  close_if_drained(self);
  if (!a)
    return encode_wire(part_ack{a.err()});
  return encode_wire(part_ack{});
}

// The answer to p_find or p_fence (recovery of undecided transactions,
// docs/CLUSTER.md): `out` as it is, except that a commit this copy holds
// proves the transaction committed only once it cannot be taken back:
// applied here, and on w copies (below the time reads wait for,
// partition_replication::visible_below). Otherwise an error: the asker
// asks again.
std::string find_answer(partition_self self, const tx_id& tx, const part_find_resp& out) {
  auto& st = self->state;
  if (out.commit_time != 0
      && (st.core->holds_prepared(tx) || out.commit_time >= st.repl.visible_below()))
    return encode_wire(part_find_resp{
      make_error(errc::unavailable, "partition " + std::to_string(st.index)
                                      + ": the transaction's commit is not yet on enough "
                                        "copies here; ask again"),
      0, 0});
  return encode_wire(out);
}

// The participant fence (docs/RELIABILITY.md, "The participant fence"),
// asked by the recovery of undecided transactions of another participant
// (or of this one) when the coordinator is out of reach: the decision
// here at once, or "fenced" once the fence record is durable and on w
// copies (answered like a commit, after the flush and the copies).
caf::result<std::string> serve_fence(partition_self self, std::string& bytes, bool may_forward) {
  auto& st = self->state;
  if (auto held = divert(self, part_fence_atom::value, bytes, may_forward))
    return *held;
  auto tx = decode_wire<tx_id>(bytes);
  if (!tx)
    return encode_wire(part_find_resp{tx.err(), 0, 0});
  auto found = st.core->stage_fence(*tx);
  if (!found)
    return encode_wire(part_find_resp{found.err(), 0, 0});
  part_find_resp out;
  out.commit_time = found->commit_time;
  out.aborted = found->aborted;
  out.folded_through = found->folded_through;
  out.fenced = found->fenced;
  if (!found->fenced)
    return find_answer(self, *tx, out);
  log(log_level::info, "partition ", st.index, ": ", *tx,
      " fenced (its coordinator is out of reach; recovery decides it)");
  auto rp = self->make_response_promise();
  waiting_write w;
  w.is_ack = true;
  w.fence_reply = rp;
  w.fenced = out;
  st.writes.push_back(std::move(w));
  schedule_flush(self);
  return rp;
}

// The direct calls (messages.hpp, part_*_call: the client server's path,
// local or through a remote caller): served like the requests, answered
// through the call's function.
void serve_call(partition_self self, part_read_call& call) {
  auto& st = self->state;
  if (st.mode != partition_mode::serving || !st.repl.serves_clients())
    return via_mailbox(self, std::move(call.req), std::move(call.reply));
  st.repl.note_read(self); // keeps the read lease (replicated primary)
  if (readable(self, call.req))
    return call.reply(serve(*st.core, call.req));
  if (auto full = parked_reads_full(self))
    return call.reply(part_read_resp{*full, {}});
  st.reads.push_back({std::move(call.req), {{}, std::move(call.reply)},
                      std::chrono::steady_clock::now()});
  retry_reads(self);
}

void serve_call(partition_self self, part_prepare_call& call) {
  auto& st = self->state;
  if (st.mode != partition_mode::serving || !st.repl.serves_clients())
    return via_mailbox(self, part_prepare_atom::value, call.req, std::move(call.reply));
  auto& req = call.req;
  auto out = st.core->stage_prepare(req.tx, std::move(req.updates), req.snapshot_time,
                                    req.two_phase, std::move(req.participants),
                                    std::move(req.coordinator));
  admit_prepare(self, req.tx, req.two_phase, std::move(out),
                prepare_reply{{}, std::move(call.reply)});
}

void serve_call(partition_self self, part_commit_call& call) {
  auto& st = self->state;
  if (st.mode != partition_mode::serving || !st.repl.serves_clients())
    return via_mailbox(self, part_commit_atom::value, call.req, std::move(call.reply));
  auto c = st.core->stage_commit(call.req.tx, call.req.commit_time, call.req.from_recovery);
  if (!c)
    return call.reply(part_ack{c.err()});
  st.writes.push_back({true, {}, {}, {{}, std::move(call.reply)}, std::nullopt, {}});
  schedule_flush(self);
}

// A remote call's request bytes decoded and served as a Call; `answer`
// gets the encoded answer (or the decoding error's).
template <class Call, class Resp, class Req, class Answer>
void serve_remote(partition_self self, const std::string& bytes, Answer answer) {
  auto req = decode_wire<Req>(bytes);
  if (!req) {
    Resp failed;
    failed.err = req.err();
    return answer(encode_wire(failed));
  }
  Call call{std::move(*req), [answer](Resp r) { answer(encode_wire(r)); }};
  serve_call(self, call);
}

caf::behavior partition_fn(partition_self self,
                           std::shared_ptr<std::unique_ptr<partition_core>> box,
                           std::shared_ptr<std::atomic<std::uint64_t>> slot,
                           partition_timers timers, bool replicated,
                           std::shared_ptr<background_syncer> syncer) {
  self->state.core = std::move(*box);
  self->state.syncer = std::move(syncer);
  if (replicated)
    self->state.repl.start_following();
  self->state.repl.on_reopen([self](const std::string& dir) { return take_full_copy(self, dir); });
  // A replica's batch is acknowledged once a sync covers it; with sync
  // threads the sync runs there (one for every batch applied meanwhile),
  // not on the shard (docs/REPLICATION.md, "Acknowledgement and
  // visibility").
  self->state.repl.on_needs_sync([self](lsn end, bool now, std::function<void(status)> then) {
    auto& st = self->state;
    if (!st.core || !st.syncer) {
      then(st.core ? st.core->sync() : status{make_error(errc::unavailable, "closed")});
      return;
    }
    st.replica_awaiting_sync.emplace_back(end, std::move(then));
    if (now)
      start_sync(self);
    // Else it waits for the next sync: one the primary asks for, the
    // partition's tick, or one started for another batch meanwhile.
  });
  self->state.repl.on_sync_asked([self] {
    if (!self->state.replica_awaiting_sync.empty())
      start_sync(self);
  });
  // A replica's prepared set changes with the batches it applies: its slot
  // follows (before this, a copy that had led kept the slot it last
  // published as primary, a prepare time from the moment of a fault, and
  // pinned its node's stable time for good: docs/RELIABILITY.md, finding 2).
  self->state.repl.on_replicated([self] {
    if (self->state.core)
      publish(self);
  });
  self->state.repl.on_stopped_serving([self] { refuse_waiting(self); });
  self->state.repl.on_role_changed([self] {
    fail_forwarded(self);
    release_awaiting_leader(self);
  });
  // At once, not on a later message: a copy asked to step down before its
  // flush would journal its term record as a replica (its journal then
  // diverges from the new primary's, and a replica stages nothing).
  self->state.repl.on_needs_flush([self] {
    if (self->state.core)
      flush_now(self);
  });
  self->state.repl.on_visible([self] {
    if (!self->state.core)
      return;
    publish(self);
    retry_reads(self);
  });
  self->state.index = self->state.core->index();
  self->state.slot = std::move(slot);
  self->state.timers = timers;
  publish(self);
  schedule_first_tick(self);
  // An error sent as an ordinary message (CAF 0.17 sends one back for a
  // message the receiver does not understand, as for a replication batch
  // to a copy of another version or to a test's stand-in) is not this
  // partition's failure: logged, not CAF's default (stop the actor).
  self->set_error_handler([self](caf::error& e) {
    log(log_level::warn, "partition ", self->state.index, ": a peer answered with an error: ",
        self->system().render(e));
  });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    // The slot is this node's copy of the partition, which may have a
    // successor already (a stale copy replaced by an empty one): what this
    // actor does from here on is no longer published.
    st.slot.reset();
    if (st.core && st.core->has_staged())
      flush_now(self);
    // Durability periodic: what was acknowledged is synced now; batch: the
    // writes waiting for a sync are answered.
    if (st.core)
      on_synced(self, 0, st.core->sync());
    for (auto& r : st.reads)
      r.answer(part_read_resp{make_error(errc::unavailable, "node shutting down"), {}});
    st.reads.clear();
    for (auto& [tx, p] : st.parked)
      p.reply(part_time_resp{make_error(errc::unavailable, "node shutting down"), 0, 0});
    st.parked.clear();
    for (auto* list : {&st.deferred, &st.awaiting_leader}) {
      for (auto& d : *list)
        d.rp.deliver(error_reply_bytes(
          d.kind, make_error(errc::unavailable, "node shutting down")));
      list->clear();
    }
    st.repl.fail_held(make_error(errc::unavailable, "node shutting down"));
    self->quit(msg.reason);
  });
  caf::message_handler serving{
    [self](part_read_atom, std::string& bytes) -> caf::result<std::string> {
      return serve_read(self, bytes, true);
    },
    [self](part_prepare_atom, std::string& bytes) -> caf::result<std::string> {
      return serve_prepare(self, bytes, true);
    },
    [self](part_commit_atom, std::string& bytes) -> caf::result<std::string> {
      return serve_commit(self, bytes, true);
    },
    [self](part_abort_atom, std::string& bytes) -> caf::result<std::string> {
      return serve_abort(self, bytes, true);
    },
    [self](part_fence_atom, std::string& bytes) -> caf::result<std::string> {
      return serve_fence(self, bytes, true);
    },
    // A request a replica passed on (divert): served here, held while
    // this copy takes over, or refused; not passed on again.
    [self](part_fwd_atom, caf::atom_value kind, std::string& bytes) -> caf::result<std::string> {
      if (kind == part_read_atom::value)
        return serve_read(self, bytes, false);
      if (kind == part_prepare_atom::value)
        return serve_prepare(self, bytes, false);
      if (kind == part_commit_atom::value)
        return serve_commit(self, bytes, false);
      if (kind == part_abort_atom::value)
        return serve_abort(self, bytes, false);
      if (kind == part_fence_atom::value)
        return serve_fence(self, bytes, false);
      return encode_wire(part_ack{make_error(errc::invalid_argument,
                                             "a passed-on request of an unknown kind")});
    },
    // Recovery of a transaction a crash left undecided on another node
    // (docs/CLUSTER.md): does this partition's journal hold its commit?
    [self](part_find_atom, std::string& bytes) -> caf::result<std::string> {
      auto& st = self->state;
      if (auto held = divert(self, part_find_atom::value, bytes))
        return *held;
      auto tx = decode_wire<tx_id>(bytes);
      if (!tx)
        return encode_wire(part_find_resp{tx.err(), 0, 0});
      // One lookup in the decision index (issue 13; it used to scan and
      // decode the whole log, once a second per undecided transaction).
      auto found = st.core->find_decision(*tx);
      if (!found)
        return encode_wire(part_find_resp{found.err(), 0, 0});
      part_find_resp out;
      out.folded_through = found->kept_from > 0 ? found->kept_from - 1 : 0;
      if (found->outcome == tx_outcome::committed)
        out.commit_time = found->commit_time;
      out.aborted = found->outcome == tx_outcome::aborted;
      // Recovery commits other participants on this answer, past their
      // fences: only a commit that cannot be taken back counts.
      return find_answer(self, *tx, out);
    },
    // Prepared transactions older than a bound, for the membership to
    // resolve when their coordinator went silent.
    [self](part_stale_atom, std::string& bytes) -> caf::result<std::string> {
      auto& st = self->state;
      // Closed or forwarding: the new owner answers for it; a replica: its
      // primary does.
      if (!st.core || !st.repl.serves_clients())
        return encode_wire(part_stale_resp{});
      auto before = decode_wire<std::uint64_t>(bytes);
      if (!before)
        return encode_wire(part_stale_resp{before.err(), {}, {}});
      part_stale_resp out;
      for (auto& u : st.core->prepared_before(*before)) {
        out.txs.push_back(u.tx);
        out.prepare_times.push_back(u.prepare_time);
        out.participants.push_back(std::move(u.participants));
        out.coordinators.push_back(std::move(u.coordinator));
      }
      return encode_wire(out);
    },
    // The client server's direct path (messages.hpp, part_read_call): the
    // same as the request above, answered through the call's function.
    [self](part_read_atom, part_read_call& call) { serve_call(self, call); },
    [self](part_prepare_atom, part_prepare_call& call) { serve_call(self, call); },
    [self](part_commit_atom, part_commit_call& call) { serve_call(self, call); },
    // A call from another node's shard (actors/remote_callers.hpp): served as
    // the calls above, its answer sent back to the caller as a message.
    [self](p_call_atom, std::uint64_t id, caf::atom_value kind, std::string& bytes) {
      auto caller = caf::actor_cast<caf::actor>(self->current_sender());
      auto answer = [caller, id](std::string out) {
        caf::anon_send(caller, p_reply_atom::value, id, std::move(out));
      };
      if (kind == part_read_atom::value)
        return serve_remote<part_read_call, part_read_resp, part_read_req>(self, bytes, answer);
      if (kind == part_prepare_atom::value)
        return serve_remote<part_prepare_call, part_time_resp, part_prepare_req>(self, bytes,
                                                                               answer);
      if (kind == part_commit_atom::value)
        return serve_remote<part_commit_call, part_ack, part_commit_req>(self, bytes, answer);
      answer(error_reply_bytes(kind, make_error(errc::invalid_argument,
                                                "unknown partition call " + to_string(kind))));
    },
    [self](flush_atom) {
      if (!self->state.core)
        return;
      flush_now(self);
      retry_reads(self);
      close_if_drained(self);
    },
    [self](retry_atom) {
      self->state.retry_scheduled = false;
      if (self->state.core)
        retry_reads(self);
      close_if_drained(self);
    },
    [self](fence_check_atom) { close_if_drained(self); },
    // Handoff (docs/CLUSTER.md): stop taking new prepares, finish the
    // prepared ones, close the journal; answered with (drained, index).
    // `view_epoch`: the ring epoch of the view that moves it (its copy set
    // is fenced under it first: fence_copy_set).
    [self](drain_atom, std::uint64_t defer_limit_ms, std::uint64_t view_epoch)
      -> caf::result<drained_atom, std::uint32_t> {
      auto& st = self->state;
      st.defer_limit = std::chrono::milliseconds(defer_limit_ms);
      if (st.mode == partition_mode::closed)
        return {drained_atom::value, st.index};
      if (st.mode != partition_mode::serving)
        return caf::make_error(caf::sec::invalid_argument);
      st.mode = partition_mode::draining;
      st.drain_deadline = std::chrono::steady_clock::now() + drain_wait;
      st.handoff_epoch = view_epoch;
      st.fence_deadline = std::chrono::steady_clock::now() + handoff_fence_wait;
      st.fencing = false;
      st.fenced = false;
      self->delayed_send(self, drain_wait, retry_atom::value);
      st.drained = self->make_response_promise();
      auto rp = st.drained;
      if (st.flush_scheduled || st.core->has_staged())
        flush_now(self);
      close_if_drained(self);
      return rp;
    },
    // The new owner serves the partition: everything held and everything
    // later goes to it.
    [self](forward_atom, caf::actor& target) {
      auto& st = self->state;
      if (st.mode != partition_mode::closed) {
        // Only a closed partition (journal shipped, no write since) may
        // hand its requests on; anything else is a bug of the caller.
        log(log_level::error, "partition ", st.index,
            ": refused to forward: it is not closed for a handoff");
        return;
      }
      st.target = std::move(target);
      st.mode = partition_mode::forwarding;
      forward_deferred(self);
    },
    [self](timer_atom) { on_tick(self); },
    [self](synced_atom, std::uint64_t upto, const std::string& failure) {
      on_synced(self, upto,
                failure.empty() ? status{} : status{make_error(errc::io_error, failure)});
      close_if_drained(self);
    },
    [self](expire_atom) {
      if (!self->state.core)
        return;
      self->state.core->expire_waits();
      redrive_ready(self);
    },
  };
  return serving.or_else(
    self->state.repl.handlers(self, [self] { return self->state.core.get(); }));
}

} // namespace

std::chrono::milliseconds partition_timers::tick() const noexcept {
  std::chrono::milliseconds t{0};
  for (auto d : {fbf_tick, checkpoint_interval, sync_interval})
    if (d.count() > 0 && (t.count() == 0 || d < t))
      t = d;
  return t.count() > 0 ? std::min(t, max_tick) : t;
}

std::uint64_t partition_timers::ticks_per(std::chrono::milliseconds interval) const noexcept {
  auto t = tick();
  if (interval.count() <= 0 || t.count() <= 0)
    return 0;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(interval / t));
}

std::uint64_t partition_timers::checkpoint_every() const noexcept {
  return ticks_per(checkpoint_interval);
}

std::chrono::milliseconds partition_timers::first_tick(std::uint32_t index) const noexcept {
  const auto period = tick();
  return period + period * static_cast<int>(index % 64) / 64;
}

bool partition_timers::checkpoint_due(std::uint64_t tick, std::uint32_t index) const noexcept {
  const auto every = checkpoint_every();
  return every > 0 && (tick + index) % every == 0;
}

caf::actor spawn_partition(caf::actor_system& sys,
                           std::unique_ptr<partition_core> core,
                           partition_placement placement,
                           std::shared_ptr<std::atomic<std::uint64_t>> board_slot,
                           partition_timers timers, bool replicated,
                           std::shared_ptr<background_syncer> syncer) {
  auto box = std::make_shared<std::unique_ptr<partition_core>>(std::move(core));
  switch (placement.where) {
    case partition_placement::kind::shard: {
      hosted_on scope{placement.unit};
      return sys.spawn(partition_fn, box, board_slot, timers, replicated, syncer);
    }
    case partition_placement::kind::scheduler:
      return sys.spawn(partition_fn, box, board_slot, timers, replicated, syncer);
    case partition_placement::kind::detached:
      break;
  }
  return sys.spawn<caf::detached>(partition_fn, box, board_slot, timers, replicated, syncer);
}

} // namespace tally
