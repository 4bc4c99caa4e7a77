// The state and logic of one partition (DESIGN.md, "The partition actor";
// docs/NODE.md), as a plain class with no CAF and no threads so that it can
// be unit-tested directly. actors/partition_actor.hpp wraps it.
//
// It owns the partition's journal, object cache, one FBF per bucket and its
// Bloom clock, and keeps the TCC clock state: the partition clock (physical
// microseconds, kept monotonic), the prepared set and the safe time.
//
// Writes are staged, then flush()ed as one journal batch (group commit):
//   stage_prepare()  duplicate check (ids in flight, then the FBF as the
//                    fast negative path, every FBF positive confirmed
//                    against the journal's `opids`), update records
//                    and, for two-phase commit, a prepare record; the
//                    transaction enters the prepared set at its prepare time;
//   stage_commit()   a commit record (Bloom timestamp ticked);
//   stage_abort()    an abort record;
//   flush()          appends the staged batch, syncs it (mode batch), then
//                    applies the durable commits to the cache and the FBFs
//                    and removes them from the prepared set.
// Periodic steps (the actor's timer, docs/NODE.md "Timers"):
//   advance_filters() runs every FBF refresh and adaptation due;
//   checkpoint()      folds commits older than the retention window into the
//                    checkpoint store and truncates the journal and `opids`.
// A staged but not yet flushed commit stays in the prepared set, so reads at
// or above its time wait until it is durable and visible.
//
// Contract: one owner calls everything (the partition actor). Time comes from
// the clock functions in the options, so tests control it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/object_cache.hpp"
#include "clock/bloom_clock.hpp"
#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "crdt/op_id.hpp"
#include "checkpoint/checkpoint_store.hpp"
#include "fbf/forgetful_bloom_filter.hpp"
#include "journal/journal.hpp"
#include "journal/record.hpp"
#include "replication/dependency_check.hpp"
#include "replication/replication_batch.hpp"

