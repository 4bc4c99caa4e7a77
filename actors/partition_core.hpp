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
// A staged but not yet flushed commit stays in the prepared set, so reads at
// or above its time wait until it is durable and visible.
//
// Contract: one owner calls everything (the partition actor). Time comes from
// the clock functions in the options, so tests control it.
#pragma once

#include <cstdint>
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
#include "fbf/forgetful_bloom_filter.hpp"
#include "journal/journal.hpp"
#include "journal/record.hpp"

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
fbf_config tallyd_fbf_config();

struct partition_options {
  std::uint32_t index = 0;
  std::string path; // the partition's LMDB directory (created if missing)
  durability mode = durability::batch;
  /// Per-bucket FBF; `start` is ignored (now_fbf() used).
  fbf_config fbf = tallyd_fbf_config();
  /// Bloom clock size: 64 cells, 3 hashes (the paper recommends small k).
  std::uint32_t bloom_cells = 64;
  std::uint32_t bloom_hashes = 3;
  object_cache_config cache;
  std::function<std::uint64_t()> now_us = wall_clock_us;
  std::function<fbf_time()> now_fbf = steady_fbf_now;
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
};

/// A prepared transaction found undecided at recovery.
struct undecided_prepare {
  tx_id tx;
  std::uint64_t prepare_time = 0;
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
  /// transaction's). Precondition: snapshot <= safe_time().
  expected<crdt_value> read(const object_key& key, crdt_type type,
                            const vector_clock& snapshot,
                            const std::vector<crdt_effect>& own);

  /// Phase one (or the first half of a one-step commit): drops updates whose
  /// op id is a duplicate, stages the rest and, if `two_phase`, a prepare
  /// record. The prepare time is above the clock and above `snapshot_time`.
  /// An id is a duplicate only if it is in flight here (staged by an
  /// undecided transaction, or earlier in this one) or the journal holds its
  /// commit (journal::find_committed_op); the bucket's FBF only rules ids
  /// out fast, and an FBF positive that is neither is applied and counted
  /// (fbf_false_positives()). Errors: errc::unavailable after a failed
  /// write; errc::invalid_argument for a transaction already staged here;
  /// a journal read error of the exact check (nothing staged: the client
  /// retries with the same ids).
  expected<prepare_outcome> stage_prepare(const tx_id& tx,
                                          std::vector<tx_update> updates,
                                          std::uint64_t snapshot_time,
                                          bool two_phase);

  /// Stages the commit of a prepared transaction at `commit_time` (>= its
  /// prepare time). errc::not_found for an unknown transaction.
  status stage_commit(const tx_id& tx, std::uint64_t commit_time);

  /// Stages the abort of a prepared transaction (unknown: no-op).
  status stage_abort(const tx_id& tx);

  /// True when staged records wait for flush().
  bool has_staged() const noexcept { return !staged_.empty(); }

  /// Appends and syncs the staged batch, then applies its commits. On error
  /// the journal is fail-stopped and every later write fails.
  status flush();

  /// Prepared transactions found at recovery with no decision.
  const std::vector<undecided_prepare>& undecided() const noexcept {
    return undecided_;
  }
  /// The commit time of `tx` if this partition's journal holds its commit
  /// (scans the log; used at startup only).
  expected<std::optional<std::uint64_t>> find_commit(const tx_id& tx);

  std::uint64_t clock() const noexcept { return clock_; }
  /// The smallest prepare time of a prepared or staged transaction (reads at
  /// or above it wait); UINT64_MAX when there is none.
  std::uint64_t blocked_from() const noexcept {
    return prepare_times_.empty() ? UINT64_MAX : *prepare_times_.begin();
  }
  std::size_t prepared_count() const noexcept { return prepared_.size(); }
  const journal& log() const noexcept { return *log_; }
  std::uint64_t duplicates_dismissed() const noexcept { return dismissed_; }
  /// FBF positives the exact check refuted (the update was applied).
  std::uint64_t fbf_false_positives() const noexcept {
    return fbf_false_positives_;
  }
  /// FBF positives the exact check confirmed from the journal.
  std::uint64_t fbf_confirmed() const noexcept { return fbf_confirmed_; }

private:
  struct prepared_tx {
    std::uint64_t prepare_time = 0;
    std::vector<tx_update> updates;
    std::vector<lsn> positions; // LSN of each update record, once appended
    std::optional<std::uint64_t> commit_time; // staged commit
  };
  // What each staged record is, to route its LSN after the append.
  struct staged_ref {
    tx_id tx;
    std::size_t update_index = 0; // for update records
  };

  explicit partition_core(partition_options opts) : opts_(std::move(opts)) {}

  std::uint64_t tick(std::uint64_t at_least);
  expected<forgetful_bloom_filter*> fbf_for(const std::string& bucket);
  expected<bool> is_duplicate(const std::string& bucket, const op_id& id);
  void release_in_flight(const prepared_tx& p);

  partition_options opts_;
  std::unique_ptr<journal> log_;
  std::optional<object_cache> cache_;
  std::optional<bloom_clock> bloom_;
  std::uint64_t commits_ = 0;
  std::uint64_t clock_ = 0;
  std::map<tx_id, prepared_tx> prepared_;
  std::multiset<std::uint64_t> prepare_times_;
  std::map<std::string, forgetful_bloom_filter> fbfs_;
  std::set<std::pair<std::string, op_id>> in_flight_;
  std::vector<journal_record> staged_;
  std::vector<staged_ref> staged_refs_;
  std::vector<undecided_prepare> undecided_;
  std::uint64_t dismissed_ = 0;
  std::uint64_t fbf_false_positives_ = 0;
  std::uint64_t fbf_confirmed_ = 0;
  std::optional<error> failed_;
};

} // namespace tally
