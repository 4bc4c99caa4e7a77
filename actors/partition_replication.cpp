#include "actors/partition_replication.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <tuple>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "common/log.hpp"
#include "ring/ring_state.hpp"

namespace tally {

namespace {

// Records one r_append or r_fetch carries at most: a replica far behind is
// sent its gap in slices, each one durable before the next.
constexpr std::size_t max_records_per_send = 4096;
// Flushed batches kept in memory for re-sends; beyond this, a copy that is
// behind is sent its records from the journal.
constexpr std::size_t max_recent_records = 100000;
// A full copy travels in pieces of this size, one at a time.
constexpr std::size_t seed_chunk_bytes = 1u << 20;
// How long a copy waits for another's answer.
constexpr std::chrono::milliseconds link_timeout{3000};
// How long a write waits for w copies before the copies that took its batch
// without syncing it are asked to sync (partition_replication::eager): long
// enough that a loaded eager copy is not doubled by a lazy one (update p99
// under the cluster bench's load: about 35 ms), short against the 1 s a
// dead node takes to be noticed.
constexpr std::chrono::milliseconds lazy_grace{100};
// How soon a primary sends again to a copy that refused a batch (it is
// being reconfigured to follow this primary).
constexpr std::chrono::milliseconds refused_retry{50};
// How long a primary that stepped down (another copy's round promised a
// higher term) waits before it tries to lead again, if its membership
// still names it: the membership's view of a real take-over arrives
// within gossip's time (milliseconds to a second), and trying earlier
// would fence the new primary in turn.
constexpr std::chrono::milliseconds step_down_grace{1000};
// How long a copy refuses one node's batches before it says so
// (partition_replication::note_refused): a reconfiguration takes
// milliseconds, gossip a second.
constexpr std::chrono::milliseconds refusing_warn_after{3000};
// "No prefix check" in r_append / r_fetch: the record before is unknown.
constexpr std::uint64_t no_prev = UINT64_MAX;
// Set in the role an r_fence answer carries when the copy that promised is
// being filled (or not yet configured, so it cannot tell): its promise
// counts only when every other copy promised too.
constexpr std::uint8_t filling_flag = 0x80;
// Set in the role an r_fence refusal carries when the copy refused because
// it granted another copy a read lease that still holds: the round is
// retried once it runs out.
constexpr std::uint8_t leased_flag = 0x40;
// Set in the role an r_fence refusal carries when the copy refused because
// it promised a round (or took a batch) of a newer view, a higher ring
// epoch than the round's: the promoter's view is behind.
constexpr std::uint8_t newer_view_flag = 0x20;
// Set in the role an r_fence refusal carries when the copy, whatever it
// answers the term, refuses every view older than the round's from now on
// (its saved promise is of that epoch or a newer one): what a handoff's
// fence needs of it (fence_for_handoff).
constexpr std::uint8_t view_fenced_flag = 0x10;

// A copy's answer to a round (r_fence); `failed`: no answer.
struct fence_reply {
  bool failed = false;
  bool promised = false;
  std::uint64_t end = 0;
  std::uint8_t role = 0;
  std::uint64_t last_o = 0, last_s = 0; // tx of the record at end - 1
  copy_term last_term;                  // and its term
  copy_term promised_term;              // what it holds promised
  // It promised, or refuses every older view from now on.
  bool holds_epoch() const noexcept { return promised || (role & view_fenced_flag) != 0; }
};

// Asks `to` for its promise of `t` in a view of `epoch` (a take-over
// round, a joint round's old copies, a handoff's fence); `then` gets the
// answer.
template <class Then>
void ask_fence(caf::event_based_actor* self, const caf::actor& to, const copy_term& t,
               std::uint64_t epoch, Then then) {
  self->request(to, link_timeout, r_fence_atom::value, t.n, t.by, epoch)
    .then(
      [then](bool promised, std::uint64_t end, std::uint8_t role, std::uint64_t last_o,
             std::uint64_t last_s, std::uint64_t tn, node_id& tby, std::uint64_t pn,
             node_id& pby) mutable {
        then(fence_reply{false, promised, end, role, last_o, last_s,
                          copy_term{tn, std::move(tby)}, copy_term{pn, std::move(pby)}});
      },
      [then](caf::error&) mutable {
        fence_reply a;
        a.failed = true;
        then(std::move(a));
      });
}
// What the primary counts of a grant: 9/10 of read_lease from when it
// sent, less 5 ms.
constexpr auto counted_lease =
  partition_replication::read_lease * 9 / 10 - std::chrono::milliseconds{5};

std::pair<std::uint64_t, std::uint64_t> wire_prev(const std::optional<tx_id>& t, bool known) {
  if (!known)
    return {no_prev, no_prev};
  if (!t)
    return {0, 0};
  return {t->origin, t->seq};
}

// The term of the record at `first - 1` that a prefix check sends with its
// transaction (`known`: that record is in `core`'s log; none for LSN 0).
copy_term wire_prev_term(partition_core& core, lsn first, bool known) {
  return known && first > 1 ? core.term_at(first - 1) : copy_term{};
}

// Whether the record at `at` of `core` is transaction (o, s) written under
// term `t` (at 0, "before the first record", is named (0, 0)); nullopt when
// it cannot be told (folded here, or beyond this journal).
std::optional<bool> holds_record(partition_core& core, lsn at, std::uint64_t o,
                                 std::uint64_t s, const copy_term& t) {
  auto mine = core.tx_at(at);
  if (!mine)
    return std::nullopt;
  if (!*mine)
    return o == 0 && s == 0;
  return (*mine)->origin == o && (*mine)->seq == s && core.term_at(at) == t;
}

// True when the record at `first - 1` of `core` is the one (prev_o, prev_s)
// of term `prev_term` names, or cannot be checked (folded, or no check
// asked): Raft's consistency check on (index, term) of the entry before
// (Sec. 5.3), with the record's transaction besides.
bool prefix_matches(partition_core& core, std::uint64_t first, std::uint64_t prev_o,
                    std::uint64_t prev_s, const copy_term& prev_term) {
  if (prev_o == no_prev || first == 0)
    return true;
  if (first - 1 >= core.log_end())
    return true; // beyond this journal: a gap, not a divergence
  return holds_record(core, first - 1, prev_o, prev_s, prev_term).value_or(true);
}

} // namespace

const char* to_string(copy_role r) noexcept {
  switch (r) {
    case copy_role::solo: return "solo";
    case copy_role::primary: return "primary";
    case copy_role::replica: return "replica";
    case copy_role::promoting: return "promoting";
    case copy_role::stale: return "stale";
  }
  return "?";
}

error partition_replication::refusal(std::uint32_t partition) const {
  std::string why = "partition " + std::to_string(partition) + ": this copy is ";
  switch (role_) {
    case copy_role::promoting:
      why += "taking over as primary (catching up); retry";
      break;
    case copy_role::stale:
      why += "stale and serves nothing; retry (the request goes to the primary)";
      break;
    default:
      why += "a replica";
      if (!primary_.empty())
        why += " (primary: " + primary_ + ")";
      why += "; retry";
  }
  return make_error(errc::unavailable, why);
}

caf::actor partition_replication::primary_handle() const {
  if (role_ != copy_role::replica || primary_.empty())
    return {};
  for (const auto& p : peers_)
    if (p.node == primary_)
      return p.handle;
  return {};
}

partition_replication::peer_link* partition_replication::find_peer(const node_id& n) {
  for (auto& p : peers_)
    if (p.node == n)
      return &p;
  return nullptr;
}

bool partition_replication::has_peer(const node_id& n) const {
  return std::any_of(peers_.begin(), peers_.end(),
                     [&](const peer_link& l) { return l.node == n; });
}

void partition_replication::note_refused(const node_id& from) {
  const auto now = std::chrono::steady_clock::now();
  if (from != refusing_from_) {
    refusing_from_ = from;
    refusing_since_ = now;
    refusing_warned_ = false;
    return;
  }
  // Not yet configured (a node waits up to 3 s after its start to hear
  // from its peers first): no plan to disagree with yet.
  if (refusing_warned_ || !configured_ || now - refusing_since_ < refusing_warn_after)
    return;
  refusing_warned_ = true;
  log(log_level::warn, "partition ", index_, ": this copy (", to_string(role_),
      primary_.empty() ? std::string{", following no primary"} : ", following " + primary_,
      ") has refused the batches of ", from, " for ",
      std::chrono::duration_cast<std::chrono::milliseconds>(now - refusing_since_).count(),
      " ms: the two nodes' copy plans name different primaries");
}

void partition_replication::fail_held(const error& err) {
  for (auto& h : held_.take_all())
    h.answer(err);
  fail_carried(err);
}

void partition_replication::fail_carried(const error& err) {
  auto carried = std::move(carried_);
  carried_.clear();
  for (auto& h : carried)
    h.answer(err);
}

void partition_replication::flushed(caf::event_based_actor* self, partition_core& core,
                                    std::vector<answer_fn> answers) {
  if (role_ == copy_role::solo) {
    for (auto& a : answers)
      a(std::nullopt);
    return;
  }
  if (role_ != copy_role::primary || !progress_) {
    // Writes admitted while this copy led, flushed after it stopped leading
    // (stepped down, or the membership moved the primary): durable here
    // only, and this copy's tail may be replaced by the new primary's
    // journal. Acknowledging them lost them (issue 14: an increment
    // acknowledged this way was gone after the next full copy).
    for (auto& a : answers)
      a(make_error(errc::unavailable,
                   "partition " + std::to_string(index_)
                     + ": this copy stopped leading before the write reached "
                     + std::to_string(w_) + " copies; its outcome is unknown: retry with "
                       "the same op ids"));
    return;
  }
  for (auto& b : core.take_flushed()) {
    if (b.empty())
      continue;
    std::uint64_t first_commit = UINT64_MAX;
    for (const auto& r : b.records)
      if (auto* c = std::get_if<commit_record>(&r))
        first_commit = std::min(first_commit, c->commit_time.get(local_dc));
    if (first_commit != UINT64_MAX)
      unreplicated_.add(b.end(), first_commit);
    last_tx_ = record_tx(b.records.back());
    last_tx_known_ = true;
    recent_records_ += b.records.size();
    recent_.push_back(std::move(b));
  }
  while (recent_records_ > max_recent_records && !recent_.empty()) {
    recent_records_ -= recent_.front().records.size();
    recent_.pop_front();
  }
  const lsn end = core.log_end();
  progress_->local_durable(end);
  const auto now = std::chrono::steady_clock::now();
  for (auto& a : answers)
    held_.push(end, held_write{std::move(a), now});
  release(self);
  pump(self, core);
}

void partition_replication::release(caf::event_based_actor*) {
  if (!progress_)
    return;
  const lsn q = progress_->quorum_end();
  for (auto& h : held_.take_ready(q))
    h.answer(std::nullopt);
  const bool rose = unreplicated_.acknowledged(q);
  if (rose && on_visible_)
    on_visible_();
}

void partition_replication::pump(caf::event_based_actor* self, partition_core& core) {
  if (role_ != copy_role::primary || !progress_)
    return;
  lsn keep = core.log_end();
  for (auto& p : peers_) {
    if (!p.handle || p.stale)
      continue;
    keep = std::min(keep, p.seed ? p.seed->end
                                 : std::max<lsn>(progress_->end_of(p.node), 1));
    if (!p.in_flight && progress_->end_of(p.node) != core.log_end())
      send_to(self, core, p);
  }
  ask_lazy_syncs(self, std::chrono::steady_clock::now());
  // The log stays from the slowest live copy on, so that it can be sent
  // from there (the unacknowledged tail is never folded either).
  core.keep_log_from(keep);
  const lsn all = progress_->all_end();
  while (!recent_.empty() && recent_.front().end() <= all) {
    recent_records_ -= recent_.front().records.size();
    recent_.pop_front();
  }
}

void partition_replication::send_to(caf::event_based_actor* self, partition_core& core,
                                    peer_link& p) {
  const lsn from = progress_->end_of(p.node);
  replication_batch b;
  std::optional<tx_id> prev;
  bool prev_known = false;
  if (from == 0) {
    // Where the copy is is not known yet: an empty probe at the end of
    // this journal, which it answers with its own end (or a divergence).
    b.first = core.log_end();
    b.deps = core.dependency_at(b.first);
    prev = last_tx_;
    prev_known = last_tx_known_;
    if (!prev_known) {
      if (auto t = core.tx_at(b.first - 1); t) {
        prev = *t;
        prev_known = true;
        last_tx_ = *t;
        last_tx_known_ = true;
      }
    }
  } else {
    b.first = from;
    // From the batches in memory when they reach back far enough.
    if (!recent_.empty() && recent_.front().first <= from) {
      for (const auto& r : recent_) {
        if (r.end() <= from)
          continue;
        if (b.records.empty() && r.deps) // the batch that holds `from`
          b.deps = dependency_within(*r.deps, r.first, r.records, from);
        for (lsn at = std::max(from, r.first); at < r.end(); ++at) {
          if (b.records.size() >= max_records_per_send)
            break;
          b.records.push_back(r.records[at - r.first]);
        }
      }
    } else {
      auto got = core.records_from(from, max_records_per_send);
      if (!got) {
        if (got.err().code() == errc::not_found) {
          start_seed(self, core, p); // what it misses is folded: a full copy
        } else {
          log(log_level::warn, "partition ", core.index(), ": cannot read the journal to ship to ",
              p.node, ": ", got.err().to_string());
        }
        return;
      }
      b = std::move(*got);
    }
    if (!b.deps)
      b.deps = core.dependency_at(from);
    if (auto t = core.tx_at(from - 1); t) {
      prev = *t;
      prev_known = true;
    }
  }
  auto [po, ps] = wire_prev(prev, prev_known);
  const copy_term pt = wire_prev_term(core, b.first, prev_known);
  p.in_flight = true;
  p.sent_at = std::chrono::steady_clock::now();
  p.flight = ++last_flight_;
  p.flight_epoch = epoch_;
  p.flight_eager = eager(p);
  p.sync_asked = false;
  // No request(): CAF arms a timer on its clock thread for each request
  // with a timeout (a wake-up of that thread to arm it, another to cancel
  // it), two per write with three copies. The copy answers with r_acked;
  // tick() gives up on a batch unanswered for link_timeout (a dead or
  // paused node answers nothing, CAF-NOTES.md "Multi-node").
  self->send(p.handle, r_append_atom::value, self_node_, p.flight, p.flight_eager,
             encode_batch(b), po, ps, pt.n, pt.by, term_.n, term_.by, ring_epoch_);
}

bool partition_replication::eager(const peer_link& p) const {
  // p's place among the live peers, and their number (no allocation: this
  // runs for every batch sent).
  auto live = [](const peer_link& q) { return q.handle && !q.stale && !q.seed; };
  std::size_t count = 0, place = 0;
  for (const auto& q : peers_) {
    if (&q == &p)
      place = count;
    if (live(q))
      ++count;
  }
  const std::size_t need = w_ > 0 ? w_ - 1 : 0;
  if (count <= need)
    return true;
  if (!live(p))
    return false;
  // The w - 1 live peers from the partition's index on, wrapping around.
  return (place + count - index_ % count) % count < need;
}

void partition_replication::ask_lazy_syncs(caf::event_based_actor* self,
                                           std::chrono::steady_clock::time_point now) {
  if (held_.empty() || now - held_.front().since < lazy_grace)
    return;
  for (auto& p : peers_) {
    if (p.in_flight && p.flight != 0 && !p.flight_eager && !p.sync_asked && p.handle) {
      p.sync_asked = true;
      self->send(p.handle, r_sync_atom::value);
    }
  }
}

void partition_replication::on_acked(caf::event_based_actor* self, std::uint64_t flight,
                                     std::uint64_t end, repl_status status,
                                     copy_term promised) {
  // By the batch's number (unique in this copy's life): a replica does not
  // always know its own node id (self_node_ is set when it leads).
  peer_link* p = nullptr;
  for (auto& q : peers_)
    if (q.flight == flight)
      p = &q;
  if (flight == 0 || !p || !p->in_flight || p->flight_epoch != epoch_)
    return; // the answer to a batch given up on, or of an earlier configuration
  p->flight = 0;
  fence_.saw(std::move(promised));
  const node_id node = p->node;
  on_ack(self, node, end, status);
}

void partition_replication::on_ack(caf::event_based_actor* self, const node_id& node,
                                   std::uint64_t end, repl_status status) {
  auto* p = find_peer(node);
  if (!p || !progress_)
    return;
  p->in_flight = false;
  switch (status) {
    case repl_status::applied:
      progress_->acked(node, end);
      granted(*p, p->sent_at);
      break;
    case repl_status::gap:
      progress_->rewound(node, end);
      granted(*p, p->sent_at);
      break;
    case repl_status::diverged:
    case repl_status::folded:
      // Its journal is not a prefix of this one: it gets a full copy.
      log(log_level::warn, "partition ", index_, ": copy on ", node,
          " diverged from this primary's journal: it gets a full copy");
      if (auto* core = core_ ? core_() : nullptr)
        start_seed(self, *core, *p);
      return;
    case repl_status::refused:
      // Not (yet) configured to follow this node: soon again.
      if (!pump_scheduled_) {
        pump_scheduled_ = true;
        self->delayed_send(self, refused_retry, r_pump_atom::value);
      }
      return;
    case repl_status::fenced:
      // That copy promised a higher term to another copy's take-over: this
      // one no longer leads (it tries again if its membership still names
      // it, on the next tick).
      log(log_level::warn, "partition ", index_, ": the copy on ", node,
          " promised a higher term than this primary's (", term_.to_string(), ")");
      step_down(self, copy_term{});
      return;
  }
  release(self);
  if (auto* core = core_ ? core_() : nullptr)
    pump(self, *core);
}

void partition_replication::tick(caf::event_based_actor* self, partition_core& core,
                                 std::chrono::milliseconds limit) {
  const auto now = std::chrono::steady_clock::now();
  if (role_ == copy_role::primary) {
    auto late = held_.take_front_while(
      [&](const held_write& h) { return now - h.since > limit; });
    for (auto& h : late)
      h.answer(make_error(errc::unavailable,
                          "partition " + std::to_string(core.index())
                            + ": the write is durable here but did not reach "
                            + std::to_string(w_) + " copies in time; its outcome is "
                              "unknown: retry with the same op ids"));
    for (auto& p : peers_) {
      // A batch unanswered for link_timeout (its answer, if it comes,
      // no longer counts), or anything else out for twice that: sent again.
      if (p.in_flight
          && now - p.sent_at > (p.flight != 0 ? link_timeout : 2 * link_timeout)) {
        p.in_flight = false;
        p.flight = 0;
      }
    }
    pump(self, core);
    if (now - last_read_ < 2 * read_lease && leased_until_ - now < read_lease / 2)
      renew_lease(self);
  } else if (role_ == copy_role::promoting) {
    promote(self, core);
  } else if (role_ == copy_role::replica && wants_primary_
             && now - stepped_down_at_ >= step_down_grace) {
    // Stepped down (a higher term was promised), and the membership still
    // names this copy after a while (its view would have moved to the new
    // primary by then, had it taken over for good): a new round, under a
    // higher term.
    ++epoch_;
    primary_ = self_node_;
    set_role(copy_role::promoting);
    promote(self, core);
  }
}

void partition_replication::configure(caf::event_based_actor* self, partition_core* core,
                                      copy_role role, node_id primary,
                                      std::vector<node_id> peers,
                                      std::vector<caf::actor> handles, std::uint32_t w,
                                      bool filling, std::uint64_t ring_epoch) {
  const copy_role before = role_;
  const bool was_configured = configured_;
  filling_ = filling;
  configured_ = true;
  // Views only move forward; the epoch its rounds and batches carry.
  ring_epoch_ = std::max(ring_epoch_, ring_epoch);
  // The same configuration again (the membership re-sends on every change
  // of the table) changes nothing.
  bool same_peers = peers.size() == peers_.size();
  for (std::size_t i = 0; same_peers && i < peers.size(); ++i)
    same_peers = peers_[i].node == peers[i] && peers_[i].handle == handles[i];
  const bool wants_primary = role == copy_role::primary;
  const bool is_primary = before == copy_role::primary || before == copy_role::promoting;
  if (same_peers && w == w_ && primary == primary_
      && (wants_primary ? is_primary : before == role)) {
    wants_primary_ = wants_primary;
    if (before == copy_role::promoting && core)
      promote(self, *core); // waiting for its view to reach a promised epoch, maybe
    return;
  }
  // Whether the nodes of its copy set change (not just their actors).
  bool same_nodes = peers.size() == peers_.size();
  for (std::size_t i = 0; same_nodes && i < peers.size(); ++i)
    same_nodes = has_peer(peers[i]);
  if (before == copy_role::stale && role != copy_role::solo)
    return; // a stale copy stays out until it is replaced
  wants_primary_ = role == copy_role::primary;
  ++epoch_;
  log(log_level::debug, "partition ", index_, ": configured as ", to_string(role),
      " (primary ", primary, ", was ", to_string(before), ", epoch ", epoch_, ")");
  std::vector<peer_link> links;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    peer_link l;
    l.node = peers[i];
    l.handle = handles[i];
    if (auto* old = find_peer(peers[i]); old && old->handle == handles[i]) {
      l.stale = old->stale;
      l.lease_until = old->lease_until;
    }
    links.push_back(std::move(l));
  }
  for (auto& old : peers_)
    end_seed(old); // an unfinished full copy is started again if still needed
  if (!same_nodes && !previous_ && was_configured && !peers_.empty()
      && role != copy_role::solo && before != copy_role::stale) {
    // The set it was configured in: its next round is joint, whether it
    // led that set or follows (previous_set), until a primary of the new
    // view ships to it.
    previous_set prev;
    prev.since_epoch = ring_epoch_;
    prev.n = peers_.size() + 1;
    for (const auto& old : peers_) {
      const bool kept = std::find(peers.begin(), peers.end(), old.node) != peers.end();
      if (kept)
        prev.kept.push_back(old.node);
      else
        prev.dropped.emplace_back(old.node, old.handle);
    }
    previous_ = std::move(prev);
  }
  peers_ = std::move(links);
  w_ = w;
  primary_ = std::move(primary);
  if (role == copy_role::primary)
    self_node_ = primary_; // the primary is this node: what it signs batches with
  if (before == copy_role::primary && role != copy_role::primary)
    unreplicated_.clear(); // the partition hears of it once the role changed (set_role)
  if (before == copy_role::primary && role != copy_role::primary)
    fail_held(make_error(errc::unavailable,
                         "partition " + std::to_string(index_) + ": the primary moved to "
                           + (primary_.empty() ? std::string{"another copy set"} : primary_)
                           + " before the write reached " + std::to_string(w_)
                           + " copies; its outcome is unknown: retry with the same op ids"));
  if (!core) {
    set_role(role);
    return;
  }
  if (role == copy_role::solo || role == copy_role::replica) {
    // Nothing to ship any more: no progress, no batches kept, the log
    // truncated by checkpoints alone.
    set_role(role);
    progress_.reset();
    recent_.clear();
    recent_records_ = 0;
    core->keep_flushed(false);
    core->keep_log_from(0);
    if (role == copy_role::solo && before == copy_role::primary && on_visible_)
      on_visible_(); // alone now: its whole journal is on every copy there is
    if (role == copy_role::replica && before != copy_role::replica)
      log(log_level::info, "partition ", core->index(), ": replica of ", primary_);
    return;
  }
  // Primary: a copy that already leads only takes the new peer list,
  // while it still sees enough copies for a write quorum; any other first
  // catches up from the copies that answer.
  std::size_t reachable = 0;
  for (const auto& p : peers_)
    reachable += p.handle ? 1 : 0;
  if (before == copy_role::primary && reachable + 1 < w_) {
    // It lost sight of the copies it needs: they may elect another primary
    // and take writes meanwhile (a paused node, or one cut off). It leads
    // again only through a take-over round under a new term, which brings
    // it what they acknowledged, or finds its own tail stale. Leading on
    // when they came back lost acknowledged writes (docs/RELIABILITY.md,
    // "What the cluster runs found", finding 1).
    stop_leading("partition " + std::to_string(index_)
                 + ": the primary lost sight of its copies before the write reached "
                 + std::to_string(w_) + " copies; its outcome is unknown: retry with the "
                   "same op ids");
    log(log_level::warn, "partition ", core->index(), ": sees ", reachable, " of the ",
        peers_.size(), " other copies, fewer than a write quorum needs: stops leading until a "
        "take-over round succeeds");
    set_role(copy_role::promoting);
    promote(self, *core);
    return;
  }
  if (before == copy_role::primary && !same_nodes) {
    // Its copy set changed (a join, leave or removal): it leads the new set
    // only after a take-over round over it, under a term of the new view's
    // epoch. Kept leading under its old term, copies of the old set that
    // are still on the old view could gather a quorum of their own (two of
    // three, around it) while it writes to the new one (docs/REPLICATION.md,
    // "Rounds across two copy sets"). The copies the change adds are being
    // filled and count only when every copy promised, so the round's
    // promises come from copies of the old set too: the old set's copies
    // that promise refuse every round and batch of the older view from then
    // on (copy_fence.hpp, epochs).
    // Its writes still waiting for w copies are carried through the round:
    // if it stays the most up-to-date copy (its journal kept as it is),
    // they are answered once its new term's record is on w copies (every
    // record before it is then on w copies of the new set, Raft's rule
    // for a new term, Sec. 5.4.2); else "outcome unknown" as before.
    auto carried = held_.take_all();
    const error why = make_error(
      errc::unavailable, "partition " + std::to_string(index_)
                           + ": its copy set changed before the write reached "
                           + std::to_string(w_)
                           + " copies; its outcome is unknown: retry with the same op ids");
    stop_leading(why.message());
    for (auto& h : carried)
      carried_.push_back(std::move(h));
    log(log_level::info, "partition ", core->index(), ": its copy set changed (view ",
        view_rank_name(ring_epoch_), "): leads it after a take-over round");
    set_role(copy_role::promoting);
    promote(self, *core);
    return;
  }
  if (before == copy_role::primary || before == copy_role::solo) {
    if (before == copy_role::solo) // no other copy to ask
      term_ = fence_.start_round(self_node_, wall_clock_us(), ring_epoch_);
    save_promise(core);
    become_primary(self, *core);
    return;
  }
  set_role(copy_role::promoting);
  promote(self, *core);
}