namespace tally {

/// The single data centre's entry in every vector clock (one DC for now).
constexpr dc_id local_dc = 1;

/// Microseconds since the Unix epoch, from the system clock.
std::uint64_t wall_clock_us();
/// Milliseconds of the steady clock, as FBF time.
fbf_time steady_fbf_now();

/// The per-(partition, bucket) FBF a tallyd partition uses (docs/NODE.md,
/// "Exactly-once"): m = 2^20 bits, k = 7, N = 2, t = 2 s, retry timeout 5 s
/// (window (N+1)t = 6 s); N+2 = 4 filters of 128 KiB, 512 KiB per bucket.
/// Sized so that a false positive (which costs one LMDB lookup, not an
/// update) stays rare at server rates. Not fbf_config's paper defaults.
/// Adaptive (Algorithm 3, paper Sec. III-E) with target FPP 1e-3; see
/// tallyd_fbf_config(refresh, past, retry, target) for the bounds.
fbf_config tallyd_fbf_config();

/// The same with tallyd's FBF settings (--fbf-refresh-ms, --fbf-past-filters,
/// --fbf-retry-timeout-ms, --fbf-target-fpp; target_fpp <= 0 turns
/// adaptation off). Adaptation bounds, relative to the settings so that a
/// small test configuration adapts within small bounds too: t in [t/2, 2t]
/// in steps of t/2 (at least 1 ms), N in [N, 3N], one adaptation per
/// min(1 s, t/2). The result is not validated: check it with
/// forgetful_bloom_filter::make (node::start does, and refuses a window
/// (N+1)t below the retry timeout).
fbf_config tallyd_fbf_config(fbf_duration refresh, std::size_t past_filters,
                             fbf_duration retry_timeout, double target_fpp);

struct partition_options {
  std::uint32_t index = 0;
  std::string path; // the partition's LMDB directory (created if missing)
  durability mode = durability::batch;
  /// Per-bucket FBF; `start` is ignored (now_fbf() used).
  fbf_config fbf = tallyd_fbf_config();
  /// At most this many buckets have an FBF at once (0: no bound; tallyd:
  /// from --fbf-memory-mb). Using one more evicts the least recently used
  /// bucket's filter; for op_id_keep_us() after that, every id of the
  /// evicted bucket is checked exactly in `opids`, so eviction never
  /// admits a duplicate (issue 17: FBF memory per node).
  std::size_t max_fbfs = 0;
  /// Bloom clock size: 64 cells, 3 hashes (the paper recommends small k).
  std::uint32_t bloom_cells = 64;
  std::uint32_t bloom_hashes = 3;
  object_cache_config cache;
  /// Checkpoints keep this much history below the safe time: C = safe time
  /// - retention, so a transaction whose snapshot is younger than this can
  /// still read; an older snapshot gets errc::unavailable ("snapshot too
  /// old"). tallyd: --snapshot-retention-ms (default 60 s).
  std::uint64_t snapshot_retention_us = 60'000'000;
  /// Extra time commits with op ids stay in the log beyond the FBF's longest
  /// id lifetime (fbf_max_id_lifetime): covers the delay between a commit's
  /// wall time (staged) and its id's insert into the FBF (after the flush)
  /// and small steps between the system and the steady clock.
  std::uint64_t fbf_margin_us = 1'000'000;
  /// The physical clock (µs since the epoch): TCC clock and commit wall
  /// times. Tests control it.
  std::function<std::uint64_t()> now_us = wall_clock_us;
  std::function<fbf_time()> now_fbf = steady_fbf_now;
  /// How long the decision of a two-phase transaction prepared here stays
  /// answerable (find_decision) after the checkpoint folded it: the other
  /// participants of a transaction left prepared by a crash or a pause ask
  /// for it when they come back (docs/CLUSTER.md, "Recovery of undecided
  /// transactions"). A decision is dropped once its time is below both the
  /// checkpoint time and now - decision_keep_us; a participant that asks
  /// later about one it cannot prove absent keeps the transaction prepared.
  std::uint64_t decision_keep_us = 600'000'000;
  /// A prepared transaction older than this (its coordinator silent: a
  /// node down or paused) is set aside by checkpoints (issue 13): it no
  /// longer holds the checkpoint time or the node's stable time back, its
  /// records are moved to the log's end when the log is truncated under
  /// them, and if it commits at a time the checkpoint has passed, its
  /// effects are folded straight into the checkpoint store (a late commit).
  /// Its own keys stay unreadable above its prepare time until it is
  /// decided. 0: never (the default; tallyd sets 3 request timeouts with
  /// n_val 1, and 0 with replication: copies must keep identical logs).
  std::uint64_t set_aside_after_us = 0;
  /// How long a two-phase prepare waits for a younger transaction holding
  /// one of its op ids before it gives up (wait-die's grace period; see
  /// partition_core::take_ready).
  std::uint64_t older_wait_us = 200'000;
  /// The LMDB map size (tallyd --map-size).
  std::uint64_t map_size = default_map_size;
  /// The node's manifest lists this partition: its data file must be there
  /// and whole, else open() fails (lmdb_options::must_exist).
  bool must_exist = false;
  /// The journal's I/O seam: nullptr opens LMDB at `path`; tests pass a
  /// fault_env to inject a full map.
  std::shared_ptr<storage_env> env;
  /// Replication (docs/REPLICATION.md): flush() keeps every batch it
  /// appended for take_flushed(), which the primary ships to its replicas.
  bool keep_flushed = false;
  /// Durability batch and periodic: flush() never syncs; the owner runs
  /// the journal's sync on another thread (sync_job(), then synced()).
  /// In mode batch an appended batch is applied (its commits visible,
  /// answered by the owner) only once synced() reports a sync covering it.
  bool sync_elsewhere = false;
  /// The journal appends through its write-ahead tail
  /// (journal_options::write_ahead_tail).
  bool write_ahead_tail = false;
  /// journal_options::tail_drain_records.
  std::uint64_t tail_drain_records = 256;
  /// Where a replica's dependency checks are added up with the other
  /// copies' of the node (check_dependencies; `tally cluster status`);
  /// null: kept per partition only.
  std::shared_ptr<dependency_tally> dependency_sink;
};

/// What checkpoint() did.
struct partition_checkpoint {
  bool ran = false;              // false: C would not advance, nothing done
  checkpoint_report report;      // when ran
  std::uint64_t fbf_horizon_us = 0;
  std::uint64_t log_span = 0;    // LSNs the log spans after it (>= records)
  std::size_t set_aside = 0;     // prepared transactions set aside
};

/// One update a transaction sends to a partition.
struct tx_update {
  object_key key;
  crdt_type type = crdt_type::counter;
  crdt_effect effect;
  std::optional<op_id> op;
};

/// What stage_prepare() did.
struct prepare_outcome {
  std::uint64_t prepare_time = 0;
  std::size_t dismissed = 0; // updates dropped as duplicate op ids
  /// Set when nothing was staged because an op id of the request is in
  /// flight in this undecided transaction: the prepare is kept pending
  /// until that one commits or aborts (take_ready(), resume_prepare()).
  std::optional<tx_id> blocked_by;
  /// When blocked: 0 if it may wait as long as the blocker needs, else the
  /// most it waits (call expire_waits() after that long).
  std::uint64_t wait_bound_us = 0;
};

/// A prepared transaction with no decision yet (found at recovery, or
/// prepared_before()), with who else can tell its outcome: the partitions
/// of its two-phase commit and its coordinator's node (empty when its
/// prepare record did not say: written before issue 13).
struct undecided_prepare {
  tx_id tx;
  std::uint64_t prepare_time = 0;
  std::vector<std::uint32_t> participants = {};
  std::string coordinator = {};
};

/// What a fence found (partition_core::stage_fence; docs/RELIABILITY.md,
/// "The participant fence"). At most one of commit_time != 0, aborted and
/// fenced.
struct fence_answer {
  std::uint64_t commit_time = 0; // committed here (applied)
  bool aborted = false;          // an abort record here
  bool fenced = false;           // no decision here: a fence record staged
  /// As tx_decision::kept_from - 1: for a transaction prepared at or below
  /// it, "no decision here" (fenced) proves nothing.
  std::uint64_t folded_through = 0;
};

/// How a transaction ended at this partition, as its decision index says
/// (find_decision).
struct tx_decision {
  std::optional<tx_outcome> outcome; // nullopt: no decision here
  std::uint64_t commit_time = 0;     // when committed
  /// Decisions with time >= this are all kept: for a transaction prepared
  /// (anywhere) at or above it, "no decision here" is a proof.
  std::uint64_t kept_from = 0;
};

class partition_core {
public:
  /// Opens (or creates) the partition's journal and recovers: clock above
  /// every journaled commit, FBFs rebuilt from the journaled op ids, Bloom
  /// clock from the last commit. Transactions found in flight without a
  /// prepare are aborted at the first flush; prepared ones are listed by
  /// undecided() for the node to resolve (resolve_commit/resolve_abort).
  static expected<std::unique_ptr<partition_core>>
  open(partition_options opts);

