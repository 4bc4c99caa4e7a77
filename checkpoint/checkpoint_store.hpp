// The checkpoint store and journal truncation (seed 004, sections 2.5 and
// 2.7; DESIGN.md, "The partition actor": the journal stays bounded under a
// steady load).
//
// The `checkpoint` database of a partition replica's environment maps an
// object key to a checkpoint entry: the object materialized at a checkpoint
// time C, holding exactly the key's commits with commit time <= C (the cache's
// object_version contract). checkpoint() folds every commit <= C that is not
// folded yet into the entries, deletes their index entries, and deletes the
// journal prefix below the truncation LSN T, all in one LMDB transaction.
//
// The rule (docs/STORAGE.md, "Truncation rule"), from seed 2.7.2:
//   fold      every committed transaction with commit time <= C; C is
//             given by the owner and must satisfy
//               previous C <= C                    (checkpoints only advance)
//               C <= min dependency                (every running and future
//                 transaction reads at a snapshot >= C: seed's
//                 CheckpointTime <= MinDependency; after the checkpoint C is
//                 the low watermark, the oldest readable snapshot)
//               C <= the partition's safe time     (no commit <= C can still
//                 arrive, so the entry at C is final)
//   truncate T = the smallest of
//               next LSN                          (the end of the log)
//               replicated_lsn + 1                (nothing not yet shipped to
//                 the other replicas is dropped; seed's DCSf bound)
//               first LSN of every transaction that is undecided
//                 (prepared or in flight)
//               first LSN of every transaction committed at a time not
//                 <= C (not folded yet)
//               first LSN of every committed transaction with op ids whose
//                 commit wall time is >= fbf_horizon_us (its ids are still in
//                 the FBF window: recovery re-inserts them from the log)
// Records below T belong only to folded, previously folded or aborted
// transactions, so dropping them loses nothing a reader, a replica, the FBF
// or an undecided transaction needs.
// The `opids` entries of the committed updates below T
// go with them (journal.hpp); ids inside the FBF window stay, by the bound. Folded commits at or above T stay in the
// log (unindexed); every reader of the log skips commits <= C.
//
// Contract: owned and called by the partition actor that owns the journal,
// single-threaded, no transaction outlives a call.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <utility>
#include <vector>
#include <string>
#include <string_view>

#include "cache/object_cache.hpp"
#include "cache/object_entry.hpp"
#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/journal.hpp"
#include "journal/record.hpp"