void partition_replication::start_seed(caf::event_based_actor* self, partition_core& core,
                                       peer_link& p) {
  if (p.seed)
    return;
  namespace fs = std::filesystem;
  seed_state st;
  st.dir = core.options().path + ".copy-for-" + std::to_string(std::hash<std::string>{}(p.node));
  std::error_code ec;
  fs::remove_all(st.dir, ec);
  fs::create_directories(st.dir, ec);
  if (ec) {
    log(log_level::error, "partition ", core.index(), ": cannot prepare a full copy in ",
        st.dir, ": ", ec.message());
    p.stale = true;
    return;
  }
  st.end = core.log_end();
  if (auto s = core.copy_store(st.dir); !s) {
    log(log_level::error, "partition ", core.index(), ": cannot copy the store for ", p.node,
        ": ", s.err().to_string());
    fs::remove_all(st.dir, ec);
    p.stale = true;
    return;
  }
  st.file = st.dir + "/data.mdb";
  st.size = fs::file_size(st.file, ec);
  if (ec) {
    log(log_level::error, "partition ", core.index(), ": ", st.file, ": ", ec.message());
    p.stale = true;
    return;
  }
  log(log_level::info, "partition ", core.index(), ": sending a full copy (", st.size,
      " bytes, journal end ", st.end, ") to ", p.node);
  p.seed = std::move(st);
  p.in_flight = true;
  send_seed_chunk(self, p.node);
}