  partition_core(const partition_core&) = delete;
  partition_core& operator=(const partition_core&) = delete;

  std::uint32_t index() const noexcept { return opts_.index; }

  /// Advances the partition clock to the physical clock and returns the
  /// safe time: every commit with time <= it is applied (no prepared or
  /// staged transaction with prepare time <= it).
  std::uint64_t safe_time();

  /// The value of `key` at `snapshot` plus `own` effects (the reading
  /// transaction's). Precondition: snapshot <= safe_time(). A cache miss
  /// loads the key's checkpoint entry plus its committed effects after it
  /// (checkpoint_store::load). Errors: errc::unavailable "snapshot too old"
  /// when `snapshot` is not >= checkpoint_time() (those commits are folded;
  /// exact for every key, cached or not); errc::wrong_type when the key's
  /// checkpoint or any of its journaled effects is of another type; journal
  /// read errors.
  expected<crdt_value> read(const object_key& key, crdt_type type,
                            const vector_clock& snapshot,
                            const std::vector<crdt_effect>& own);

  /// The object read() reads, itself: what an update of `key` is prepared
  /// against (read before write). Errors as read().
  expected<crdt_object> read_object(const object_key& key, crdt_type type,
                                    const vector_clock& snapshot,
                                    const std::vector<crdt_effect>& own);

  /// Phase one (or the first half of a one-step commit): drops updates whose
  /// op id is a duplicate, stages the rest and, if `two_phase`, a prepare
  /// record. An op id in flight in another undecided transaction blocks the
  /// whole prepare (outcome.blocked_by; see take_ready()). A reused id
  /// whose operation (key, type, effect) differs from the original's is
  /// refused: errc::invalid_argument "conflicting reuse of op id". The prepare time is above the clock and above `snapshot_time`.
  /// An id is a duplicate only if it is in flight here (staged by an
  /// undecided transaction, or earlier in this one) or the journal holds its
  /// commit (journal::find_committed_op); the bucket's FBF only rules ids
  /// out fast, and an FBF positive that is neither is applied and counted
  /// (fbf_false_positives()). Errors: errc::unavailable after a failed
  /// write; errc::invalid_argument for a transaction already staged here;
  /// a journal read error of the exact check (nothing staged: the client
  /// retries with the same ids).
  /// A two-phase prepare names the `participants` (the partitions of the
  /// commit) and the `coordinator` (its node id) in its prepare record, so
  /// that recovery asks only them (issue 13).
  expected<prepare_outcome> stage_prepare(const tx_id& tx,
                                          std::vector<tx_update> updates,
                                          std::uint64_t snapshot_time,
                                          bool two_phase,
                                          std::vector<std::uint32_t> participants = {},
                                          std::string coordinator = {});