namespace tally {

/// One object's checkpoint (seed 2.5: key, snapshot timestamp, snapshot).
struct checkpoint_entry {
  /// The object and its time: every commit of this key with commit time <=
  /// version.time is in it, no other.
  object_version version;
  /// The LSN of the last commit record folded into it.
  lsn base_commit_lsn = 0;
};

/// The frame version of a checkpoint entry (docs/FORMAT.md, "Checkpoint
/// entry"). Bump on any layout change; keep decoding every version written.
constexpr std::uint8_t checkpoint_entry_version = 1;

std::string encode_checkpoint_entry(const checkpoint_entry& e);
/// errc::corrupt for a bad frame, undecodable payload, bad object bytes or
/// trailing bytes.
expected<checkpoint_entry> decode_checkpoint_entry(std::string_view bytes);

/// What the owner knows when it asks for a checkpoint (see the rule above).
/// The defaults truncate nothing.
struct checkpoint_bounds {
  /// C. Must be >= the previous checkpoint time, <= the min dependency of
  /// every running transaction and <= the partition's safe time.
  vector_clock checkpoint_time;
  /// Every record with LSN <= this has reached the other replicas.
  lsn replicated_lsn = 0;
  /// Commits with op ids and wall time >= this keep their records (their
  /// ids are inside the FBF window). 0 keeps every such commit.
  std::uint64_t fbf_horizon_us = 0;
  /// The journal's decision index may drop decisions with time below this
  /// (journal::find_decision; at most C + 1). 0 keeps them all.
  std::uint64_t decisions_kept_from = 0;
  /// Prepared transactions set aside (issue 13: prepared long ago, their
  /// coordinator silent): they do not hold the truncation LSN back; their
  /// records, when wholly below it, are appended again at the log's end
  /// (truncation_plan::relocate), so the log stays bounded while they wait.
  /// C may pass their prepare time: a late commit of one is folded straight
  /// into the store (fold_late).
  std::set<tx_id> set_aside;
};

/// Which bound set the truncation LSN.
enum class truncation_limit : std::uint8_t {
  log_end,         // nothing held it back
  replicated,      // replicated_lsn
  undecided,       // a prepared or in-flight transaction
  unfolded_commit, // a commit whose time is not <= C
  fbf_window,      // a commit whose op ids are inside the FBF window
};

/// "log_end", "replicated", "undecided", "unfolded_commit", "fbf_window".
const char* to_string(truncation_limit l) noexcept;

inline std::ostream& operator<<(std::ostream& os, truncation_limit l) {
  return os << to_string(l);
}

struct checkpoint_report {
  std::uint64_t sequence = 0;      // this checkpoint's number (meta)
  vector_clock checkpoint_time;    // C
  lsn truncation_lsn = 0;          // T: the log now starts here
  truncation_limit limited_by = truncation_limit::log_end;
  lsn limited_at = 0;              // LSN of the record that set T
  std::uint64_t transactions_folded = 0;
  std::uint64_t effects_folded = 0;
  std::uint64_t keys_written = 0;
  std::uint64_t records_dropped = 0;
  std::uint64_t index_entries_dropped = 0;
  std::uint64_t op_ids_dropped = 0; // `opids` entries of truncated updates
  std::uint64_t decisions_dropped = 0; // `decisions` entries past their keep
  std::uint64_t records_relocated = 0; // set-aside records appended again
};

class checkpoint_store {
public:
  /// A store over `log`'s environment; `log` must outlive it.
  explicit checkpoint_store(journal& log) : log_(log) {}

  /// Folds, writes and truncates per the rule above, atomically: after a
  /// crash either the old or the new state is found. Costs one read of the
  /// log (bounded by the previous checkpoint) and one write transaction.
  /// Errors (nothing changed unless said):
  ///   errc::invalid_argument  C goes back before the previous checkpoint;
  ///   errc::corrupt           a log record or checkpoint entry is bad;
  ///   the CRDT's apply error  (errc::overflow) when a key cannot be
  ///                           materialized; that checkpoint is refused;
  ///   errc::storage_full      the map is full (journal still usable);
  ///   errc::io_error          the commit failed: the journal is stopped.
  expected<checkpoint_report> checkpoint(const checkpoint_bounds& bounds);

  /// The entry of `key`, nullopt when it was never checkpointed. Errors:
  /// errc::invalid_argument for a key too long to store; errc::corrupt;
  /// LMDB errors.
  expected<std::optional<checkpoint_entry>> get(const object_key& key);

  /// Everything needed to rebuild `key` after a restart or a cache miss:
  /// its checkpoint entry as the base and the committed effects after it,
  /// from the journal index (seed 2.3). Errors as get() and
  /// journal::read_committed().
  expected<entry_image> load(const object_key& key);

  /// The number of entries stored.
  expected<std::uint64_t> size();

  /// Inside `txn` (journal::append's, for a late commit): applies `effects`
  /// (one transaction's, committed at a time <= the checkpoint time C) to
  /// their keys' entries, which are written at C: they hold every commit <=
  /// C of their key, this one now included. The caller drops the keys from
  /// its cache. Errors: the CRDT's apply error, errc::corrupt, LMDB errors.
  status fold_late(storage_txn& txn,
                   const std::vector<std::pair<object_key, committed_effect>>& effects);

private:
  journal& log_;
};

/// The cache's miss path over a checkpoint store (cache/object_cache.hpp,
/// entry_source): fetch(key, type) = load(key).
class checkpoint_source final : public entry_source {
public:
  explicit checkpoint_source(checkpoint_store& store) : store_(store) {}
  expected<entry_image> fetch(const object_key& key, crdt_type type) override;

private:
  checkpoint_store& store_;
};

} // namespace tally
