// A partition copy's part in replication (docs/REPLICATION.md), driven by the
// partition actor that owns the copy (actors/partition_actor.cpp) and
// configured by the node's membership actor (actors/replica_sets.hpp).
//
// Roles:
//   solo       n_val = 1: serves clients, ships nothing (the default);
//   primary    serves clients; ships every flushed batch to the other
//              copies and answers a write once its batch is on w copies;
//   replica    applies the batches of its primary (and only of it), serves
//              no client request;
//   promoting  was a replica and is to be primary: first pulls what the
//              other copies have beyond its own journal, then serves;
//   stale      its journal is not a prefix of the primary's (it took writes
//              nobody else has, or missed what is folded): serves nothing
//              and is replaced (replica_sets).
//
// Messages (atoms in actors/atoms.hpp), between copies of one partition:
//   (r_append, from node, batch bytes, prev origin, prev seq, prev term n,
//        prev term by, term n, term by, epoch): prev = the transaction and
//        term of the record before the batch (the prefix check); epoch =
//        the ring epoch of the primary's view (copy_fence.hpp)
//        -> (end, status)   status: r_applied | r_gap (send from `end`) |
//                           r_refused (not your replica) | r_diverged |
//                           r_fenced (a higher term was promised here)
//   (r_fetch, from LSN, prev origin, prev seq, prev term n, prev term by,
//        max records)
//        -> (status, batch bytes)  status: r_applied | r_diverged |
//                           r_folded (needs a full copy) | r_refused
//   (r_fence, term n, term by, epoch) -> (promised, end, role, origin and seq of
//        the tx of the record at end - 1, term n and by of that record,
//        promised term n, by): a take-over round's question
//        (replication/copy_fence.hpp); a primary that promises a higher
//        term than its own steps down; role has bit 0x80 set when the copy
//        is being filled (or not configured yet), in a refusal 0x40 when it
//        granted another copy a read lease, 0x20 when it promised a round
//        of a newer view (a higher ring epoch), 0x10 when it refuses every
//        view older than the round's from now on (a copy configured from a
//        view at least as new takes the round's epoch even when it refuses
//        the term: what a handoff's fence counts)
//   (r_end) -> (end, role, origin and seq of the tx of the record at end - 1)
//        (asked by the membership: no promise)
//   (r_lease, from node, term n, term by, epoch) -> (granted, promised term n, by):
//        a primary renews its read lease without a batch; granted by a
//        replica of that primary (docs/REPLICATION.md, "Read leases")
//   (r_tail) -> (end, origin and seq of the tx of the record at end - 1, term
//        n and by of that record): asked of a copy its node retires
//   (r_holds, LSN, origin, seq, term n, term by) -> 1 when this journal
//        holds that record at that LSN (same transaction, same term), 0
//        when it holds another or ends before it, -1 when it cannot tell
//        (folded): asked of the primary before a retired copy is deleted
//        (actors/copy_retirement.hpp)
//   (r_seed, from node, offset, bytes, last, term n, term by, epoch) -> (end,
//        status): a full copy of the primary's store, in order, for a copy
//        its log cannot bring up to date (docs/REPLICATION.md, "Full copies")
// from the membership actor of the same node:
//   (r_config, role, primary node, peer nodes, peer actors, w, filling,
//        epoch)
//        filling: this copy is being filled; it promises no take-over round
//        epoch: the ring epoch of the view the configuration comes from
//   (r_others, removed nodes, nodes, handles), sent with every r_config:
//        the cluster's removed members (a joint round counts their copies
//        as gone) and the other nodes that are up with their copy of the
//        partition (a joint round asks the dropped ones there; null: the
//        node holds none, and counts as gone)
//   (r_node, node id), sent before every r_others: the node this copy is
//        on (a replica knows it from then on; a primary from its r_config)
// to it:
//   (r_stale, partition)    this copy found itself stale
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/message_handler.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/partition_core.hpp"
#include "common/error.hpp"
#include "replication/copy_fence.hpp"
#include "replication/replica_progress.hpp"
#include "replication/unreplicated_commits.hpp"