  /// Exactly-once without the hole (issue 17): a prepare with an op id in
  /// flight in another undecided transaction X is not staged; it waits,
  /// kept here, for X's outcome. Once X's commit is durable, or X aborts or
  /// its batch fails, the waiting prepare is listed by take_ready(); its
  /// owner calls resume_prepare(), which runs stage_prepare() again with
  /// the kept arguments: the id is then a duplicate (X committed) or
  /// applies (X aborted). It can block again on another transaction.
  /// Deadlock-free by wait-die with a grace period: a two-phase prepare
  /// waits as long as needed only for an older transaction, by (snapshot
  /// time, tx_id); for a younger one at most options.older_wait_us
  /// (outcome.wait_bound_us), after which expire_waits() lists it and
  /// resume_prepare() fails it with errc::gave_way, nothing staged (its
  /// coordinator retries it: commit_writes). A one-step prepare holds
  /// nothing elsewhere and always waits.
  /// Transactions whose prepare is ready to be resumed; the list is emptied.
  std::vector<tx_id> take_ready();
  /// Resumes a pending prepare listed by take_ready(). errc::aborted when
  /// its transaction was aborted while it waited (stage_abort);
  /// errc::gave_way when its wait bound passed (expire_waits);
  /// errc::not_found for a transaction with no pending prepare.
  expected<prepare_outcome> resume_prepare(const tx_id& tx);
  /// Lists the waits whose bound passed (see wait_bound_us) as ready;
  /// returns how many.
  std::size_t expire_waits();
  /// Prepares waiting for another transaction's outcome.
  std::size_t pending_count() const noexcept { return pending_.size(); }

  /// Stages the commit of a prepared transaction at `commit_time` (>= its
  /// prepare time). errc::not_found for an unknown transaction. A fenced
  /// transaction (stage_fence) takes only a commit the recovery of
  /// undecided transactions decided from another participant's commit
  /// record (`from_recovery`); its coordinator's gets errc::unavailable.
  status stage_commit(const tx_id& tx, std::uint64_t commit_time,
                      bool from_recovery = false);

  /// The participant fence (docs/RELIABILITY.md, "The participant fence"):
  /// the recovery of undecided transactions asks, because the coordinator
  /// of `tx` is out of reach. Committed here (or its commit under way), or
  /// aborted: says so. Otherwise stages a fence record (also when `tx` was
  /// never prepared here): from now on the partition refuses a prepare of
  /// `tx` and its coordinator's commit. The caller answers "fenced" only once
  /// the record is durable and on w copies. Errors: after a failed write,
  /// the decision index's, and errc::unavailable while a commit of `tx` is
  /// under way here (not applied yet: no proof).
  expected<fence_answer> stage_fence(const tx_id& tx);
  /// Whether `tx` is fenced here.
  bool fenced(const tx_id& tx) const { return fenced_.count(tx) != 0; }

  /// Stages the abort of a prepared transaction (unknown: no-op). The
  /// abort of a pending prepare cancels it: it is listed by take_ready()
  /// and resume_prepare() answers errc::aborted.
  status stage_abort(const tx_id& tx);

  /// Advances every bucket's FBF to now_fbf(): the refreshes and, when
  /// adaptive, the adaptations (Algorithm 3) due. Called on the actor's
  /// timer so filters move without traffic. Returns how many filters were
  /// advanced.
  std::size_t advance_filters();

  /// One checkpoint (seed 004, section 2.7.2; checkpoint/checkpoint_store.hpp
  /// has the rule) with these bounds:
  ///   C = safe_time() - snapshot_retention_us (not below the previous C):
  ///     no commit <= C can still arrive, and transactions read at
  ///     snapshots >= C (an older one gets "snapshot too old");
  ///   replicated_lsn = the last journaled LSN (one replica: n_val = 1);
  ///   set aside: every prepared transaction older than
  ///     set_aside_after_us or below the previous C (see there): C is then
  ///     computed without them;
  ///   fbf_horizon_us = now - (fbf_max_id_lifetime + fbf_margin_us), lowered
  ///     to the oldest recovered op id's wall time while ids re-inserted at
  ///     recovery may still be in the FBF: every id the FBF can still hold
  ///     keeps its log record and its `opids` entry.
  /// Then rebases the cache onto C. ran = false when C would not move.
  /// Errors: errc::unavailable after a failed write; checkpoint_store's
  /// errors (errc::io_error stops the journal, and the partition with it).
  expected<partition_checkpoint> checkpoint();

  /// The partition's checkpoint time: the oldest snapshot it can serve.
  std::uint64_t checkpoint_time() const noexcept {
    return log_->checkpoint().time.get(local_dc);
  }
  /// LMDB's statistics of the partition's store (journal, index,
  /// checkpoint and `opids` entries, pages). Errors: LMDB read errors.
  expected<journal_stats> storage_stats() { return log_->stats(); }
  /// The FBF of `bucket`, nullptr when the bucket has none yet.
  const forgetful_bloom_filter* fbf(const std::string& bucket) const {
    auto i = fbfs_.find(bucket);
    return i == fbfs_.end() ? nullptr : &i->second;
  }
  /// How long a commit with op ids stays in the log (and `opids`):
  /// fbf_max_id_lifetime(opts.fbf) + fbf_margin_us.
  std::uint64_t op_id_keep_us() const noexcept { return op_id_keep_us_; }