void partition_replication::end_seed(peer_link& p) {
  if (p.seed) {
    std::error_code ec;
    std::filesystem::remove_all(p.seed->dir, ec);
  }
  p.seed.reset();
  p.in_flight = false;
}

void partition_replication::send_seed_chunk(caf::event_based_actor* self, const node_id& node) {
  auto* p = find_peer(node);
  if (!p || !p->seed || !p->handle)
    return;
  auto& st = *p->seed;
  std::string chunk(std::min<std::uint64_t>(seed_chunk_bytes, st.size - st.offset), '\0');
  std::ifstream in{st.file, std::ios::binary};
  in.seekg(static_cast<std::streamoff>(st.offset));
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  if (!in) {
    log(log_level::error, "partition ", index_, ": cannot read ", st.file);
    end_seed(*p);
    p->stale = true;
    return;
  }
  const bool last = st.offset + chunk.size() >= st.size;
  const auto epoch = epoch_;
  const auto offset = st.offset;
  const auto size = chunk.size();
  self->request(p->handle, 3 * link_timeout, r_seed_atom::value, self_node_, offset,
                std::move(chunk), last, term_.n, term_.by, ring_epoch_)
    .then(
      [this, self, node, epoch, offset, size, last](std::uint64_t end, std::uint8_t status) {
        if (epoch != epoch_)
          return;
        auto* pl = find_peer(node);
        if (!pl || !pl->seed)
          return;
        if (static_cast<repl_status>(status) != repl_status::applied) {
          log(log_level::warn, "partition ", index_, ": ", node,
              " refused a piece of the full copy; it is sent again later");
          end_seed(*pl);
          if (progress_)
            progress_->rewound(node, 0);
          return;
        }
        if (!last) {
          pl->seed->offset = offset + size;
          send_seed_chunk(self, node);
          return;
        }
        log(log_level::info, "partition ", index_, ": full copy taken by ", node,
            " (journal end ", end, ")");
        end_seed(*pl);
        if (progress_)
          progress_->rewound(node, end);
        release(self);
        if (auto* c = core_ ? core_() : nullptr)
          pump(self, *c);
      },
      [this, node, epoch](caf::error&) {
        if (epoch != epoch_)
          return;
        if (auto* pl = find_peer(node)) {
          end_seed(*pl);
          if (progress_)
            progress_->rewound(node, 0);
        }
      });
}