namespace tally {

enum class copy_role : std::uint8_t { solo = 0, primary = 1, replica = 2, promoting = 3, stale = 4 };
const char* to_string(copy_role r) noexcept;

/// r_append / r_fetch statuses.
enum class repl_status : std::uint8_t {
  applied = 0, gap = 1, refused = 2, diverged = 3, folded = 4, fenced = 5
};

class partition_replication {
public:
  /// How long a replica's grant of a read lease to its primary holds
  /// (docs/REPLICATION.md, "Read leases"): it promises no other copy's
  /// take-over round for this long after it took a batch (or a renewal)
  /// from it, or after it opened. The primary counts 9/10 of it from when
  /// it sent, less 5 ms (clock rates differ). A failover waits for it.
  static constexpr std::chrono::milliseconds read_lease{500};

  /// A held write's answer: nullopt for success, else the error.
  using answer_fn = std::function<void(std::optional<error>)>;

  copy_role role() const noexcept { return role_; }
  /// Only solo and primary copies serve client requests.
  bool serves_clients() const noexcept {
    return role_ == copy_role::solo || role_ == copy_role::primary;
  }
  /// A copy of a replicated partition starts as a replica of nobody: it
  /// serves nothing until the membership configures it (r_config).
  void start_following() noexcept { role_ = copy_role::replica; }
  /// Why a client request is refused here (role not serving).
  error refusal(std::uint32_t partition) const;
  /// A replica's primary, when its membership named one and gave its
  /// handle: where a request that reached this copy is passed on
  /// (part_fwd_atom) instead of being refused. Null otherwise.
  caf::actor primary_handle() const;

  /// After a successful flush: ships what it appended and holds `answers`
  /// until it is on w copies (solo, or w = 1: answered at once).
  void flushed(caf::event_based_actor* self, partition_core& core,
               std::vector<answer_fn> answers);

  /// The periodic step: re-sends to copies that are behind and answers
  /// writes held longer than `limit` with errc::unavailable (their outcome
  /// is unknown to the client: it retries with the same op ids).
  void tick(caf::event_based_actor* self, partition_core& core,
            std::chrono::milliseconds limit);

  /// TCC across failover: a commit becomes visible to reads only once its
  /// batch is on w copies, so no read sees a value a failover could take
  /// back. Reads wait for snapshots at or above this (UINT64_MAX: none; 0:
  /// every snapshot, after a take-over round until the new term's record is
  /// on w copies).
  std::uint64_t visible_below() const noexcept {
    // A primary whose read lease has run out serves no snapshot until its
    // copies grant it again (docs/REPLICATION.md, "Read leases").
    if (role_ == copy_role::primary && w_ > 1
        && std::chrono::steady_clock::now() >= leased_until_)
      return 0;
    return unreplicated_.visible_below();
  }
  /// A read reached this copy: as a primary it keeps its read lease
  /// renewed while reads come (docs/REPLICATION.md, "Read leases"), and
  /// asks its copies at once when the lease has run out or is half gone.
  void note_read(caf::event_based_actor* self);
  /// Called when visible_below() rises (the partition retries its reads).
  void on_visible(std::function<void()> fn) { on_visible_ = std::move(fn); }
  /// Called when this copy stops serving clients (it no longer leads): the
  /// partition refuses what it holds for them (parked reads and prepares),
  /// which only the primary may serve.
  void on_stopped_serving(std::function<void()> fn) { on_stopped_serving_ = std::move(fn); }
  /// Called when this copy staged a record of its own that the partition
  /// must flush now, before any other message (the term record a new
  /// primary writes first).
  void on_needs_flush(std::function<void()> fn) { on_needs_flush_ = std::move(fn); }
  /// Called after every change of role (set_role, which every change of
  /// configuration runs) and of the primary a replica follows: the
  /// partition serves, or refuses, the requests it held while no copy it
  /// knew of led (`awaits_leader`), and answers those it passed on to a
  /// primary it no longer follows.
  void on_role_changed(std::function<void()> fn) { on_role_changed_ = std::move(fn); }
  /// Whether a request this copy cannot serve may soon be served here or
  /// routed right: the copy is in a take-over round, or a replica that
  /// knows of no primary (it stepped down to a term whose copy it was not
  /// told, or was just started). The partition then holds the request
  /// briefly instead of refusing it (docs/REPLICATION.md, "Failover").
  bool awaits_leader() const noexcept {
    return role_ == copy_role::promoting
           || (role_ == copy_role::replica && primary_.empty());
  }
  /// A replica whose membership named a primary it has no link to (the
  /// primary's node is seen down, or cut off): a take-over round or a new
  /// configuration is near. The partition holds a client request for it
  /// (bounded by the read timeout) instead of refusing it: refused, the
  /// client retried the same copy in vain (docs/RELIABILITY.md, "What
  /// stop 29's third long run failed on").
  bool awaits_primary_link() const {
    return role_ == copy_role::replica && !primary_.empty() && !primary_handle();
  }
  /// Called after batches from another copy changed the core (r_append, a
  /// take-over's pull, a full copy): its prepared set, so its blocked_from(),
  /// changed outside the partition's own writes (the partition publishes it
  /// on the node's safe-time board).
  void on_replicated(std::function<void()> fn) { on_replicated_ = std::move(fn); }