  /// True when staged records wait for flush().
  bool has_staged() const noexcept { return !staged_.empty(); }

  /// Appends the staged batch (and syncs it in mode batch), then applies
  /// its commits. Only a storage I/O failure (errc::io_error) fail-stops
  /// the journal: every later write fails. Any other append error
  /// (errc::storage_full for a full LMDB map, errc::invalid_argument for a
  /// record the journal refuses) applied nothing and is returned: the
  /// transactions whose updates were in the batch are dropped (their ids
  /// and prepare times released, so a retry applies), commits and aborts of
  /// transactions prepared earlier stay staged for the next flush, and the
  /// partition keeps serving reads and writes.
  status flush();
  /// Batches that failed without stopping the partition.
  std::uint64_t failed_batches() const noexcept { return failed_batches_; }
  /// True after a storage I/O failure: every write fails until a restart.
  bool stopped() const noexcept { return failed_.has_value(); }

  /// Makes every appended record durable (mode periodic: the actor's timer
  /// calls it; batch and full are durable after flush() already). A failed
  /// sync stops the partition like a failed flush. With
  /// options.sync_elsewhere it also applies every batch waiting for it.
  status sync();

  /// options.sync_elsewhere: the sync that makes everything appended so
  /// far durable, to run on another thread (journal::sync_job); nullopt
  /// when everything is durable, the mode has no syncs, or the partition
  /// is stopped.
  std::optional<journal::sync_job> sync_job() const;
  /// The outcome of a sync_job's sync up to `upto`: in mode batch, every
  /// batch it covers is applied now (commits into the cache, the FBFs and
  /// `opids`, out of the prepared set). A failed sync stops the partition
  /// (the batches waiting for it are never applied) and is returned.
  status synced(lsn upto, const status& outcome);
  /// Batches appended but waiting for a sync before they apply (mode batch
  /// with options.sync_elsewhere).
  bool has_unsynced() const noexcept { return !unsynced_.empty(); }
  /// The journal's end LSN (exclusive) that is durable.
  lsn durable_end() const noexcept { return log_->durable_lsn() + 1; }

  // ---- replication (docs/REPLICATION.md, "Log shipping") ----------------

  /// The batches flush() appended since the last call, in LSN order (only
  /// with options.keep_flushed; else always empty): what a primary ships.
  std::vector<replication_batch> take_flushed();

  /// Replica side: appends `b` at exactly its LSNs and applies it as the
  /// primary did (prepared set, in-flight op ids, commits into the cache,
  /// the FBFs and `opids`, clock and Bloom clock raised), so that this
  /// journal stays a prefix of the primary's and the replica can take over
  /// with the same exactly-once and TCC state. Idempotent: the part of `b`
  /// below log_end() is skipped (a resend). Returns the new log_end().
  /// Errors: errc::invalid_argument when `b` starts above log_end() (a
  /// batch was missed: the caller sends records_from(log_end()) first) or
  /// holds a record that does not fit the state (a commit of a transaction
  /// not prepared here); errc::unavailable when the partition is stopped.
  /// A failed append stops the partition (fail-stop: a restart recovers
  /// from the journal and catches up again). In durability batch the
  /// batch is synced before it returns, unless options.sync_elsewhere:
  /// then it is durable once a sync_job() covers it (durable_end()).
  expected<lsn> apply_replicated(const replication_batch& b);

  /// Replica side, before apply_replicated: are the records of `b` below
  /// log_end() (a resend, or a batch of a new primary that starts inside
  /// this copy's journal) the ones this journal holds at those LSNs (same
  /// kind, same transaction)? apply_replicated skips that part, so a copy
  /// holding a former primary's unacknowledged tail there would keep it in
  /// place of the new primary's records. Records folded here cannot be
  /// compared and count as matching. False also when the journal cannot be
  /// read.
  bool overlap_matches(const replication_batch& b);

  /// Replica side, before apply_replicated (docs/REPLICATION.md,
  /// "Dependency check"): has this copy applied everything `b` depends on?
  /// The Bloom clock first (replication/dependency_check.hpp): its journal's
  /// Bloom clock not dominating b.deps proves a commit is missing, and the
  /// batch is refused as a gap without an exact check; a positive is
  /// confirmed exactly (LSN positions, then `prefix_matches`: the record at
  /// b.first - 1 is the primary's; empty when the sender checked it). The
  /// outcome is counted (dependency_stats()).
  dependency_verdict check_dependencies(const replication_batch& b,
                                        std::function<bool()> prefix_matches);
  /// What check_dependencies() found on this copy since it was opened.
  const dependency_counts& dependency_stats() const noexcept { return deps_check_.counts(); }

