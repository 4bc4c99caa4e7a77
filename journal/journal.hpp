// The operation log of one partition replica (seed 004, sections 2.1-2.3;
// DESIGN.md, "The partition actor" and "Storage formats"), with its index.
//
// Layout: one storage_env (an LMDB environment, a directory) per partition
// replica. Database `journal` maps LSN -> record frame; `index` maps an
// object key -> [commit LSN][update LSN] for every committed update of that
// key, written in the same transaction as the commit record; `meta` holds
// the format version, partition id, next LSN, truncation LSN and checkpoint
// state; `checkpoint` belongs to checkpoint/; `opids` maps the op id of every
// committed update still in the log to its commit LSN, written in the same
// transaction as the commit record (the exact check behind the partition's
// FBF: find_committed_op); `decisions` maps the id of every transaction
// prepared here (two-phase) to its outcome, written with its commit or abort
// record and kept after the checkpoint folds it, for a while (issue 13:
// find_decision, the question recovery asks every participant). Formats:
// docs/FORMAT.md.
//
// Group commit: append() writes a whole batch in one LMDB transaction.
//
// The write-ahead tail (journal_options::write_ahead_tail; docs/STORAGE.md,
// "The write-ahead tail"): append() instead writes the batch's records to
// the store's tail file (one write(2)), keeps them in memory, and moves
// them into LMDB in bulk, one LMDB transaction for up to
// tail_drain_records records (drain_tail()). The tail is what durability
// syncs; the databases are synced before the tail file is emptied (at a
// checkpoint, or when the file grows past tail_file_limit). Readers see
// one log either way: scan(), read_committed(), find_committed_op() and
// find_decision() read the tail in memory; what copies or rewrites the
// store (copy_to, apply_checkpoint) drains it first. Opening a store takes
// in a tail left by a crash as its tail, writing nothing, whatever the
// option says.
//
// Durability (docs/STORAGE.md, "Durability modes"):
//   full   append() makes the batch durable before it returns (an LMDB
//          commit ordered as data sync, then meta page write and sync);
//   batch  append() commits without syncing; the owner calls sync() at the
//          end of its group-commit window and acknowledges only LSNs <=
//          durable_lsn(). A process crash loses nothing committed; a power
//          loss may lose what the last sync did not cover;
//   periodic as batch, but the owner acknowledges at once and calls sync()
//          on a timer (tallyd: at most every interval, Redis's
//          `appendfsync everysec`); a power loss may lose what was
//          acknowledged since the last sync, a process crash nothing;
//   none   never syncs (tests and benchmarks that say so).
//
// Fail-stop (STYLE.md, habit 3; leveldb's DBImpl::Write sync_error rule):
// once a commit or sync fails, the journal refuses every later write with
// errc::io_error until it is reopened, because the log's state on disk is
// then unknown: a later successful sync could make durable a log whose
// failed part is half there. errc::storage_full is the exception: LMDB
// reports a full map before writing anything, so the journal stays usable
// (and readable) and a later append may succeed once space is freed.
//
// Contract: owned and called by one partition actor (single-threaded, any
// thread over time). No transaction outlives a call. Not copyable.
#pragma once

#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "journal/codec.hpp"
#include "journal/lmdb_env.hpp"
#include "journal/record.hpp"
#include "journal/storage_env.hpp"