  /// How a replica takes a full copy received from its primary: the
  /// partition actor closes the core, puts the folder `copy_dir` in the
  /// place of the copy's folder, reopens, and returns the new journal end.
  using reopen_fn = std::function<expected<lsn>(const std::string& copy_dir)>;
  void on_reopen(reopen_fn fn) { reopen_ = std::move(fn); }
  /// How a replica makes a batch it applied durable when its journal is
  /// synced on the sync threads (durability batch,
  /// partition_options::sync_elsewhere): `done` runs on the partition's
  /// thread once a sync covers LSNs below `end`, with its outcome; the
  /// batch is acknowledged to the primary only then. `now`: start a sync
  /// at once (one of the w - 1 copies whose sync a write waits for); else
  /// the batch waits for the next sync of this journal, one the primary
  /// asks for (r_sync, then sync_asked) or the partition's tick.
  /// Unset: the batch was synced when it was applied.
  using sync_fn = std::function<void(lsn end, bool now, std::function<void(status)> done)>;
  void on_needs_sync(sync_fn fn) { needs_sync_ = std::move(fn); }
  /// How a replica starts a sync when its primary asks (r_sync).
  void on_sync_asked(std::function<void()> fn) { sync_asked_ = std::move(fn); }

  /// Whether writes wait here for w copies (held, or carried through a
  /// take-over round).
  bool holds_writes() const noexcept { return !held_.empty() || !carried_.empty(); }

  /// A primary closing for a handoff fences the copy set it leads under the
  /// view that moves the partition (ring epoch `view_epoch`) before its
  /// store is shipped (docs/REPLICATION.md, "Handoffs across two copy
  /// sets"): a round of that epoch under a new term, promised by n - w
  /// copies besides this one and saved with this journal (so with the store
  /// the new owner and this node's kept copy open). The old view's copies
  /// then cannot gather a write quorum: this one is closed (and its store,
  /// if kept, refuses the old view), and every other w of them hold a copy
  /// that promised the newer view. Writes must no longer be held
  /// (holds_writes() false: its own later batches would be refused).
  /// `done(true)` once the promises are in, or at once when there is no
  /// other copy to fence; `done(false)` when the round did not get them.
  void fence_for_handoff(caf::event_based_actor* self, partition_core& core,
                         std::uint64_t view_epoch, std::function<void(bool)> done);