  /// What a batch starting at `at` depends on (replication_batch.hpp): the
  /// last commit record before `at` and its Bloom timestamp, from memory
  /// when `at` is after the journal's last commit, else from the journal
  /// (at most 4,096 records back). nullopt when `at` is outside
  /// [truncation LSN, log_end()] or the commit is folded or too far back.
  std::optional<batch_dependency> dependency_at(lsn at);

  /// Catch-up: the records with from <= LSN < log_end(), at most
  /// `max_records` of them, as one batch (empty when from == log_end()),
  /// with the dependency at `from`.
  /// errc::not_found when `from` is below the log's truncation point (they
  /// are folded into the checkpoint: the replica needs a full copy);
  /// errc::invalid_argument when `from` is beyond log_end().
  expected<replication_batch> records_from(lsn from, std::size_t max_records);

  /// The end of this partition's journal: every LSN below it is appended.
  lsn log_end() const noexcept { return log_->next_lsn(); }

  /// Primary side, as it starts leading under term `t` (docs/REPLICATION.md,
  /// "Terms in the journal"): stages the term record that every record
  /// after it is written under (appended by the next flush, and shipped
  /// with it). Returns the LSN it will get when nothing else is staged
  /// before it.
  lsn stage_term(const copy_term& t);
  /// The term the record at `at` was first written under (journal::term_at).
  copy_term term_at(lsn at) const { return log_->term_at(at); }
  /// The term of the journal's last record ({} when empty).
  copy_term last_term() const { return log_->last_term(); }
  /// The promise this copy saved last (journal::promised_term) and the
  /// save itself (synced at once): docs/REPLICATION.md, "Persistent
  /// promises".
  const copy_term& promised_term() const noexcept { return log_->promised_term(); }
  std::uint64_t promised_epoch() const noexcept { return log_->promised_epoch(); }
  status save_promised_term(const copy_term& t, std::uint64_t epoch) {
    return log_->save_promised_term(t, epoch);
  }
  /// The copy set this store last led or was in (journal::led_set).
  const std::optional<led_copy_set>& led_set() const noexcept { return log_->led_set(); }
  status save_led_set(const std::optional<led_copy_set>& s) { return log_->save_led_set(s); }

  /// The transaction of the record at `at` (nullopt for LSN 0, "before the
  /// first record"): a copy compares it with another's to check that its
  /// journal is a prefix of the other's. errc::not_found when `at` is
  /// folded into the checkpoint or beyond the end.
  expected<std::optional<tx_id>> tx_at(lsn at);

  /// A full copy of this partition's store into the empty directory `dir`
  /// (docs/REPLICATION.md, "Full copies"): opened with partition_core::open
  /// it is a copy whose journal ends at the log_end() of the moment of the
  /// copy, with the same records at the same LSNs, the same checkpoint and
  /// the same op ids.
  status copy_store(const std::string& dir) { return log_->copy_to(dir); }

  /// The options this partition was opened with (to reopen it).
  const partition_options& options() const noexcept { return opts_; }

  /// Turns keeping flushed batches (options.keep_flushed) on, when a
  /// replica becomes primary, or off.
  void keep_flushed(bool on) noexcept {
    opts_.keep_flushed = on;
    if (!on)
      flushed_.clear();
  }

  /// A primary keeps its log from `from` on for replicas that are behind:
  /// checkpoint() truncates nothing at or above it. 0 (the default): no
  /// replica to wait for (n_val = 1).
  void keep_log_from(lsn from) noexcept { keep_log_from_ = from; }

  /// Prepared transactions found at recovery with no decision.
  const std::vector<undecided_prepare>& undecided() const noexcept {
    return undecided_;
  }
  /// How `tx` ended here, if it was prepared here and decided: one lookup
  /// in the journal's decision index, which keeps decisions through
  /// checkpoints for options().decision_keep_us (docs/FORMAT.md, "Decision
  /// index"). Errors: LMDB errors, errc::corrupt.
  expected<tx_decision> find_decision(const tx_id& tx);