namespace tally {

enum class durability : std::uint8_t { full, batch, none, periodic };

/// "full", "batch", "none" or "periodic".
const char* to_string(durability d) noexcept;

inline std::ostream& operator<<(std::ostream& os, durability d) {
  return os << to_string(d);
}

/// The version of a partition store's layout (meta "format_version"): the
/// databases, key encodings and frame versions of docs/FORMAT.md. A store
/// written with another version is refused at open.
constexpr std::uint32_t store_format_version = 1;

struct journal_options {
  std::string path;                          // the replica's directory
  std::uint64_t partition_id = 0;            // checked against meta
  std::uint64_t map_size = default_map_size; // LMDB map size, bytes
  /// The data file must exist already (lmdb_options::must_exist).
  bool must_exist = false;
  durability mode = durability::full;
  /// Recovery gathers the committed effects per key since the checkpoint
  /// (recovery_result::effects) to warm the cache. Off, recovery only
  /// verifies the log and rebuilds the transaction and FBF state; keys are
  /// then read through the index on demand.
  bool collect_effects = true;
  /// Appends go through the write-ahead tail (see the file comment).
  bool write_ahead_tail = false;
  /// With the tail: records kept in memory before they move into LMDB in
  /// one transaction.
  std::uint64_t tail_drain_records = 256;
  /// With the tail: once the file is this large, a drain also syncs the
  /// databases and empties it (checkpoints empty it before that).
  std::uint64_t tail_file_limit = std::uint64_t{8} << 20;
};

/// LSNs [first, last] of one appended batch; empty when last < first.
struct lsn_range {
  lsn first = 0;
  lsn last = 0;
  std::uint64_t size() const noexcept {
    return last >= first ? last - first + 1 : 0;
  }
};

/// An update of a transaction that has not committed or aborted yet.
struct pending_update {
  lsn position = 0;
  object_key key;
  std::optional<op_id> op; // indexed in `opids` when the commit is appended
  std::uint64_t digest = 0; // op_digest() of the update, stored with the id
};

/// A transaction with records in the journal and no decision yet: in flight
/// (updates only) or prepared.
struct pending_tx {
  lsn first_lsn = 0;                 // its first record still in the log
  std::optional<lsn> prepare_lsn;    // set once prepared
  std::uint64_t prepare_time = 0;    // of its prepare record
  std::vector<pending_update> updates;
};

/// An undecided transaction found at recovery, with its records.
struct recovered_tx {
  tx_id tx;
  lsn first_lsn = 0;
  std::optional<prepare_record> prepare; // nullopt: in flight, not prepared
  lsn prepare_lsn = 0;
  std::vector<std::pair<lsn, update_record>> updates; // in LSN order
};

/// An operation id of a committed transaction still in the journal, with
/// its commit's wall time: recovery re-inserts these into the bucket's FBF
/// so replays of the window stay idempotent.
struct recovered_op {
  op_id op;
  std::string bucket;            // the FBF is per bucket
  std::uint64_t wall_time_us = 0;
  lsn commit_lsn = 0;
};

/// What the journal holds, rebuilt at open (DESIGN.md, "Exactly-once
/// counters" and "The partition actor").
struct recovery_result {
  /// Committed effects per key that are not in the checkpoint store (commit
  /// time not <= checkpoint_time), in commit-record order. Empty when
  /// journal_options::collect_effects is off.
  // (A std::map, not an unordered_map: GCC 12 reports a false
  // -Wfree-nonheap-object when an unordered_map member is destroyed inside
  // tally::expected, which would break callers built with -Werror.)
  std::map<object_key, std::vector<committed_effect>> effects;
  /// Transactions with updates or a prepare and no decision, by first LSN.
  /// Prepared ones wait for their coordinator; the owner aborts the others.
  std::vector<recovered_tx> undecided;
  /// Transactions with a fence record in the log (docs/RELIABILITY.md, "The
  /// participant fence"), in log order.
  std::vector<tx_id> fenced;
  /// Op ids of every committed transaction still in the log, in commit order.
  std::vector<recovered_op> op_ids;
  /// Join of every commit time ever journaled (also of truncated commits).
  vector_clock max_commit_time;
  /// Bloom timestamp of the last commit ever journaled ("" if none).
  std::string last_bloom_timestamp;
  /// Every commit with commit time <= this is in the checkpoint store.
  vector_clock checkpoint_time;
  lsn truncation_lsn = 1; // first LSN the log may hold
  lsn next_lsn = 1;       // LSN of the next append
  std::uint64_t records = 0; // records verified (checksum and decoding)
  /// A torn or corrupt tail that was cut: how many records, from which LSN.
  std::uint64_t cut_records = 0;
  lsn cut_from = 0;
  /// `decisions` entries written from the log because the store had none
  /// (a store written before the decision index existed).
  std::uint64_t decisions_backfilled = 0;
  /// Records a crash left only in the write-ahead tail, taken in at open
  /// as the journal's tail (the next drain moves them into LMDB); and why
  /// the tail's reading stopped before its end ("" if it did not: a torn
  /// last write, never acknowledged, or an emptied file's old bytes).
  std::uint64_t tail_replayed = 0;
  std::string tail_stop_reason;
};

/// Sizes, from LMDB's own statistics.
struct journal_stats {
  db_stats journal;
  db_stats index;
  db_stats checkpoint;
  db_stats opids;
  db_stats decisions;
  env_stats env;
};

/// The checkpoint state kept in meta "checkpoint" (docs/FORMAT.md).
struct checkpoint_state {
  std::uint64_t sequence = 0; // checkpoints taken so far
  vector_clock time;          // every commit <= time is checkpointed
  vector_clock max_commit_time;
  std::string last_bloom_timestamp;
};

/// What checkpoint/ asks the journal to do in one transaction with its own
/// writes (checkpoint_store::checkpoint).
struct truncation_plan {
  /// Records below this LSN are deleted. Must lie in [truncation_lsn(),
  /// next_lsn()] and not above the first record of an undecided
  /// transaction.
  lsn new_truncation_lsn = 0;
  /// The new checkpoint time (>= the current one): from now on commits with
  /// commit time <= it are served by the checkpoint store, not the log.
  vector_clock checkpoint_time;
  /// Index entries of the commits folded into the checkpoint: (encoded
  /// object key, value).
  std::vector<std::pair<std::string, index_value>> unindex;
  /// Op ids of the committed update records below new_truncation_lsn, with
  /// the LSN of their commit record: their `opids` entries are deleted (an
  /// entry is deleted only if it still names that commit).
  std::vector<std::pair<op_id, lsn>> drop_op_ids;
  /// `decisions` entries whose time is below this may be deleted from now
  /// on (decisions_kept_from() rises to it; lower values change nothing).
  /// Must not exceed the largest entry of checkpoint_time + 1: a decision
  /// whose record is still in the log is never dropped.
  std::uint64_t decisions_kept_from = 0;
  /// Undecided transactions set aside (issue 13: prepared long ago, their
  /// coordinator silent) whose records lie below new_truncation_lsn: their
  /// records, in log order, are appended again at the log's end in the same
  /// transaction, so the prefix can go while they stay undecided (their new
  /// LSNs: last_relocation()).
  std::vector<std::pair<tx_id, std::vector<journal_record>>> relocate;
};

/// Where apply_checkpoint() moved one set-aside transaction's records: the
/// new LSN of each update record, in order, and of its prepare record.
struct relocation {
  tx_id tx;
  std::vector<lsn> updates;
  lsn prepare = 0;
};

/// Folds the effects of a late commit (a set-aside transaction committed at
/// a time <= the checkpoint time) into the checkpoint store, in the
/// append's transaction; gets the commit record and its LSN.
using late_fold_fn =
  std::function<status(storage_txn&, const commit_record&, lsn at)>;

class journal;

/// What journal::open() returns: the journal and what recovery rebuilt.
struct opened_journal {
  std::unique_ptr<journal> log;
  recovery_result recovery;
};

class journal {
public:
  /// Opens the replica's store at `opts.path` (creating it when empty) and
  /// recovers: verifies every record from the truncation LSN to the end
  /// (checksum, decoding), cuts a corrupt tail (corrupt records with no
  /// valid record after them; reported in cut_records/cut_from) and
  /// rebuilds the in-memory state. `env` is the I/O seam: nullptr opens an
  /// lmdb_env on opts.path; tests pass a fault_env.
  /// Errors:
  ///   errc::corrupt      a corrupt record followed by valid ones (the
  ///                      message names its LSN; nothing is changed or
  ///                      applied: restore the replica from its peers), or
  ///                      unreadable metadata;
  ///   errc::corrupt      the store's format version is not
  ///                      store_format_version;
  ///   errc::bad_config   the store belongs to another partition id;
  ///   errc::io_error, errc::storage_full, errc::unavailable from LMDB.
  static expected<opened_journal>
  open(const journal_options& opts, std::shared_ptr<storage_env> env = nullptr);