  /// Answers every held write with `err` (shutdown, handoff, demotion).
  void fail_held(const error& err);
  /// Answers the writes carried through a take-over round with `err`.
  void fail_carried(const error& err);

  /// The handlers of the r_* messages; `core` gives the copy's core (null
  /// while closed for a handoff).
  caf::message_handler handlers(caf::event_based_actor* self,
                         std::function<partition_core*()> core);

  /// Copies this one ships to and how far each is (for status).
  std::string describe() const;

private:
  /// Saves the fence's promise with `c`'s journal when it differs from the
  /// one saved (docs/REPLICATION.md, "Persistent promises"); false when
  /// it could not be saved (the caller then answers as a refusal).
  bool save_promise(partition_core* c);

  // A full copy on its way to a peer: the copied store, and how far it went.
  struct seed_state {
    std::string dir;
    std::string file;
    std::uint64_t size = 0;
    std::uint64_t offset = 0;
    lsn end = 0; // the copy's journal end
  };
  struct peer_link {
    node_id node;
    caf::actor handle;
    std::optional<seed_state> seed;
    bool in_flight = false;
    // The batch out (r_append): its number and the configuration it was
    // sent under (0: none). Its answer (r_acked) counts only if both
    // still match; tick() gives up on it after link_timeout.
    std::uint64_t flight = 0;
    std::uint64_t flight_epoch = 0;
    // Whether that batch was sent to be synced at once (eager()), and
    // whether the copy was asked to sync it since (ask_lazy_syncs()).
    bool flight_eager = true;
    bool sync_asked = false;
    bool stale = false;     // cannot follow from the log: needs a full copy
    std::chrono::steady_clock::time_point sent_at{};
    // Read leases: until when this copy's last grant holds, as the primary
    // counts it (from when it sent, shortened by the drift margin), and
    // whether a renewal (r_lease) is out.
    std::chrono::steady_clock::time_point lease_until{};
    bool lease_in_flight = false;
  };
  struct held_write {
    answer_fn answer;
    std::chrono::steady_clock::time_point since;
  };

  void configure(caf::event_based_actor* self, partition_core* core, copy_role role,
                 node_id primary, std::vector<node_id> peers,
                 std::vector<caf::actor> handles, std::uint32_t w, bool filling,
                 std::uint64_t ring_epoch);
  void pump(caf::event_based_actor* self, partition_core& core);
  void send_to(caf::event_based_actor* self, partition_core& core, peer_link& p);
  void on_acked(caf::event_based_actor* self, std::uint64_t flight, std::uint64_t end,
                repl_status status, copy_term promised);
  /// Whether batches to `p` are synced at once: w - 1 live copies are
  /// (with this one, w durable copies answer a write), chosen by the
  /// partition's index so that every node takes its share of syncs; the
  /// others sync when asked or at their tick (docs/REPLICATION.md,
  /// "Acknowledgement and visibility").
  bool eager(const peer_link& p) const;
  /// Asks the copies holding a batch they were not to sync at once to sync
  /// it, when a write has waited lazy_grace for w copies.
  void ask_lazy_syncs(caf::event_based_actor* self, std::chrono::steady_clock::time_point now);
  void on_ack(caf::event_based_actor* self, const node_id& node, std::uint64_t end,
              repl_status status);
  void release(caf::event_based_actor* self);
  void start_seed(caf::event_based_actor* self, partition_core& core, peer_link& p);
  void send_seed_chunk(caf::event_based_actor* self, const node_id& node);
  void end_seed(peer_link& p);
  void promote(caf::event_based_actor* self, partition_core& core);
  void pull_from(caf::event_based_actor* self, caf::actor peer, std::uint64_t target,
                 copy_term target_term, std::uint64_t epoch);
  // Leads: after a take-over round (`after_round`: the journal ends the
  // copies promised are known, `round_ends_`), or again with a new peer
  // list (already primary, or n_val 1).
  void become_primary(caf::event_based_actor* self, partition_core& core,
                      bool after_round = false);
  // No longer leads (stepped down, or lost sight of a write quorum of
  // copies): held writes are answered "outcome unknown" with `why`, nothing
  // is shipped any more.
  void stop_leading(const std::string& why);
  // Every change of role_ (tells the partition when it stops serving).
  void set_role(copy_role r);
  // A higher term than this copy's own was promised here: it no longer
  // leads (its held writes' outcome is unknown) and follows `by`.
  void step_down(caf::event_based_actor* self, const copy_term& by);
  void report_stale(caf::event_based_actor* self, partition_core& core, const std::string& why);
  // Read leases (docs/REPLICATION.md, "Read leases").
  // A replica grants its primary `from` a lease: it promises no other
  // copy's take-over round for read_lease from now.
  void grant_lease(const node_id& from);
  // Whether this copy promised a lease to a copy other than `to` that
  // still holds.
  bool leased_to_other(const node_id& to) const;
  // The primary: a grant from `p` counted from `sent`; recomputes the
  // lease (the (w - 1)-th latest grant) and retries the parked reads when
  // it starts to hold again.
  void granted(peer_link& p, std::chrono::steady_clock::time_point sent);
  // The primary asks every reachable copy to renew its grant (r_lease).
  void renew_lease(caf::event_based_actor* self);
  peer_link* find_peer(const node_id& n);
  // Whether node `n` holds one of the other copies of its set.
  bool has_peer(const node_id& n) const;