  std::uint64_t clock() const noexcept { return clock_; }
  /// The safe time of one key: like safe_time(), but only transactions
  /// that write `key` hold it back. A read of `key` at a snapshot <= it is
  /// exact: no prepared or staged transaction at or below the snapshot
  /// writes the key, and every later one gets a time above the clock
  /// (issue 13: a transaction left prepared by a paused or dead coordinator
  /// blocks only its own keys).
  std::uint64_t safe_time_for(const object_key& key);
  /// The smallest prepare time of a prepared or staged transaction (reads at
  /// or above it wait) above the checkpoint time; UINT64_MAX when there is
  /// none. What the node's stable time is held below: a set-aside
  /// transaction the checkpoint time has passed holds back only its keys
  /// (a snapshot below the checkpoint time could not be read anyway).
  std::uint64_t blocked_from() const noexcept {
    auto i = prepare_times_.upper_bound(checkpoint_time());
    return i == prepare_times_.end() ? UINT64_MAX : *i;
  }
  std::size_t prepared_count() const noexcept { return prepared_.size(); }
  /// Whether `tx` is prepared here and not yet applied (its commit, if
  /// any, is staged or waits for its sync).
  bool holds_prepared(const tx_id& tx) const { return prepared_.count(tx) != 0; }
  /// True when every record of the log belongs to a transaction of
  /// `set_aside` whose prepare time the checkpoint time has passed
  /// (checkpoint() then has nothing to fold).
  bool only_set_aside_records(const std::set<tx_id>& set_aside) const;
  /// Prepared transactions (no commit staged) with prepare time below
  /// `before`: candidates for resolution with the cluster when their
  /// coordinator went silent (docs/CLUSTER.md, "Recovery of undecided
  /// transactions").
  std::vector<undecided_prepare> prepared_before(std::uint64_t before) const;
  const journal& log() const noexcept { return *log_; }
  std::uint64_t duplicates_dismissed() const noexcept { return dismissed_; }
  /// FBF positives the exact check refuted (the update was applied).
  std::uint64_t fbf_false_positives() const noexcept {
    return fbf_false_positives_;
  }
  /// FBF positives the exact check confirmed from the journal.
  std::uint64_t fbf_confirmed() const noexcept { return fbf_confirmed_; }
  /// Buckets whose FBF was evicted to stay within max_fbfs.
  std::uint64_t fbf_evictions() const noexcept { return fbf_evictions_; }
  /// Buckets with an FBF now.
  std::size_t fbf_count() const noexcept { return fbfs_.size(); }

private:
  struct prepared_tx {
    std::uint64_t prepare_time = 0;
    std::uint64_t snapshot_time = 0; // its wait-die age (0: recovered)
    std::vector<tx_update> updates;
    std::vector<lsn> positions; // LSN of each update record, once appended
    std::optional<std::uint64_t> commit_time; // staged commit
    std::vector<std::uint32_t> participants;  // from its prepare
    std::string coordinator;
  };
  // An op id staged by an undecided transaction, with the operation it
  // carried (a retry must carry the same).
  struct in_flight_op {
    tx_id owner;
    object_key key;
    crdt_type type = crdt_type::counter;
    crdt_effect effect;
  };
  // A prepare waiting for the outcome of `blocked_by`.
  struct pending_prepare {
    std::vector<tx_update> updates;
    std::uint64_t snapshot_time = 0;
    bool two_phase = false;
    std::vector<std::uint32_t> participants;
    std::string coordinator;
    tx_id blocked_by;
    bool cancelled = false;
    bool expired = false;
    std::uint64_t die_at_us = UINT64_MAX;
  };
  // What each staged record is, to route its LSN after the append.
  struct staged_ref {
    tx_id tx;
    std::size_t update_index = 0; // for update records
  };

  explicit partition_core(partition_options opts) : opts_(std::move(opts)) {}