  journal(const journal&) = delete;
  journal& operator=(const journal&) = delete;

  /// Appends `batch` in order, in one LMDB transaction (group commit), and
  /// returns the LSNs it got (consecutive). A commit record indexes every
  /// update of its transaction in this journal (seed 2.3), in the same
  /// transaction; an abort record drops them unindexed. In mode full the
  /// batch is durable on return. An empty batch returns an empty range.
  /// Errors (nothing of the batch is applied unless said otherwise):
  ///   errc::invalid_argument an update whose object key is too long, or a
  ///                          commit whose time is <= the checkpoint time
  ///                          (checkpoint_bounds contract broken);
  ///   errc::storage_full     the LMDB map (or disk) is full; the journal
  ///                          stays usable and readable;
  ///   errc::io_error         the commit or sync failed: the journal is now
  ///                          stopped (the batch may or may not be on
  ///                          disk), or it was stopped already.
  ///
  /// A commit whose time is <= the checkpoint time is a late commit: only
  /// for a transaction prepared here and set aside (truncation_plan::
  /// relocate), and only with `late`, which folds its effects into the
  /// checkpoint store in the same transaction; its updates are not indexed
  /// (readers take commits <= the checkpoint time from the checkpoint
  /// store). Without `late` it is errc::invalid_argument as before.
  expected<lsn_range> append(const std::vector<journal_record>& batch,
                             const late_fold_fn& late = nullptr);