  copy_role role_ = copy_role::solo;
  node_id self_node_; // this copy's node (r_node; a primary's r_config); empty until told
  node_id primary_;
  std::vector<peer_link> peers_;
  std::uint32_t w_ = 1;
  std::optional<replica_progress> progress_;
  quorum_queue<held_write> held_;
  // A primary's writes not yet on w copies when its copy set changed,
  // carried through its take-over round of the new set (configure).
  std::vector<held_write> carried_;
  // The copy set it was in when the nodes of its set changed (configure),
  // led or followed: its next round is joint (docs/REPLICATION.md, "Joint
  // rounds"): it also needs n - w + 1 copies of that set, itself among
  // them, to promise or to hold the new view's epoch, so that the old
  // set's copies still on the old view cannot elect a primary of their
  // own, and it leads with the most up-to-date journal among them. Kept
  // until it leads, or a primary of a view of `since_epoch` or later ships
  // to it (that primary's round fenced the old set). `dropped`: the
  // copies of that set the new one does not name (asked too); `kept`: the
  // nodes of both; `n`: its size. Dropped copies on nodes removed from the
  // cluster (`removed_`: on the operator's word that they are dead) count
  // as gone: without them two removals at once would leave no majority of
  // the old set.
  struct previous_set {
    std::vector<std::pair<node_id, caf::actor>> dropped;
    std::vector<node_id> kept;
    std::size_t n = 0;
    std::uint64_t since_epoch = 0;
  };
  std::optional<previous_set> previous_;
  // The copy set its store last led or followed (journal meta `led_set`),
  // as loaded when the partition opened: its first take-over round is
  // joint over that set when its copy set is another (a store shipped by a handoff whose
  // fence gave up, or one whose set changed while its node was down:
  // docs/REPLICATION.md, "Handoffs whose fence gave up"). Consumed by that
  // round; dropped once it takes a batch of its view's primary.
  std::optional<led_copy_set> stored_led_;
  // Saves the set this copy is in (its node, then its peers') as its
  // store's `led_set` unless it holds it already: when it starts to lead,
  // when a primary of its view first ships to it, and when a handoff
  // drains it while it does not lead. False when the save failed (logged).
  bool save_set_it_is_in(partition_core& core);
  std::uint64_t saved_set_epoch_ = 0; // the configuration (epoch_) whose set it saved
  // The previous set a stored led set stands for, seen from this copy's
  // configuration; nullopt when it is this copy's set as configured.
  std::optional<previous_set> previous_from(const led_copy_set& led) const;
  // Whether `node`'s copy of the partition takes part in no round or batch
  // any more: the node was removed from the cluster (on the operator's
  // word that it is dead), or it is up and holds no copy (retired and
  // deleted), as its membership last said (r_others).
  bool gone_for_good(const node_id& node) const;
  std::vector<node_id> removed_; // r_others: the cluster's removed members
  // r_others: the other nodes that are up, with their copy of the
  // partition (null: none), fresher than the handles a previous set kept.
  std::vector<std::pair<node_id, caf::actor>> others_;
  // Flushed batches not yet on every copy, oldest first (re-sent from here
  // instead of the journal while they last).
  std::deque<replication_batch> recent_;
  std::size_t recent_records_ = 0;
  // Batches with commits not yet on w copies: what reads wait for.
  unreplicated_commits unreplicated_;
  std::function<void()> on_visible_;
  std::function<void()> on_replicated_;
  std::function<void()> on_stopped_serving_;
  std::function<void()> on_role_changed_;
  std::function<void()> on_needs_flush_;
  reopen_fn reopen_;
  sync_fn needs_sync_;
  std::function<void()> sync_asked_;
  std::optional<tx_id> last_tx_; // of the record at log_end() - 1, when known
  bool last_tx_known_ = false;
  caf::actor membership_;
  std::function<partition_core*()> core_;
  std::uint64_t epoch_ = 0; // bumped per configuration: late answers are dropped
  std::uint64_t last_flight_ = 0; // numbers the batches sent (peer_link::flight)
  bool pump_scheduled_ = false;
  std::uint64_t promote_round_ = 0; // the epoch whose take-over round is out
  // What the copies that promised the last successful round answered: the
  // end of each one's journal, and the transaction and term of its last
  // record.
  struct round_answer {
    node_id node;
    lsn end = 0;
    std::uint64_t last_o = 0, last_s = 0;
    copy_term last_term;
  };
  std::vector<round_answer> round_answers_;
  std::uint32_t index_ = 0;
  copy_fence fence_;   // the terms this copy promised (replication/copy_fence.hpp)
  // The ring epoch of the view its membership last configured it from: what
  // its rounds and batches carry (docs/REPLICATION.md, "Rounds across two
  // copy sets").
  std::uint64_t ring_epoch_ = 0;