  std::uint64_t tick(std::uint64_t at_least);
  // errc::unavailable "snapshot too old" below the checkpoint time.
  status check_snapshot(const vector_clock& snapshot) const;
  expected<forgetful_bloom_filter*> fbf_for(const std::string& bucket);
  // Whether `id` committed here (the FBF, every positive confirmed in
  // `opids`), with the digest of the operation it carried when known.
  struct committed_op {
    bool committed = false;
    std::optional<std::uint64_t> digest;
  };
  expected<committed_op> find_committed(const std::string& bucket,
                                        const op_id& id);
  // errc::wrong_type when a non-counter update's type is not its key's.
  status check_types(const std::vector<tx_update>& ups, const std::vector<bool>& dup);
  // errc::no_permissions when bounded-counter spends exceed the rights the
  // latest state leaves after every undecided spend.
  status check_rights(const std::vector<tx_update>& ups, const std::vector<bool>& dup);
  // errc::overflow when an update could take a counter out of int64 (the
  // latest committed value plus any subset of undecided effects).
  status check_counter_range(const std::vector<tx_update>& ups,
                             const std::vector<bool>& dup);
  // The wait-die order of a prepared transaction: (snapshot time, id).
  std::pair<std::uint64_t, tx_id> age_of(const tx_id& tx) const;
  static bool same_op(const object_key& key, crdt_type type,
                      const crdt_effect& effect, const tx_update& u);
  static error conflicting_reuse(const op_id& id, const tx_update& u);
  void release_in_flight(const prepared_tx& p);
  // The prepared set: a transaction enters it at its prepare time (which
  // holds back the safe time and the safe time of each key it writes) and
  // leaves it when it is applied or dropped.
  void hold(const prepared_tx& p);
  void unhold(const prepared_tx& p);
  // Lists the prepares waiting for `tx` as ready: its ids are decided.
  void wake_waiting_for(const tx_id& tx);
  // Forgets a prepared or staged transaction: its in-flight ids and its
  // prepare time are released.
  void drop_prepared(const tx_id& tx);
  // flush() after an append error that left the journal usable.
  status fail_batch(const error& cause);
  // A batch appended at LSNs from `first` on.
  struct appended_batch {
    lsn first = 0;
    std::vector<journal_record> records;
    std::vector<staged_ref> refs;
  };
  // After the staged batch was appended at LSNs from `first` on: routes the
  // update LSNs, applies the commits, clears the stage (kept for
  // take_flushed() when options.keep_flushed, with `deps`).
  void apply_appended(lsn first, std::optional<batch_dependency> deps);
  // `records` were appended at LSNs from `first` on: the dependency at the
  // journal's end moves past their commits.
  void note_appended(lsn first, const std::vector<journal_record>& records);
  // The last commit before `at` found in the journal, scanning back at most
  // `limit` records (see dependency_at); `unreadable` is set when a record
  // or a timestamp could not be read (else nullopt means none was found).
  std::optional<batch_dependency> scan_dependency(lsn at, std::uint64_t limit,
                                                  bool* unreadable = nullptr);
  // The same for one appended batch.
  void apply_batch(const appended_batch& b);
  // Applies the waiting batches (unsynced_) that end at or below `upto`.
  void apply_synced(lsn upto);
  // Stages one record received from the primary (apply_replicated).
  status stage_replicated(const journal_record& r);

  partition_options opts_;
  std::unique_ptr<journal> log_;
  std::optional<checkpoint_store> store_;
  std::uint64_t op_id_keep_us_ = 0;
  // Ids re-inserted into the FBFs at recovery got a fresh window then: until
  // recovered_until_us_ the FBF horizon stays at or below the oldest one's
  // commit wall time (recovered_floor_us_).
  std::uint64_t recovered_floor_us_ = UINT64_MAX;
  std::uint64_t recovered_until_us_ = 0;
  std::optional<object_cache> cache_;
  std::optional<bloom_clock> bloom_;
  // The dependency at log_end(): the journal's last commit and its Bloom
  // timestamp (commit_at 0 when the log holds no commit); this copy's B_z
  // in check_dependencies().
  std::optional<batch_dependency> end_dep_;
  dependency_check deps_check_;
  std::uint64_t clock_ = 0;
  std::map<tx_id, prepared_tx> prepared_;
  std::multiset<std::uint64_t> prepare_times_;
  // The prepare time of every prepared or staged transaction, by each key
  // it writes (safe_time_for).
  std::multimap<object_key, std::uint64_t> prepared_keys_;
  std::map<std::string, forgetful_bloom_filter> fbfs_;
  // max_fbfs: when each bucket's filter was last used (a counter), and until
  // when (wall µs) an evicted bucket's ids are checked exactly.
  std::map<std::string, std::uint64_t> fbf_last_use_;
  std::uint64_t fbf_uses_ = 0;
  std::map<std::string, std::uint64_t> fbf_evicted_until_;
  std::uint64_t fbf_evictions_ = 0;
  std::map<std::pair<std::string, op_id>, in_flight_op> in_flight_;
  std::map<tx_id, pending_prepare> pending_;
  // Fenced transactions (stage_fence, a replicated fence record, or one
  // found at recovery), with the wall time the fence was seen here; dropped
  // after fence_keep_us (no coordinator sends anything that late).
  std::map<tx_id, std::uint64_t> fenced_;
  static constexpr std::uint64_t fence_keep_us = 600'000'000;
  void note_fence(const tx_id& tx);
  std::vector<tx_id> ready_;
  std::vector<journal_record> staged_;
  std::vector<staged_ref> staged_refs_;
  // Mode batch with options.sync_elsewhere: appended batches waiting for
  // the sync that covers them, oldest first.
  std::deque<appended_batch> unsynced_;
  std::vector<undecided_prepare> undecided_;
  std::uint64_t dismissed_ = 0;
  std::uint64_t fbf_false_positives_ = 0;
  std::uint64_t fbf_confirmed_ = 0;
  std::uint64_t failed_batches_ = 0;
  std::optional<error> failed_;
  std::vector<replication_batch> flushed_;
  lsn keep_log_from_ = 0;
};

} // namespace tally