  /// Makes every append so far durable (mode batch; a no-op in full and
  /// none) and advances durable_lsn(). errc::io_error on failure, after
  /// which the journal is stopped.
  status sync();

  /// The same sync, run on another thread so that the owner's thread never
  /// waits for the disk (docs/NODE.md, "Threading and disk I/O"): `env`'s
  /// sync() (storage_env::sync_from_any_thread) makes every append up to
  /// `upto` durable; the owner then reports its outcome with synced().
  struct sync_job {
    lsn upto = 0;
    std::shared_ptr<storage_env> env;
    bool tail = false; // sync the write-ahead tail, not the databases
    /// The sync itself: env->tail_sync() or env->sync().
    status run() const { return tail ? env->tail_sync() : env->sync(); }
  };
  /// The sync that would make everything appended so far durable; nullopt
  /// when there is nothing to sync (mode full or none, all durable, the
  /// journal stopped) or the store cannot be synced from another thread.
  std::optional<sync_job> background_sync() const;
  /// The outcome of a background sync up to `upto`: durable_lsn() rises to
  /// it, or (a failed sync) the journal stops, as sync() would.
  status synced(lsn upto, const status& outcome);

  /// The committed effects of `key` whose commit LSN is > `after_lsn`, in
  /// commit order (commit LSN, then update LSN), through the index: reads
  /// only this key's records (seed 2.3). Effects folded into the checkpoint
  /// store are not returned. Errors: errc::invalid_argument for a key too
  /// long to index; errc::corrupt when an index entry points at a missing or
  /// mismatching record; LMDB errors.
  expected<std::vector<committed_effect>> read_committed(const object_key& key,
                                                         lsn after_lsn = 0);

  /// The same result as read_committed(), found by scanning and decoding
  /// the whole log without the index (AntidoteDB's way; seed 004,
  /// hypothesis 5). For the benchmark and for tests.
  expected<std::vector<committed_effect>> scan_committed(const object_key& key,
                                                         lsn after_lsn = 0);

  /// The commit LSN of the transaction whose committed update carried `id`,
  /// if that update is still in the log (`opids`, one LMDB lookup). Ids of
  /// aborted or undecided transactions are never found; ids of updates
  /// removed by truncation are not found. Errors: LMDB errors; errc::corrupt
  /// for an entry that is not 8 bytes.
  expected<std::optional<lsn>> find_committed_op(const op_id& id);
  /// The same, with the operation's digest (op_digest) when the entry was
  /// written with one (stores written before issue 17 have none).
  expected<std::optional<op_entry>> find_committed_op_entry(const op_id& id);