void partition_replication::promote(caf::event_based_actor* self, partition_core& core) {
  if (promote_round_ == epoch_)
    return; // a round of this configuration is still out (the tick retries)
  if (leased_to_other(self_node_)) {
    // This copy granted another copy a read lease that still holds: that
    // copy may be serving reads, so no round starts before it runs out
    // (docs/REPLICATION.md, "Read leases").
    if (!pump_scheduled_) {
      pump_scheduled_ = true;
      self->delayed_send(self, granted_until_ - std::chrono::steady_clock::now()
                                 + std::chrono::milliseconds{1},
                         r_pump_atom::value);
    }
    return;
  }
  if (!fence_.may_lead_in(ring_epoch_)) {
    // It promised a round (or took a batch) of a newer view than its own:
    // copies of that view refuse its round, and copies still on its view
    // must not promise it (docs/REPLICATION.md, "Rounds across two copy
    // sets"). It tries again once its membership configures it from that
    // view or a later one.
    log(log_level::debug, "partition ", core.index(), ": promised a round of view ",
        view_rank_name(fence_.promised_epoch()), ", its view is ", view_rank_name(ring_epoch_),
        ": takes over only once its view catches up");
    return;
  }
  promote_round_ = epoch_;
  if (stored_led_) {
    // The set its store last led or followed, when its copy set is another
    // now: the round is joint over it (docs/REPLICATION.md, "Handoffs whose
    // fence gave up").
    if (!previous_) {
      previous_ = previous_from(*stored_led_);
      if (previous_)
        log(log_level::info, "partition ", core.index(), ": its store was last in a copy set of ",
            previous_->n, " in view ", view_rank_name(stored_led_->ring_epoch), " (as the copy of ",
            stored_led_->store_node, "): its take-over round is joint with that set");
    }
    stored_led_.reset();
  }
  // Every acknowledged write is on w of the n copies; the copies that
  // promise this round's term, this one included, are n - w + 1 or more:
  // one of them has it, and none takes a batch of an older primary from
  // now on (replication/copy_fence.hpp).
  const std::size_t n = peers_.size() + 1;
  const std::size_t need = n - std::min<std::size_t>(w_, n); // answers besides this copy
  // A joint round: copies of the previous set (itself among them) that
  // must promise or hold this view's epoch.
  const std::size_t old_need =
    previous_ ? previous_->n - std::min<std::size_t>(w_, previous_->n) + 1 : 0;
  term_ = fence_.start_round(self_node_, wall_clock_us(), ring_epoch_);
  save_promise(&core);
  struct answer {
    std::size_t peer = 0;
    std::uint64_t end = 0;
    std::uint64_t last_o = no_prev, last_s = no_prev; // tx of the record at end - 1
    copy_term last_term;                              // and its term
  };
  struct round {
    std::size_t asked = 0, answered = 0, failed = 0, refused = 0;
    std::size_t filling = 0; // of those answered: copies being filled
    bool finished = false;   // decided (late answers change nothing)
    bool higher = false; // a refusal named a term above this round's
    bool leased = false; // a copy refused: it granted another a read lease
    bool newer_view = false; // a copy refused: it promised a newer view's round
    // A joint round: copies of the previous set that promised or hold the
    // epoch (this one counted), and the dropped ones asked and answered.
    std::size_t old_fenced = 1;
    std::size_t old_asked = 0, old_answered = 0;
    // The copy with the most up-to-date journal: the highest term of its
    // last record, then the longest (Raft's election restriction,
    // Ongaro and Ousterhout 2014, Sec. 5.4.1); this copy on a tie.
    copy_term best_term;
    std::uint64_t best_end = 0;
    std::size_t best = 0; // peers_.size(): this copy; above: a dropped copy
    caf::actor best_handle;
    node_id best_node;
    std::vector<answer> answers;
    // An answer's journal: kept as the best when more up-to-date.
    void consider(const copy_term& last, std::uint64_t end, std::size_t who,
                  const caf::actor& handle, const node_id& node) {
      if (!(std::tie(best_term, best_end) < std::tie(last, end)))
        return;
      best_term = last;
      best_end = end;
      best = who;
      best_handle = handle;
      best_node = node;
    }
  };
  auto r = std::make_shared<round>();
  log(log_level::debug, "partition ", core.index(), ": take-over round (term ",
      term_.to_string(), ", journal end ", core.log_end(), ", ", need, " promises needed)");
  r->best_term = core.last_term();
  r->best_end = core.log_end();
  r->best = peers_.size();
  const auto epoch = epoch_;
  auto done = [this, self, r, need, old_need, epoch]() {
    // The round ends once every copy asked has answered, or as soon as
    // enough copies (not being filled) promised: any n - w + 1 copies meet
    // every write quorum, so the longest of them has every acknowledged
    // write. Waiting for the rest made a round last the 3 s timeout of a
    // copy that never answers (a link lost meanwhile), while the others'
    // rounds, one after the other, fenced it: after kills on 5 nodes three
    // copies of a partition took turns trying to lead and none ever did.
    if (epoch != epoch_ || r->finished)
      return;
    const bool joint_ok = r->old_fenced >= old_need;
    const bool all_in = r->answered + r->failed + r->refused >= r->asked
                        && r->old_answered >= r->old_asked;
    if (!all_in && (r->answered - r->filling < need || !joint_ok))
      return;
    r->finished = true;
    auto* c = core_ ? core_() : nullptr;
    if (!c)
      return;
    log(log_level::debug, "partition ", c->index(), ": take-over round (term ",
        term_.to_string(), ") promised by ", r->answered, " of ", r->asked, " (", r->filling,
        " being filled), refused by ", r->refused, " (most up-to-date: last term ",
        r->best_term.to_string(), ", end ", r->best_end, ")");
    // A copy being filled lacks what its predecessor held (docs/REPLICATION.md,
    // "Filling copies"): its promise counts only when every other copy
    // promised, so that no copy that may hold an acknowledged write is
    // missing from the round (and with every copy there, waiting brings
    // nothing more back: without this, copies all being filled but one
    // never got a primary again).
    const bool everyone = r->answered == peers_.size();
    if ((r->answered - r->filling < need && !everyone) || !joint_ok) {
      promote_round_ = 0; // the next tick asks again
      fence_.abandon_round(term_);
      save_promise(c);
      fail_carried(make_error(errc::unavailable,
                              "partition " + std::to_string(c->index())
                                + ": the primary's take-over round of its new copy set did "
                                  "not get its promises; the write's outcome is unknown: "
                                  "retry with the same op ids"));
      log(r->leased ? log_level::debug : log_level::warn, "partition ", c->index(),
          ": cannot take over yet: ", r->answered, " of the ", need,
          " other copies needed promised term ", term_.to_string(),
          (r->higher ? " (a higher term was promised)" : ""),
          (r->leased ? " (a read lease granted to another copy still holds)" : ""),
          (r->newer_view ? " (a copy promised a round of a newer view)" : ""),
          (joint_ok ? std::string{}
                    : " (" + std::to_string(r->old_fenced) + " of the " + std::to_string(old_need)
                        + " copies of its previous copy set)"),
          "; retrying");
      if ((r->higher || r->leased) && !pump_scheduled_) {
        // Soon again, under a term above the one they named.
        pump_scheduled_ = true;
        self->delayed_send(self, refused_retry, r_pump_atom::value);
      }
      return; // the tick tries again
    }
    if (r->best == peers_.size()) {
      // This copy is the most up-to-date. A copy that is not a prefix of
      // it and whose last record is of an older term holds records of an
      // older primary that never reached w copies (a write on w copies is
      // on one of the copies that promised, and no copy that promised has a
      // later term or, with the same term, a longer journal: Raft's Leader
      // Completeness, Sec. 5.4.3): it is replaced once this copy leads (its
      // first batch finds it diverged, and it gets a full copy). With the
      // same last term (term 0: records written before any term record,
      // with n_val 1) the terms cannot order them: this copy's tail was
      // then never on a majority (a majority would have refused the
      // other's records), and it stands aside as before terms.
      for (const auto& a : r->answers) {
        if (a.last_o == no_prev || a.end == 0 || a.end > c->log_end()
            || a.last_term != r->best_term)
          continue;
        // (folded here: cannot tell, so it counts as the same)
        if (!holds_record(*c, a.end - 1, a.last_o, a.last_s, a.last_term).value_or(true)) {
          report_stale(self, *c, "the copy on " + peers_[a.peer].node
                                   + " holds other records at the same positions, of the"
                                     " same term");
          return;
        }
      }
    } else if (c->log_end() >= r->best_end) {
      // Another copy is more up-to-date (a later term at its end) and this
      // one is as long or longer: its records from some LSN on are an older
      // primary's that never reached w copies (else a copy that promised
      // would hold a later term's record after them, the Figure 8 rule of
      // become_primary). It stands aside: replaced, it gets a full copy.
      // Leading with them (longest wins, before terms) could overwrite
      // acknowledged records on the other copies (docs/REPLICATION.md).
      report_stale(self, *c, "the copy on " + r->best_node
                               + " has a later term (" + r->best_term.to_string()
                               + ") at its journal's end " + std::to_string(r->best_end)
                               + "; this journal ends at " + std::to_string(c->log_end())
                               + " with term " + c->last_term().to_string());
      return;
    }
    round_answers_.clear();
    for (const auto& a : r->answers)
      round_answers_.push_back({peers_[a.peer].node, a.end, a.last_o, a.last_s, a.last_term});
    if (r->best == peers_.size()) {
      become_primary(self, *c, true);
      return;
    }
    fail_carried(make_error(errc::unavailable,
                            "partition " + std::to_string(c->index())
                              + ": another copy was more up-to-date than the primary; the "
                                "write's outcome is unknown: retry with the same op ids"));
    pull_from(self, r->best_handle, r->best_end, r->best_term, epoch);
  };
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i].handle)
      continue;
    ++r->asked;
    ask_fence(self, peers_[i].handle, term_, ring_epoch_,
              [this, r, i, done, epoch](fence_reply a) {
      if (epoch != epoch_)
        return; // reconfigured since it asked: peers_ is another list (a late answer)
      if (a.failed) {
        ++r->failed;
        done();
        return;
      }
      if (previous_ && a.holds_epoch()
          && std::find(previous_->kept.begin(), previous_->kept.end(), peers_[i].node)
               != previous_->kept.end())
        ++r->old_fenced;
      if (!a.promised) {
        ++r->refused;
        // A copy of the previous set that holds the new epoch without
        // promising: counted for the joint round, and so is its journal
        // (it may hold writes acknowledged in the old view).
        if (previous_ && a.holds_epoch() && a.end != 0)
          r->consider(a.last_term, a.end, i, peers_[i].handle, peers_[i].node);
        if (a.role & leased_flag)
          r->leased = true;
        if (a.role & newer_view_flag)
          r->newer_view = true;
        if (term_ < a.promised_term)
          r->higher = true; // else: stale, or no copy open there (handed off)
        fence_.saw(a.promised_term);
        done();
        return;
      }
      ++r->answered;
      if (a.role & filling_flag)
        ++r->filling;
      r->consider(a.last_term, a.end, i, peers_[i].handle, peers_[i].node);
      r->answers.push_back({i, a.end, a.last_o, a.last_s, std::move(a.last_term)});
      done();
    });
  }
  // A joint round also asks the copies of the previous set that the new
  // one drops: they count for the previous set only.
  if (previous_)
    for (const auto& [node, kept_handle] : previous_->dropped) {
      if (gone_for_good(node)) {
        ++r->old_fenced;
        continue;
      }
      // Its copy as the membership last saw it (a node cut off at the
      // change and back since), else the one the previous set kept.
      caf::actor handle = kept_handle;
      for (const auto& [n, h] : others_)
        if (n == node)
          handle = h;
      if (!handle)
        continue;
      ++r->old_asked;
      ask_fence(self, handle, term_, ring_epoch_,
                [this, r, done, handle = handle, node = node](fence_reply a) {
                  ++r->old_answered;
                  if (!a.failed && a.holds_epoch()) {
                    ++r->old_fenced;
                    // Its journal may hold writes acknowledged in the old
                    // view that no copy of the new set has: the most
                    // up-to-date journal of both sets is the one this copy
                    // leads with (pulled, as from any copy: pull_from).
                    if (a.end != 0)
                      r->consider(a.last_term, a.end, peers_.size() + 1, handle, node);
                  }
                  done();
                });
    }
  if (r->asked == 0 && r->old_asked == 0)
    done();
}

