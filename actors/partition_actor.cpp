#include "actors/partition_actor.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/caf_types.hpp"
#include "actors/log.hpp"
#include "actors/partition_core.hpp"

namespace tally {

namespace {

using flush_atom = caf::atom_constant<caf::atom("flush")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

struct waiting_write {
  caf::response_promise rp;
  bool is_ack = false; // part_ack, else part_time_resp
  part_time_resp time;
};

struct waiting_read {
  part_read_req req;
  caf::response_promise rp;
};

struct partition_state {
  std::unique_ptr<partition_core> core;
  std::vector<waiting_write> writes;
  std::vector<waiting_read> reads;
  bool flush_scheduled = false;
  bool retry_scheduled = false;
  std::shared_ptr<std::atomic<std::uint64_t>> slot; // node_context::board
  partition_timers timers;
  std::uint64_t ticks = 0;
  static inline const char* name = "partition";
};

using partition_self = caf::stateful_actor<partition_state>*;

void publish(partition_self self) {
  if (self->state.slot)
    self->state.slot->store(self->state.core->blocked_from(),
                            std::memory_order_release);
}

part_read_resp serve(partition_core& core, const part_read_req& req) {
  part_read_resp out;
  for (const auto& it : req.items) {
    auto v = core.read(it.key, it.type, req.snapshot, it.own);
    if (!v) {
      out.err = v.err();
      out.values.clear();
      return out;
    }
    out.values.push_back(*v);
  }
  return out;
}

void flush_now(partition_self self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  auto res = st.core->flush();
  if (!res)
    log(log_level::error, "partition ", st.core->index(),
        ": journal write failed, partition stopped: ", res.err().to_string());
  publish(self);
  auto writes = std::move(st.writes);
  st.writes.clear();
  for (auto& w : writes) {
    if (!res) {
      if (w.is_ack)
        w.rp.deliver(part_ack{res.err()});
      else
        w.rp.deliver(part_time_resp{res.err(), 0, 0});
    } else if (w.is_ack) {
      w.rp.deliver(part_ack{});
    } else {
      w.rp.deliver(std::move(w.time));
    }
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
  auto safe = st.core->safe_time();
  std::vector<waiting_read> still;
  std::uint64_t ahead = 0;
  for (auto& r : st.reads) {
    auto s = r.req.snapshot.get(local_dc);
    if (s <= safe)
      r.rp.deliver(serve(*st.core, r.req));
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
      "; took ", took.count(), " us");
}

void schedule_tick(partition_self self) {
  auto period = self->state.timers.tick();
  if (period.count() > 0)
    self->delayed_send(self, period, tick_atom::value);
}

void on_tick(partition_self self) {
  auto& st = self->state;
  ++st.ticks;
  if (st.timers.fbf_tick.count() > 0)
    st.core->advance_filters();
  auto every = st.timers.checkpoint_every();
  if (every > 0 && st.ticks % every == 0)
    run_checkpoint(self);
  schedule_tick(self);
}

caf::behavior partition_fn(partition_self self,
                           std::shared_ptr<std::unique_ptr<partition_core>> box,
                           std::shared_ptr<std::atomic<std::uint64_t>> slot,
                           partition_timers timers) {
  self->state.core = std::move(*box);
  self->state.slot = std::move(slot);
  self->state.timers = timers;
  publish(self);
  schedule_tick(self);
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.core->has_staged())
      flush_now(self);
    for (auto& r : self->state.reads)
      r.rp.deliver(part_read_resp{make_error(errc::unavailable, "node shutting down"), {}});
    self->state.reads.clear();
    self->quit(msg.reason);
  });
  return {
    [self](part_read_req& req) -> caf::result<part_read_resp> {
      auto& st = self->state;
      if (req.snapshot.get(local_dc) <= st.core->safe_time())
        return serve(*st.core, req);
      auto rp = self->make_response_promise();
      st.reads.push_back({std::move(req), rp});
      retry_reads(self);
      return rp;
    },
    [self](part_prepare_req& req) -> caf::result<part_time_resp> {
      auto& st = self->state;
      auto out = st.core->stage_prepare(req.tx, std::move(req.updates),
                                        req.snapshot_time, req.two_phase);
      if (!out)
        return part_time_resp{out.err(), 0, 0};
      if (!req.two_phase) {
        auto c = st.core->stage_commit(req.tx, out->prepare_time);
        if (!c)
          return part_time_resp{c.err(), 0, 0};
      }
      auto rp = self->make_response_promise();
      st.writes.push_back(
        {rp, false, part_time_resp{std::nullopt, out->prepare_time, out->dismissed}});
      publish(self);
      schedule_flush(self);
      return rp;
    },
    [self](part_commit_req& req) -> caf::result<part_ack> {
      auto& st = self->state;
      auto c = st.core->stage_commit(req.tx, req.commit_time);
      if (!c)
        return part_ack{c.err()};
      auto rp = self->make_response_promise();
      st.writes.push_back({rp, true, {}});
      schedule_flush(self);
      return rp;
    },
    [self](part_abort_req& req) -> part_ack {
      auto& st = self->state;
      auto a = st.core->stage_abort(req.tx);
      publish(self);
      if (st.core->has_staged())
        schedule_flush(self);
      retry_reads(self);
      if (!a)
        return part_ack{a.err()};
      return part_ack{};
    },
    [self](flush_atom) {
      flush_now(self);
      retry_reads(self);
    },
    [self](retry_atom) {
      self->state.retry_scheduled = false;
      retry_reads(self);
    },
    [self](tick_atom) { on_tick(self); },
  };
}

} // namespace

std::chrono::milliseconds partition_timers::tick() const noexcept {
  std::chrono::milliseconds t{0};
  for (auto d : {fbf_tick, checkpoint_interval})
    if (d.count() > 0 && (t.count() == 0 || d < t))
      t = d;
  return t.count() > 0 ? std::min(t, max_tick) : t;
}

std::uint64_t partition_timers::checkpoint_every() const noexcept {
  auto t = tick();
  if (checkpoint_interval.count() <= 0 || t.count() <= 0)
    return 0;
  return std::max<std::uint64_t>(
    1, static_cast<std::uint64_t>(checkpoint_interval / t));
}

caf::actor spawn_partition(caf::actor_system& sys,
                           std::unique_ptr<partition_core> core,
                           bool detached,
                           std::shared_ptr<std::atomic<std::uint64_t>> board_slot,
                           partition_timers timers) {
  auto box = std::make_shared<std::unique_ptr<partition_core>>(std::move(core));
  if (!detached)
    return sys.spawn(partition_fn, box, board_slot, timers);
  return sys.spawn<caf::detached>(partition_fn, box, board_slot, timers);
}

} // namespace tally