  /// How transaction `tx`, prepared at this partition (two-phase), ended
  /// here: its `decisions` entry (one LMDB lookup), nullopt when it is not
  /// decided here or its entry was dropped. Entries with time >=
  /// decisions_kept_from() are never dropped, so for a transaction whose
  /// prepare time anywhere is >= it (its commit time is too), nullopt means
  /// "no decision here". Errors: LMDB errors; errc::corrupt for a bad entry.
  expected<std::optional<decision_entry>> find_decision(const tx_id& tx);
  /// Every decision with time >= this is in `decisions` (0: all of them).
  std::uint64_t decisions_kept_from() const noexcept { return decisions_kept_from_; }
  /// `decisions` entries deleted by checkpoints since open.
  std::uint64_t decisions_dropped() const noexcept { return decisions_dropped_; }

  /// Calls `visit(lsn, record)` for the records with from <= LSN < to, in
  /// LSN order, until it returns false. errc::corrupt naming the LSN of an
  /// undecodable record.
  status scan(lsn from, lsn to,
              const std::function<bool(lsn, const journal_record&)>& visit);

  /// Deletes the log prefix and index entries of `plan` and runs `writes`
  /// (the checkpoint store's puts) in one transaction, durable unless the
  /// mode is none: a crash leaves either the old or the new state. Called by
  /// checkpoint_store only. Errors: errc::invalid_argument for a plan that
  /// breaks its contract (nothing written); errors of `writes` (nothing
  /// written); commit errors as for append(), with the same fail-stop rule.
  status apply_checkpoint(const truncation_plan& plan,
                          const std::function<status(storage_txn&)>& writes);
  /// The records the last successful apply_checkpoint() relocated.
  const std::vector<relocation>& last_relocation() const noexcept { return relocated_; }

  /// Undecided transactions now, by id.
  const std::unordered_map<tx_id, pending_tx, tx_id_hash>&
  undecided() const noexcept {
    return pending_;
  }

  lsn next_lsn() const noexcept { return next_; }

  /// The term the record at `at` was first written under (docs/REPLICATION.md,
  /// "Terms in the journal"): that of the last term record at or before
  /// `at`, or, when it is folded, the term kept in meta `folded_term` at the
  /// checkpoint; {} (term 0) for records written before any term record
  /// (n_val 1, or a store from before terms). Defined for every LSN below
  /// next_lsn(), folded ones included as far as the checkpoint kept them:
  /// an LSN below the truncation point gets the term in force there.
  copy_term term_at(lsn at) const;
  /// The term of the last record (term_at(next_lsn() - 1)); {} for an
  /// empty journal.
  copy_term last_term() const { return next_ > 1 ? term_at(next_ - 1) : copy_term{}; }
  /// The highest term this copy promised (meta `promised_term`; {} when
  /// never saved): its fence after a restart (docs/REPLICATION.md,
  /// "Persistent promises").
  const copy_term& promised_term() const noexcept { return promised_term_; }
  /// The ring epoch of that promise (meta `promised_epoch`; 0 when never
  /// saved: docs/REPLICATION.md, "Rounds across two copy sets").
  std::uint64_t promised_epoch() const noexcept { return promised_epoch_; }
  /// Saves `t` as the promised term and `epoch` as its ring epoch, in a
  /// synced LMDB transaction of its own (whatever the durability mode).
  /// errc::storage_full leaves the journal usable; any other failure stops
  /// it (io_error).
  status save_promised_term(const copy_term& t, std::uint64_t epoch = 0);
  /// The copy set this store last led or followed (meta `led_set`; nullopt when never
  /// saved, or cleared once a handoff's fence held it: docs/REPLICATION.md,
  /// "Handoffs whose fence gave up").
  const std::optional<led_copy_set>& led_set() const noexcept { return led_set_; }
  /// Saves `s` as meta `led_set` (nullopt: deletes it), in a synced LMDB
  /// transaction of its own; failures as save_promised_term's.
  status save_led_set(const std::optional<led_copy_set>& s);