std::optional<partition_replication::previous_set>
partition_replication::previous_from(const led_copy_set& led) const {
  // The set's other members as this copy sees them. On a node the set
  // names (the store was its copy there, or a handoff shipped it to a node
  // the set named before its copy opened) this copy counts as that node's;
  // a store shipped here by a handoff to a node outside the set stands in
  // for the copy it was (`store_node`), which is then not asked as well.
  const bool member = led.store_node == self_node_
                      || std::find(led.others.begin(), led.others.end(), self_node_)
                           != led.others.end();
  std::vector<node_id> members;
  if (member && led.store_node != self_node_)
    members.push_back(led.store_node);
  for (const auto& o : led.others)
    if (o != self_node_ && o != led.store_node)
      members.push_back(o);
  auto configured = [this](const node_id& n) { return has_peer(n); };
  if (member && members.size() == peers_.size()
      && std::all_of(members.begin(), members.end(), configured))
    return std::nullopt; // its set as configured: an ordinary round
  previous_set prev;
  prev.since_epoch = ring_epoch_;
  prev.n = members.size() + 1;
  for (auto& m : members) {
    if (configured(m))
      prev.kept.push_back(std::move(m));
    else
      prev.dropped.emplace_back(std::move(m), caf::actor{}); // its handle from r_others
  }
  return prev;
}

bool partition_replication::save_set_it_is_in(partition_core& core) {
  if (peers_.empty() || self_node_.empty())
    return true; // no set, or its membership never said which node it is on
  led_copy_set in_set;
  in_set.ring_epoch = ring_epoch_;
  in_set.store_node = self_node_;
  for (const auto& p : peers_)
    in_set.others.push_back(p.node);
  if (core.led_set() == in_set)
    return true;
  if (auto st = core.save_led_set(in_set); !st) {
    log(log_level::warn, "partition ", core.index(), ": cannot save the copy set it is in: ",
        st.err().to_string());
    return false;
  }
  return true;
}

bool partition_replication::gone_for_good(const node_id& node) const {
  if (std::find(removed_.begin(), removed_.end(), node) != removed_.end())
    return true;
  return std::any_of(others_.begin(), others_.end(),
                     [&](const auto& o) { return o.first == node && !o.second; });
}

void partition_replication::fence_for_handoff(caf::event_based_actor* self,
                                              partition_core& core, std::uint64_t view_epoch,
                                              std::function<void(bool)> done) {
  if (peers_.empty()) {
    done(true); // solo: no other copy
    return;
  }
  if (role_ != copy_role::primary) {
    // A copy that does not lead (another copy of its set took over, or a
    // round is under way) fences nothing: no copy follows it. Its store
    // ships with the set it is in, under its own node (the new owner
    // stands in for this copy in its joint round over that set; a node the
    // set names counts as itself), not the set it last led
    // (docs/REPLICATION.md, "Handoffs whose fence gave up").
    done(save_set_it_is_in(core)); // a failure: tried again (fence_copy_set)
    return;
  }
  const std::uint64_t epoch = std::max(view_epoch, ring_epoch_);
  // The same count as a take-over round (promote): the n - w + 1 copies
  // that promise, this one among them, meet every w copies of the set.
  const std::size_t n = peers_.size() + 1;
  const std::size_t need = n - std::min<std::size_t>(w_, n);
  const auto t = fence_.start_round(self_node_, wall_clock_us(), epoch);
  if (!save_promise(&core)) {
    fence_.abandon_round(t);
    done(false);
    return;
  }
  struct round {
    std::size_t asked = 0, promised = 0, other = 0;
    bool finished = false;
  };
  auto r = std::make_shared<round>();
  const auto index = core.index();
  const std::size_t others = peers_.size();
  auto settle = [this, r, need, done, index, t, epoch, others]() {
    if (r->finished)
      return;
    const bool all_in = r->promised + r->other >= r->asked;
    if (r->promised < need && !all_in)
      return;
    r->finished = true;
    const bool ok = r->promised >= need;
    log(ok ? log_level::info : log_level::warn, "partition ", index,
        ": handoff fence (term ", t.to_string(), ", view ", view_rank_name(epoch), ") held by ",
        r->promised, " of the ", others, " other copies (", r->asked, " asked), ", need,
        " needed");
    if (ok) {
      // Fenced: the store ships without its led set, and its new owner's
      // round is an ordinary one. A fence that gives up leaves it, and the
      // new owner's round is joint over that set ("Handoffs whose fence
      // gave up").
      auto* c = core_ ? core_() : nullptr;
      if (c && c->led_set())
        if (auto st = c->save_led_set(std::nullopt); !st) {
          log(log_level::warn, "partition ", index, ": cannot clear its led copy set: ",
              st.err().to_string());
          done(false); // tried again, as a fence that failed (fence_copy_set)
          return;
        }
    }
    done(ok);
  };
  for (auto& p : peers_) {
    if (gone_for_good(p.node)) {
      ++r->promised; // takes part in no round or batch of the old view
      continue;
    }
    if (!p.handle)
      continue;
    ++r->asked;
    ask_fence(self, p.handle, t, epoch, [this, r, settle](fence_reply a) {
      // A copy being filled counts too, and so does one that refused the
      // term but holds the epoch (view_fenced_flag): the point is that it
      // refuses the old view's rounds and batches, not what it holds.
      if (!a.failed && a.holds_epoch()) {
        ++r->promised;
      } else {
        ++r->other;
        if (!a.failed)
          fence_.saw(a.promised_term); // a retry goes above it
      }
      settle();
    });
  }
  settle();
}