  copy_term term_;     // the term it leads under (primary), or tries to (promoting)
  copy_term staged_term_; // the last term whose term record it staged
  bool wants_primary_ = false; // its membership's last r_config named it primary
  // Being filled (r_config): it lacks writes acknowledged before it was
  // made, so its promise counts in a take-over round only when every copy
  // promised (one that needs it could miss them otherwise).
  bool filling_ = false;
  // Whether its membership configured it yet: until then it does not know
  // whether it is filling (a node restarted while its copy was), so it
  // answers a round as a filling copy.
  bool configured_ = false;
  std::chrono::steady_clock::time_point stepped_down_at_{};
  // A copy that keeps refusing one node's batches because its membership
  // names another primary (or none) says so once it has for
  // refusing_warn_after: two nodes' plans disagree (docs/RELIABILITY.md,
  // "An open finding of stop 31"). Who, since when, and whether it was said.
  node_id refusing_from_;
  std::chrono::steady_clock::time_point refusing_since_{};
  bool refusing_warned_ = false;
  void note_refused(const node_id& from);
  // Read leases. As a primary: until when it may serve reads, and when the
  // last read came. As a replica: until when, and to whom, it promised to
  // promise no other round (from its start: a lease it granted before a
  // restart is not known).
  std::chrono::steady_clock::time_point leased_until_{};
  std::chrono::steady_clock::time_point last_read_{};
  std::chrono::steady_clock::time_point granted_until_{};
  node_id granted_to_;
};

} // namespace tally