  /// One past the last record of the log that is an abort, or a commit
  /// whose commit time may be <= `c` (its largest entry is <= c's largest:
  /// every commit <= c is among them); truncation_lsn() when there is none.
  /// A checkpoint to time c reads the log up to there only
  /// (checkpoint_store::checkpoint): every commit it may fold lies below,
  /// and so does every aborted transaction it may drop. Kept in memory
  /// from the log's commit and abort records (rebuilt at open, extended by
  /// append, cut by a checkpoint); walks back from the log's end.
  lsn end_of_commits_within(const vector_clock& c) const;

  /// Every LSN <= this is on stable storage.
  lsn durable_lsn() const noexcept { return durable_; }
  lsn truncation_lsn() const noexcept { return truncation_; }
  const checkpoint_state& checkpoint() const noexcept { return checkpoint_; }
  const vector_clock& max_commit_time() const noexcept { return max_commit_; }
  durability mode() const noexcept { return mode_; }
  std::uint64_t partition_id() const noexcept { return partition_; }
  /// True after a failed commit or sync (fail-stop).
  bool stopped() const noexcept { return stopped_.has_value(); }

  /// LMDB's sizes: records still in the write-ahead tail are not in them
  /// (tail_records()).
  expected<journal_stats> stats();

  /// A consistent copy of the whole store into the empty directory `dir`
  /// (storage_env::copy_to): the journal, its index, the checkpoint and
  /// `opids`, LSN for LSN (the write-ahead tail is drained first).
  status copy_to(const std::string& dir);

  /// Moves the records of the write-ahead tail into LMDB in one
  /// transaction (lazily committed: the tail file still holds them). A
  /// no-op without the tail or with nothing to move. Errors: those of a
  /// commit; errc::storage_full keeps the records in memory and the
  /// journal usable, any other stops it.
  status drain_tail();
  /// Records in the write-ahead tail not yet moved into LMDB (after a
  /// crash, open takes in the records it finds there: nothing is written
  /// at open, so a node with no room left still opens).
  std::uint64_t tail_records() const noexcept { return tail_records_.size(); }

  /// The I/O seam, for checkpoint/ (same single-threaded contract).
  storage_env& env() noexcept { return *env_; }

private:
  journal(std::shared_ptr<storage_env> env, const journal_options& opts)
      : env_(std::move(env)), mode_(opts.mode), partition_(opts.partition_id),
        tail_on_(opts.write_ahead_tail), tail_drain_records_(opts.tail_drain_records),
        tail_file_limit_(opts.tail_file_limit) {}

  // One LMDB write an append makes, planned before any is made.
  struct planned_put {
    store_db db;
    std::string key;
    std::string value;
    put_mode mode = put_mode::upsert;
  };
  struct append_plan; // journal.cpp
  // Plans the LMDB writes of `batch` at the log's end; with `with_entries`
  // its tail entries go to tail_buf_ too.
  expected<append_plan> plan_append(const std::vector<journal_record>& batch,
                                    bool with_entries);
  // The in-memory state the planned batch leaves, once it is written.
  void apply_plan(append_plan& plan);
  // Appends `batch` in one LMDB transaction (the path without the tail,
  // and with it for late commits and a nearly full map).
  expected<lsn_range> append_direct(const std::vector<journal_record>& batch,
                                    const late_fold_fn& late, bool durable);
  // Makes the planned writes of the log up to `end` (exclusive) in `txn`,
  // with meta next_lsn = end.
  status put_all(storage_txn& txn, const std::vector<planned_put>& puts, lsn end);
  // Keeps a planned batch as the write-ahead tail's newest records (its
  // LMDB writes wait for the next drain).
  void take_into_tail(append_plan& plan, const std::vector<journal_record>& records);
  // Room left in the LMDB map (map size less the pages ever used), read
  // after each LMDB transaction: a batch whose writes might not fit goes
  // straight to LMDB, which then says exactly whether it fits.
  void note_lmdb_room();
  // scan() of the records in LMDB; `stopped_early` when `visit` said stop.
  status scan_lmdb(lsn from, lsn to,
                   const std::function<bool(lsn, const journal_record&)>& visit,
                   bool& stopped_early);
  // Empties the tail file once LMDB holds every record durably (after a
  // durable checkpoint, or a sync when the file is past its limit).
  void reset_tail_file();