void partition_replication::pull_from(caf::event_based_actor* self, caf::actor peer,
                                      std::uint64_t target, copy_term target_term,
                                      std::uint64_t epoch) {
  auto* c = core_ ? core_() : nullptr;
  if (!c || epoch != epoch_ || !peer)
    return;
  const lsn from = c->log_end();
  if (from >= target) {
    // The pulled journal ends as the copy's it came from, with its term
    // (a record of another term at the same position: not the same
    // journal, though the prefix checks, which compare transactions, passed).
    if (c->last_term() != target_term) {
      report_stale(self, *c, "after catching up its last record has term "
                               + c->last_term().to_string() + ", the copy it caught up from "
                               + target_term.to_string());
      return;
    }
    become_primary(self, *c, true);
    return;
  }
  std::optional<tx_id> prev;
  bool known = false;
  if (auto t = c->tx_at(from - 1); t) {
    prev = *t;
    known = true;
  }
  auto [po, ps] = wire_prev(prev, known);
  const copy_term pt = wire_prev_term(*c, from, known);
  self->request(peer, link_timeout, r_fetch_atom::value, from, po, ps, pt.n, pt.by,
                std::uint64_t{max_records_per_send})
    .then(
      [this, self, peer, target, target_term, epoch](std::uint8_t status, std::string& bytes) {
        if (epoch != epoch_)
          return;
        auto* core = core_ ? core_() : nullptr;
        if (!core)
          return;
        auto st = static_cast<repl_status>(status);
        if (st == repl_status::diverged || st == repl_status::folded) {
          report_stale(self, *core,
                       st == repl_status::diverged
                         ? "its journal has records the other copies do not"
                         : "the records it misses are folded into the other copies' checkpoints");
          return;
        }
        if (st != repl_status::applied) {
          promote_round_ = 0; // retried by the tick
          return;
        }
        auto b = decode_batch(bytes);
        if (!b) {
          log(log_level::warn, "partition ", core->index(), ": bad catch-up batch: ",
              b.err().to_string());
          promote_round_ = 0;
          return;
        }
        if (b->empty()) {
          become_primary(self, *core, true);
          return;
        }
        // The copy that sent it checked the record before it (r_fetch's
        // prefix check); the Bloom clock checks the commits before that
        // (docs/REPLICATION.md, "Dependency check").
        switch (core->check_dependencies(*b, {})) {
          case dependency_verdict::apply:
            break;
          case dependency_verdict::gap:
            promote_round_ = 0; // retried by the tick
            return;
          case dependency_verdict::diverged:
            report_stale(self, *core,
                         "its Bloom clock lacks commits that the copy it catches up from "
                         "has before the same record");
            return;
        }
        auto end = core->apply_replicated(*b);
        if (on_replicated_)
          on_replicated_();
        if (!end) {
          log(log_level::error, "partition ", core->index(), ": catch-up failed: ",
              end.err().to_string());
          promote_round_ = 0;
          return;
        }
        pull_from(self, peer, target, target_term, epoch);
      },
      [this, epoch](caf::error&) {
        if (epoch == epoch_)
          promote_round_ = 0; // retried by the tick
      });
}

void partition_replication::become_primary(caf::event_based_actor* self, partition_core& core,
                                           bool after_round) {
  std::vector<node_id> nodes;
  for (const auto& p : peers_)
    nodes.push_back(p.node);
  auto prog = replica_progress::make(nodes, std::min<std::uint32_t>(w_, nodes.size() + 1));
  if (!prog) {
    log(log_level::error, "partition ", core.index(), ": ", prog.err().to_string());
    return;
  }
  const bool was = role_ == copy_role::primary;
  if (!was) {
    // Its read lease is earned anew, from the copies' grants to it.
    leased_until_ = {};
    for (auto& p : peers_)
      p.lease_until = {};
  }
  progress_ = std::move(*prog);
  progress_->local_durable(core.log_end());
  if (after_round) {
    // What the round learnt: how far the copies that promised go (each a
    // prefix of this journal, checked). The tail beyond the quorum point is
    // on fewer than w copies (an old primary's last writes, answered
    // "outcome unknown" or not at all): its commits stay invisible to reads
    // until it is, as a primary's own fresh writes do, so that no read
    // shows what a failover right now could take back.
    for (const auto& a : round_answers_) {
      if (a.end == 0 || a.end > core.log_end() || a.last_o == no_prev)
        continue;
      // (folded here: cannot tell, so not counted)
      if (holds_record(core, a.end - 1, a.last_o, a.last_s, a.last_term).value_or(false))
        progress_->acked(a.node, a.end);
    }
  }
  bool flush_term = false;
  if (term_.n != 0 && core.last_term() != term_ && staged_term_ != term_) {
    // A new term starts with its term record (journal/record.hpp): every
    // record after it is this term's, and rounds compare copies by it.
    // Flushed at the end, once this copy leads (the partition ships it).
    const lsn at = core.stage_term(term_);
    staged_term_ = term_;
    flush_term = true;
    if (after_round) {
      // Raft's Figure 8 (Sec. 5.4.2): records of older terms count as on w
      // copies only once a record of this term after them is. Counted as
      // soon as they reached w copies, such a record (an older primary's,
      // adopted by this round) could still be replaced by a copy holding a
      // later, shorter term, were this copy to fail now, and a read would
      // have shown it. So every commit of the journal stays invisible until
      // the term record is on w copies (commit time 0: every snapshot
      // waits, for one replication round trip; writes are answered after
      // it anyway, as they come after it).
      unreplicated_.clear();
      unreplicated_.add(at + 1, 0);
      if (on_visible_)
        on_visible_();
      // Writes carried through the round (its copy set changed): their
      // records are before the term record, answered once it is on w
      // copies.
      for (auto& h : carried_)
        held_.push(at + 1, std::move(h));
      carried_.clear();
    }
  }
  fail_carried(make_error(errc::unavailable,
                          "partition " + std::to_string(index_)
                            + ": the primary's copy set changed before the write reached "
                            + std::to_string(w_)
                            + " copies; its outcome is unknown: retry with the same op ids"));
  set_role(copy_role::primary);
  core.keep_flushed(true);
  last_tx_known_ = false;
  // The set it leads, kept in its store: if a handoff ships the store
  // without fencing this set, the new owner's round is joint over it
  // (docs/REPLICATION.md, "Handoffs whose fence gave up").
  save_set_it_is_in(core);
  for (auto& p : peers_) {
    p.in_flight = false;
    p.lease_in_flight = false;
  }
  if (!was)
    log(log_level::info, "partition ", core.index(), ": primary (", peers_.size(),
        " other copies, w = ", w_, ", journal end ", core.log_end(), ", term ",
        term_.to_string(), ")");
  release(self);
  pump(self, core);
  if (flush_term && on_needs_flush_)
    on_needs_flush_();
}

void partition_replication::step_down(caf::event_based_actor*, const copy_term& by) {
  if (role_ != copy_role::primary && role_ != copy_role::promoting)
    return;
  ++epoch_;
  log(log_level::warn, "partition ", index_, ": steps down as primary (term ",
      term_.to_string(), "): a higher term was promised",
      (by.by.empty() ? std::string{} : " to " + by.by + " (term " + by.to_string() + ")"));
  stop_leading("partition " + std::to_string(index_) + ": the primary stepped down "
               "before the write reached " + std::to_string(w_)
               + " copies; its outcome is unknown: retry with the same op ids");
  primary_ = by.by; // it takes batches from the copy it promised (none if unknown)
  set_role(copy_role::replica);
  stepped_down_at_ = std::chrono::steady_clock::now();
}

void partition_replication::set_role(copy_role r) {
  const bool served = serves_clients();
  role_ = r;
  if (r == copy_role::primary || r == copy_role::solo || r == copy_role::stale)
    previous_.reset(); // it leads (its joint round succeeded), or is out
  if (served && !serves_clients()) {
    // First the role, then the news: a copy that stops leading has dropped
    // its unreplicated tail's hold on reads (stop_leading, configure), and
    // the reads parked for it must be refused, not served with it
    // (docs/RELIABILITY.md, finding 9: retried while the copy still counted
    // as primary, they showed commits on one copy of three).
    if (on_stopped_serving_)
      on_stopped_serving_();
    if (on_visible_)
      on_visible_(); // republishes this copy's stable-time slot
  }
  if (on_role_changed_)
    on_role_changed_();
}

void partition_replication::stop_leading(const std::string& why) {
  fail_held(make_error(errc::unavailable, why));
  unreplicated_.clear(); // the caller changes the role next (set_role), which tells the partition
  for (auto& p : peers_)
    end_seed(p);
  progress_.reset();
  recent_.clear();
  recent_records_ = 0;
  if (auto* core = core_ ? core_() : nullptr) {
    core->keep_flushed(false);
    core->keep_log_from(0);
  }
}

void partition_replication::report_stale(caf::event_based_actor* self, partition_core& core,
                                         const std::string& why) {
  if (role_ == copy_role::stale)
    return;
  set_role(copy_role::stale);
  ++epoch_;
  fail_held(make_error(errc::unavailable, "partition " + std::to_string(core.index())
                                            + ": this copy went stale; retry"));
  log(log_level::warn, "partition ", core.index(), ": this copy is stale (", why,
      "): it serves nothing until it is replaced");
  if (membership_)
    self->send(membership_, r_stale_atom::value, core.index());
}

bool partition_replication::save_promise(partition_core* c) {
  if (!c
      || (c->promised_term() == fence_.promised()
          && c->promised_epoch() == fence_.promised_epoch()))
    return true;
  if (auto st = c->save_promised_term(fence_.promised(), fence_.promised_epoch()); !st) {
    log(log_level::warn, "partition ", index_, ": cannot save its promise of term ",
        fence_.promised().to_string(), ": ", st.err().to_string());
    return false;
  }
  return true;
}

void partition_replication::grant_lease(const node_id& from) {
  granted_to_ = from;
  granted_until_ = std::chrono::steady_clock::now() + read_lease;
}

bool partition_replication::leased_to_other(const node_id& to) const {
  return std::chrono::steady_clock::now() < granted_until_ && granted_to_ != to;
}

void partition_replication::granted(peer_link& p, std::chrono::steady_clock::time_point sent) {
  p.lease_until = std::max(p.lease_until, sent + counted_lease);
  if (w_ <= 1)
    return;
  // The lease holds while w - 1 copies' grants do (with this copy, w): any
  // round's n - w + 1 promisers meet them, and each refuses until its
  // grant has run out (later than counted here).
  std::vector<std::chrono::steady_clock::time_point> until;
  for (const auto& q : peers_)
    if (q.handle)
      until.push_back(q.lease_until);
  if (until.size() + 1 < w_)
    return;
  std::nth_element(until.begin(), until.begin() + (w_ - 2), until.end(),
                   std::greater<>{});
  const auto now = std::chrono::steady_clock::now();
  const bool lapsed = leased_until_ <= now;
  leased_until_ = until[w_ - 2];
  if (lapsed && leased_until_ > now && on_visible_)
    on_visible_(); // the reads parked for it are served now
}

void partition_replication::note_read(caf::event_based_actor* self) {
  if (role_ != copy_role::primary || w_ <= 1)
    return;
  const auto now = std::chrono::steady_clock::now();
  last_read_ = now;
  if (leased_until_ - now < read_lease / 2)
    renew_lease(self);
}

void partition_replication::renew_lease(caf::event_based_actor* self) {
  if (role_ != copy_role::primary || w_ <= 1)
    return;
  const auto epoch = epoch_;
  for (auto& p : peers_) {
    if (!p.handle || p.lease_in_flight)
      continue;
    p.lease_in_flight = true;
    const auto sent = std::chrono::steady_clock::now();
    const node_id node = p.node;
    self->request(p.handle, link_timeout, r_lease_atom::value, self_node_, term_.n, term_.by,
                  ring_epoch_)
      .then(
        [this, self, epoch, node, sent](bool ok, std::uint64_t pn, node_id& pby) {
          auto* q = find_peer(node);
          if (q)
            q->lease_in_flight = false;
          if (!q || epoch != epoch_)
            return;
          copy_term theirs{pn, std::move(pby)};
          fence_.saw(theirs);
          if (ok) {
            granted(*q, sent);
          } else if (term_ < theirs) {
            // That copy promised a higher term: another copy took over.
            log(log_level::warn, "partition ", index_, ": the copy on ", node,
                " promised a higher term than this primary's (", term_.to_string(), ")");
            step_down(self, copy_term{});
          }
        },
        [this, node](caf::error&) {
          if (auto* q = find_peer(node))
            q->lease_in_flight = false;
        });
  }
}

std::string partition_replication::describe() const {
  std::ostringstream os;
  os << to_string(role_);
  if (role_ == copy_role::replica && !primary_.empty())
    os << " of " << primary_;
  if (filling_)
    os << " (filling)";
  if (role_ == copy_role::primary && progress_) {
    os << ", term " << term_.to_string() << ", w " << w_;
    if (w_ > 1 && std::chrono::steady_clock::now() >= leased_until_)
      os << ", read lease run out";
    for (const auto& p : peers_)
      os << "; " << p.node << (p.handle ? "" : " (down)") << (p.stale ? " (stale)" : "")
         << " at " << progress_->end_of(p.node);
  }
  return os.str();
}