  // Recovery: reads meta, verifies and replays the log, cuts a bad tail.
  expected<recovery_result> recover(bool collect_effects);
  // Creates the metadata of a new store (true) or checks an existing one.
  expected<bool> init_or_check_meta(storage_txn& txn);
  status cut_tail(const std::vector<std::string>& bad_keys, lsn first_bad);
  // Adds the `opids` entries of recovered committed ops that lack one.
  status backfill_op_ids(const std::vector<recovered_op>& ops);
  // A store without meta `decisions_kept_from` (written before the decision
  // index): writes the entries of the decisions found in the log and the
  // horizon (above the checkpoint time: folded ones are unknown).
  expected<std::uint64_t>
  backfill_decisions(const std::vector<std::pair<tx_id, decision_entry>>& found);
  // Deletes up to a budget of `decisions` entries with time below the
  // horizon, resuming where the last sweep stopped (checkpoints).
  status sweep_decisions(storage_txn& txn, std::uint64_t& dropped);

  // Commits `txn`; on failure applies the fail-stop rule for `last`.
  status commit_or_stop(storage_txn& txn, lsn last, const char* what, commit_mode mode);
  error stopped_error() const;
  // Stops the journal (fail-stop) after a failed `failed` ("sync", ...) at
  // LSN `at` and returns the error every later write gets.
  error stop_after(const std::string& failed, lsn at, const error& cause);

  std::shared_ptr<storage_env> env_;
  durability mode_;
  std::uint64_t partition_;
  lsn next_ = 1;
  lsn durable_ = 0;
  lsn truncation_ = 1;
  checkpoint_state checkpoint_;
  vector_clock max_commit_;
  std::string last_bloom_;
  std::unordered_map<tx_id, pending_tx, tx_id_hash> pending_;
  std::uint64_t decisions_kept_from_ = 0;
  std::uint64_t decisions_added_ = 0;   // since the last sweep
  std::uint64_t decisions_dropped_ = 0;
  std::string decisions_sweep_from_;   // key the next sweep starts at
  std::vector<relocation> relocated_;  // by the last checkpoint
  // The term records in the log, by LSN, and the term in force below the
  // truncation point (meta `folded_term`): term_at().
  std::map<lsn, copy_term> terms_;
  // Each commit and abort record in the log, by LSN: its LSN and, for a
  // commit, its commit time's largest entry (0 for an abort), for
  // end_of_commits_within.
  std::deque<std::pair<lsn, std::uint64_t>> decided_;
  std::vector<std::pair<lsn, std::uint64_t>> decided_scratch_; // append's new ones
  copy_term folded_term_;
  copy_term promised_term_; // meta `promised_term`
  std::uint64_t promised_epoch_ = 0; // meta `promised_epoch`
  std::optional<led_copy_set> led_set_; // meta `led_set`
  // Commits `txn` (a write of replication meta: a promise, a led set) with
  // a sync whatever the durability mode; errc::storage_full leaves the
  // journal usable, any other failure stops it (`what` names the write).
  status commit_synced_meta(storage_txn& txn, const char* what);
  std::optional<error> stopped_;
  std::string scratch_; // reused record encoding buffer

  // The write-ahead tail: records [tail_first_, next_) are in the tail file
  // and here, not yet in LMDB; tail_puts_ are their LMDB writes, in order.
  bool tail_on_;
  std::uint64_t tail_drain_records_;
  std::uint64_t tail_file_limit_;
  lsn tail_first_ = 1;
  std::deque<journal_record> tail_records_;
  std::vector<planned_put> tail_puts_;
  std::unordered_map<std::string, op_entry> tail_opids_;         // by encoded op id
  std::unordered_map<std::string, decision_entry> tail_decisions_; // by encoded tx id
  // The tail's index entries, by encoded object key, in commit order.
  std::unordered_map<std::string, std::vector<index_value>> tail_index_;
  std::uint64_t tail_put_bytes_ = 0; // bytes of tail_puts_
  std::uint64_t lmdb_room_ = ~std::uint64_t{0};
  std::uint64_t tail_file_bytes_ = 0; // written since the file was emptied
  std::string tail_buf_;              // reused entry buffer
};

} // namespace tally