caf::message_handler partition_replication::handlers(caf::event_based_actor* self,
                                              std::function<partition_core*()> core) {
  core_ = std::move(core);
  if (auto* c = core_()) {
    index_ = c->index();
    // What this copy promised before a restart, and the term it last wrote
    // under (a copy that took a batch of term t had promised t).
    fence_.restore(c->promised_term(), c->last_term(), c->promised_epoch());
    stored_led_ = c->led_set();
    // A read lease granted before a restart is not known: for read_lease
    // from its start this copy promises no round (docs/REPLICATION.md,
    // "Read leases").
    grant_lease(node_id{"?"});
  }
  return {
    [this](r_node_atom, node_id& node) {
      if (!node.empty())
        self_node_ = std::move(node);
    },
    [this](r_others_atom, std::vector<node_id>& removed, std::vector<node_id>& nodes,
           std::vector<caf::actor>& handles) {
      removed_ = std::move(removed);
      others_.clear();
      for (std::size_t i = 0; i < nodes.size() && i < handles.size(); ++i)
        others_.emplace_back(std::move(nodes[i]), std::move(handles[i]));
    },
    [this, self](r_config_atom, std::uint8_t role, node_id& primary,
                 std::vector<node_id>& peers, std::vector<caf::actor>& handles,
                 std::uint32_t w, bool filling, std::uint64_t ring_epoch) {
      membership_ = caf::actor_cast<caf::actor>(self->current_sender());
      if (peers.size() != handles.size() || role > static_cast<std::uint8_t>(copy_role::stale))
        return;
      configure(self, core_(), static_cast<copy_role>(role), std::move(primary),
                std::move(peers), std::move(handles), w, filling, ring_epoch);
    },
    [this, self](r_acked_atom, std::uint64_t flight, std::uint64_t end,
                 std::uint8_t status, std::uint64_t promised_n, node_id& promised_by) {
      on_acked(self, flight, end, static_cast<repl_status>(status),
               copy_term{promised_n, std::move(promised_by)});
    },
    [this](r_sync_atom) {
      if (sync_asked_)
        sync_asked_();
    },
    [this, self](r_append_atom, node_id& from, std::uint64_t flight, bool sync_now,
                 std::string& bytes,
                 std::uint64_t prev_o, std::uint64_t prev_s, std::uint64_t prev_term_n,
                 node_id& prev_term_by, std::uint64_t term_n, node_id& term_by,
                 std::uint64_t ring_epoch) {
      // Answered with r_acked to the sender (the primary's partition actor).
      auto to = caf::actor_cast<caf::actor>(self->current_sender());
      auto answer = [this, self, to, flight](std::uint64_t end, repl_status s) {
        if (to)
          self->send(to, r_acked_atom::value, flight, end,
                     static_cast<std::uint8_t>(s), fence_.promised().n, fence_.promised().by);
      };
      auto* c = core_();
      if (!c)
        return answer(0, repl_status::refused);
      const lsn end = c->log_end();
      if (!fence_.admits(copy_term{term_n, std::move(term_by)}, ring_epoch))
        return answer(end, repl_status::fenced);
      if (!save_promise(c))
        return answer(end, repl_status::refused);
      if (role_ != copy_role::replica || from != primary_) {
        note_refused(from);
        return answer(end, repl_status::refused);
      }
      refusing_from_.clear();
      grant_lease(from);
      // A primary of the new view leads (after its own joint round, or a
      // handoff's fence): the previous set is fenced.
      if (previous_ && ring_epoch >= previous_->since_epoch)
        previous_.reset();
      if (ring_epoch >= ring_epoch_) {
        stored_led_.reset(); // its view's primary leads: its round fenced
        // The set it follows is settled: its store names it from now on, so
        // that a handoff of the store closed, unopened or drained still
        // carries the set its copy was in ("Handoffs whose fence gave
        // up"). Once per configuration, a synced meta commit when it changed.
        if (saved_set_epoch_ != epoch_ && save_set_it_is_in(*c))
          saved_set_epoch_ = epoch_;
      }
      auto b = decode_batch(bytes);
      if (!b) {
        log(log_level::warn, "partition ", c->index(), ": bad batch from ", from, ": ",
            b.err().to_string());
        return answer(end, repl_status::refused);
      }
      // Everything the batch depends on here? The Bloom clock first, the
      // exact checks (position, prefix) only when it cannot decide
      // (docs/REPLICATION.md, "Dependency check").
      switch (c->check_dependencies(
        *b, [&] {
          return prefix_matches(*c, b->first, prev_o, prev_s,
                                copy_term{prev_term_n, prev_term_by});
        })) {
        case dependency_verdict::gap:
          return answer(end, repl_status::gap);
        case dependency_verdict::diverged:
          return answer(end, repl_status::diverged); // the primary sends a full copy
        case dependency_verdict::apply:
          break;
      }
      if (b->empty() && b->first < end)
        return answer(end, repl_status::diverged); // this copy holds more than the primary
      // A batch starting inside this journal (a resend, or a new primary's
      // first batch to a copy that holds a former primary's unacknowledged
      // tail): its records there must be this journal's, else the tail is
      // not the primary's and the copy gets a full copy. Skipped unchecked,
      // such a tail stayed in place of records the new primary had
      // acknowledged (chaos run, 3 nodes, kill -9, seed 9470923209104122295).
      if (b->first < end && !c->overlap_matches(*b))
        return answer(end, repl_status::diverged);
      auto applied = c->apply_replicated(*b);
      if (on_replicated_)
        on_replicated_();
      if (!applied) {
        report_stale(self, *c, applied.err().to_string());
        return answer(end, repl_status::diverged);
      }
      if (needs_sync_ && c->log().mode() == durability::batch && *applied > c->durable_end()) {
        // Acknowledged once durable, by a sync on the sync threads: the
        // shard goes on meanwhile (it used to wait for this copy's fsync,
        // every other partition on it with it).
        const lsn upto = *applied;
        // A copy being filled syncs at once whatever the primary asked:
        // it counts as current only once its end reaches the primary's
        // (copy_plan's check_filling), which a copy answering a batch a
        // tick at a time would not do under load.
        needs_sync_(upto, sync_now || filling_, [answer, upto](status outcome) {
          answer(upto, outcome ? repl_status::applied : repl_status::refused);
        });
        return;
      }
      return answer(*applied, repl_status::applied);
    },
    [this](r_fetch_atom, std::uint64_t from, std::uint64_t prev_o, std::uint64_t prev_s,
           std::uint64_t prev_term_n, node_id& prev_term_by,
           std::uint64_t max) -> std::tuple<std::uint8_t, std::string> {
      auto* c = core_();
      auto status = [](repl_status s) { return static_cast<std::uint8_t>(s); };
      if (!c || role_ == copy_role::stale)
        return {status(repl_status::refused), {}};
      if (!prefix_matches(*c, from, prev_o, prev_s,
                          copy_term{prev_term_n, prev_term_by}))
        return {status(repl_status::diverged), {}};
      if (from > c->log_end())
        return {status(repl_status::diverged), {}};
      auto b = c->records_from(from, std::min<std::uint64_t>(max, max_records_per_send));
      if (!b)
        return {status(b.err().code() == errc::not_found ? repl_status::folded
                                                         : repl_status::refused),
                {}};
      return {status(repl_status::applied), encode_batch(*b)};
    },
    [this](r_seed_atom, node_id& from, std::uint64_t offset, std::string& bytes, bool last,
           std::uint64_t term_n, node_id& term_by,
           std::uint64_t ring_epoch) -> std::tuple<std::uint64_t, std::uint8_t> {
      auto* c = core_();
      auto status = [](repl_status s) { return static_cast<std::uint8_t>(s); };
      if (!fence_.admits(copy_term{term_n, std::move(term_by)}, ring_epoch))
        return {0, status(repl_status::fenced)};
      if (!c || role_ != copy_role::replica || from != primary_ || !reopen_ || !save_promise(c))
        return {0, status(repl_status::refused)};
      namespace fs = std::filesystem;
      const std::string dir = c->options().path + ".copy-in";
      const std::string file = dir + "/data.mdb";
      std::error_code ec;
      if (offset == 0) {
        fs::remove_all(dir, ec);
        fs::create_directories(dir, ec);
      }
      auto have = fs::file_size(file, ec);
      if (ec)
        have = 0;
      if (have != offset)
        return {0, status(repl_status::refused)}; // out of order: started again
      {
        std::ofstream out{file, std::ios::binary | std::ios::app};
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out)
          return {0, status(repl_status::refused)};
      }
      if (!last)
        return {offset + bytes.size(), status(repl_status::applied)};
      auto end = reopen_(dir);
      if (!end) {
        log(log_level::error, "partition ", index_, ": cannot take the full copy from ", from,
            ": ", end.err().to_string());
        return {0, status(repl_status::refused)};
      }
      save_promise(core_()); // the new journal holds the primary's promise, not this copy's
      if (on_replicated_)
        on_replicated_();
      log(log_level::info, "partition ", index_, ": took a full copy from ", from,
          " (journal end ", *end, ")");
      return {*end, status(repl_status::applied)};
    },
    // A primary renews its read lease (docs/REPLICATION.md, "Read leases"):
    // granted as with a batch, by a replica of that primary.
    [this](r_lease_atom, node_id& from, std::uint64_t term_n, node_id& term_by,
           std::uint64_t ring_epoch) -> std::tuple<bool, std::uint64_t, node_id> {
      auto* c = core_();
      auto answer = [this](bool ok) -> std::tuple<bool, std::uint64_t, node_id> {
        return {ok, fence_.promised().n, fence_.promised().by};
      };
      if (!c || !fence_.admits(copy_term{term_n, std::move(term_by)}, ring_epoch)
          || !save_promise(c))
        return answer(false);
      if (role_ != copy_role::replica || from != primary_)
        return answer(false);
      grant_lease(from);
      return answer(true);
    },
    [this, self](r_pump_atom) {
      pump_scheduled_ = false;
      auto* c = core_();
      if (c && role_ == copy_role::promoting)
        promote(self, *c); // a round refused for a higher term: again, above it
      else if (c)
        pump(self, *c);
    },
    // A take-over round's question (replication/copy_fence.hpp): promise
    // its term, and say how far this journal goes. Promised, a primary or
    // a promoting copy of a lower term steps down; a replica takes
    // batches from the promoter from now on.
    [this, self](r_fence_atom, std::uint64_t term_n, node_id& term_by, std::uint64_t ring_epoch)
      -> std::tuple<bool, std::uint64_t, std::uint8_t, std::uint64_t, std::uint64_t,
                    std::uint64_t, node_id, std::uint64_t, node_id> {
      auto* c = core_();
      copy_term t{term_n, std::move(term_by)};
      // Only a copy of this copy's own copy set (its membership's last
      // configuration) gets its promise: a copy that the current ring no
      // longer counts (a leftover of an older epoch, still configured as it
      // was) or whose node's view is behind could otherwise gather a
      // quorum of promises from a copy set that is not the one the primary
      // writes to, and two primaries would lead at once (seen in a loaded
      // 5-node chaos run, docs/REPLICATION.md, "Rounds from outside the
      // copy set"). Unconfigured (just opened), a copy cannot tell.
      const bool member = !configured_ || has_peer(t.by);
      // A read lease this copy granted another copy still holds: that copy
      // may be serving reads, so no other round gets this promise before it
      // runs out (docs/REPLICATION.md, "Read leases").
      const bool leased = leased_to_other(t.by);
      // A round of an older view than one this copy promised (or took a
      // batch of) is refused whatever its term (copy_fence.hpp, epochs).
      const bool older_view = ring_epoch < fence_.promised_epoch();
      if (!c || role_ == copy_role::stale || role_ == copy_role::solo || !member || leased
          || !fence_.promise(t, ring_epoch) || !save_promise(c)) {
        // Refused, a copy configured from a view at least as new as the
        // round's still takes its epoch: it refuses every older view from
        // now on, as its own view's copies would have it (the round comes
        // from a copy that moved on too: a handoff's fence of the old copy
        // set, whose sender this copy's view no longer names).
        // So does a copy asked by a copy outside its set under a newer
        // view than its own (and that granted no lease still holding): its
        // set is changing, and the asker is the new view's (a handoff's new
        // owner running its joint round over the set the store it received
        // led: "Handoffs whose fence gave up").
        const bool newer_outsider = !member && !leased && ring_epoch > ring_epoch_;
        bool view_fenced = false;
        if (c && configured_ && role_ != copy_role::stale && role_ != copy_role::solo
            && (ring_epoch <= ring_epoch_ || newer_outsider)) {
          fence_.raise_epoch(ring_epoch);
          view_fenced = fence_.promised_epoch() >= ring_epoch && save_promise(c);
          // A primary of its older view stops leading: its own copy would
          // count in a write quorum of the view it now refuses.
          if (view_fenced && newer_outsider
              && (role_ == copy_role::primary || role_ == copy_role::promoting))
            step_down(self, copy_term{});
        }
        const auto& p = fence_.promised();
        const auto flags = static_cast<std::uint8_t>(static_cast<std::uint8_t>(role_)
                                                     | (leased ? leased_flag : 0)
                                                     | (older_view ? newer_view_flag : 0)
                                                     | (view_fenced ? view_fenced_flag : 0));
        if (!view_fenced)
          return {false, 0, flags, no_prev, no_prev, 0, node_id{}, p.n, p.by};
        // Holding the epoch, it says how far its journal goes, as a promise
        // does: a joint round leads with the most up-to-date journal of the
        // previous set too.
        std::uint64_t o = no_prev, q = no_prev;
        if (auto tx = c->tx_at(c->log_end() - 1); tx) {
          o = *tx ? (*tx)->origin : 0;
          q = *tx ? (*tx)->seq : 0;
        }
        const copy_term last = c->last_term();
        return {false, c->log_end(), flags, o, q, last.n, last.by, p.n, p.by};
      }
      if (role_ == copy_role::primary || role_ == copy_role::promoting) {
        step_down(self, t);
      } else {
        primary_ = t.by;
        if (on_role_changed_)
          on_role_changed_(); // a primary named: what was held waiting for one is refused
      }
      std::uint64_t o = no_prev, q = no_prev;
      if (auto tx = c->tx_at(c->log_end() - 1); tx) {
        o = *tx ? (*tx)->origin : 0;
        q = *tx ? (*tx)->seq : 0;
      }
      // A copy being filled (or not configured yet: it cannot tell) says
      // so: it may lack writes acknowledged before it was made, and a round
      // that counted it as any other could take over without them.
      const auto role = static_cast<std::uint8_t>(
        static_cast<std::uint8_t>(role_) | (filling_ || !configured_ ? filling_flag : 0));
      const copy_term last = c->last_term();
      return {true, c->log_end(), role, o, q, last.n, last.by, t.n, t.by};
    },
    // For `cluster status` (actors/replication_status.hpp): this copy's
    // role, journal end and term, and, as a primary, how far each other
    // copy holds its journal (ends as decimal text).
    [this](r_status_atom)
      -> std::tuple<std::string, std::uint64_t, std::uint64_t, std::vector<std::string>,
                    std::vector<std::string>, std::vector<std::string>> {
      auto* c = core_();
      std::vector<std::string> nodes, ends, states;
      if (role_ == copy_role::primary && progress_) {
        for (const auto& p : peers_) {
          const auto at = progress_->end_of(p.node);
          nodes.push_back(p.node);
          ends.push_back(std::to_string(at));
          states.push_back(!p.handle ? "down"
                           : p.stale ? "stale"
                           : p.seed  ? "receiving a full copy"
                           : at == 0 ? "not heard from yet"
                                     : "ok");
        }
      }
      return {to_string(role_), c ? c->log_end() : 0, term_.n, std::move(nodes),
              std::move(ends), std::move(states)};
    },
    [this](r_tail_atom)
      -> std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, node_id> {
      auto* c = core_();
      if (!c)
        return {0, no_prev, no_prev, 0, node_id{}};
      std::uint64_t o = no_prev, q = no_prev;
      if (auto t = c->tx_at(c->log_end() - 1); t) {
        o = *t ? (*t)->origin : 0;
        q = *t ? (*t)->seq : 0;
      }
      const copy_term last = c->last_term();
      return {c->log_end(), o, q, last.n, last.by};
    },
    [this](r_holds_atom, std::uint64_t at, std::uint64_t o, std::uint64_t q,
           std::uint64_t term_n, node_id& term_by) -> std::int8_t {
      auto* c = core_();
      if (!c || role_ == copy_role::stale)
        return -1;
      if (at >= c->log_end())
        return 0; // this journal ends before it: the asker holds more
      auto held = holds_record(*c, at, o, q, copy_term{term_n, std::move(term_by)});
      return held ? (*held ? 1 : 0) : -1;
    },
    [this](r_end_atom)
      -> std::tuple<std::uint64_t, std::uint8_t, std::uint64_t, std::uint64_t> {
      auto* c = core_();
      if (!c)
        return {0, static_cast<std::uint8_t>(role_), no_prev, no_prev};
      std::uint64_t o = no_prev, q = no_prev;
      if (auto t = c->tx_at(c->log_end() - 1); t) {
        o = *t ? (*t)->origin : 0;
        q = *t ? (*t)->seq : 0;
      }
      return {c->log_end(), static_cast<std::uint8_t>(role_), o, q};
    },
  };
}

} // namespace tally
