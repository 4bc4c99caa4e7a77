// The partition's object cache (seed 004, section 2.4; DESIGN.md, "The
// partition actor"): a segmented LRU of object entries, each holding a base
// version, the committed effects since that base (the operations cache) and
// an eagerly materialized latest version (the two "future work" items of the
// seed's conclusion). Reads at any snapshot since the entry's base are served
// from memory.
//
// What the owner calls, and when (docs/CACHE.md):
//   on_commit()     for every committed update of this partition, in any
//                   order; updates cached entries only.
//   read...()       for every read; a miss (nullopt) means: load, then read.
//   load()          on a miss, with the key's latest checkpoint and every
//                   committed effect after it (checkpoint store + journal
//                   index); read_or_load() does both.
//   truncate_below()/rebase()  after a checkpoint, so effect lists stay
//                   bounded by the commits since the last checkpoint.
//
// Contract: owned by one partition actor and called only from it (no locks,
// no I/O, no clock). Movable, not copyable. Every error leaves the cache
// unchanged unless the function says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cache/object_entry.hpp"
#include "cache/segmented_lru.hpp"
#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/record.hpp"

namespace tally {

struct object_cache_config {
  /// A rotation evicts one segment: with 4, a quarter of the cache at a
  /// time, and a key survives at least 3/4 of a cache's worth of inserts
  /// after its last hit. AntidoteDB's segment count is configurable too.
  std::size_t segments = 4;
  /// 4 x 4096 = 16384 entries per partition, ~1M per node at the default 64
  /// partitions: a counter entry with a few effects is a few hundred bytes,
  /// so a node's cache stays within a few hundred MB. Tune per deployment.
  std::size_t entries_per_segment = 4096;
};

/// What the owner supplies on a miss: the key's latest checkpoint (nullopt
/// when it has none: the type's bottom object at the zero clock) and every
/// committed effect after it, in any order.
struct entry_image {
  std::optional<object_version> base;
  std::vector<committed_effect> effects;
};

/// The owner's source of entries on a miss: the checkpoint store and the
/// journal index (no LMDB here). Called synchronously from load().
class entry_source {
public:
  virtual ~entry_source() = default;
  /// The image of `key` (of CRDT `type`), or the reason it cannot be read
  /// (errc::io_error, errc::corrupt, ...), which load() passes through.
  virtual expected<entry_image> fetch(const object_key& key,
                                      crdt_type type) = 0;
};

/// Counters since construction, plus the current size.
struct object_cache_stats {
  std::uint64_t hits = 0;           // reads that found the key cached
  std::uint64_t misses = 0;         // reads that did not
  std::uint64_t evictions = 0;      // entries dropped by SLRU rotations
  std::uint64_t latest_reads = 0;   // hits served by the latest version
  std::uint64_t replayed_reads = 0; // hits that replayed from the base
  std::uint64_t loads = 0;          // successful load() calls
  std::uint64_t commits_applied = 0; // on_commit() on a cached key
  std::uint64_t commits_skipped = 0; // on_commit() on an uncached key
  std::size_t entries = 0;          // keys cached now
  std::size_t effects_held = 0;     // committed effects held now, all keys
};

/// What truncate_below() did.
struct truncate_report {
  std::size_t rebased = 0;         // entries whose base moved to the new time
  std::size_t skipped = 0;         // entries whose base is not <= that time
  std::size_t failed = 0;          // entries left unchanged on an apply error
  std::size_t effects_dropped = 0; // effects now covered by a base
};

class object_cache {
public:
  /// A cache with `cfg`; errc::bad_config for a zero count.
  static expected<object_cache> make(object_cache_config cfg = {});

  /// The stable version's value of `key` at `snapshot` (seed 2.2): base +
  /// every committed effect with commit time <= snapshot. nullopt on a miss.
  /// A hit is promoted in the SLRU. Errors: errc::wrong_type when the key is
  /// cached as another type; errc::unavailable "snapshot older than the
  /// checkpoint" when the entry's base time is not <= snapshot; the CRDT's
  /// apply error (errc::overflow).
  expected<std::optional<crdt_value>> read(const object_key& key,
                                           crdt_type type,
                                           const vector_clock& snapshot);

  /// The interactive version's value: read() plus `own_effects`, the reading
  /// transaction's uncommitted effects on `key` in issue order. Errors as
  /// read().
  expected<std::optional<crdt_value>>
  read_interactive(const object_key& key, crdt_type type,
                   const vector_clock& snapshot,
                   const std::vector<crdt_effect>& own_effects);

  /// read_interactive(), loading `key` from `source` first on a miss (empty
  /// `own_effects` gives the stable value). Errors: those of read() and
  /// load().
  expected<crdt_value> read_or_load(const object_key& key, crdt_type type,
                                    const vector_clock& snapshot,
                                    const std::vector<crdt_effect>& own_effects,
                                    entry_source& source);

  /// The object itself, as read_or_load() reads it: what an update is
  /// prepared against (read before write, docs/DATATYPES.md). A copy.
  expected<crdt_object> object_or_load(const object_key& key, crdt_type type,
                                       const vector_clock& snapshot,
                                       const std::vector<crdt_effect>& own_effects,
                                       entry_source& source);

  /// Caches `key` from `source.fetch(key, type)`, replacing any cached entry.
  /// May evict the SLRU tail. Errors: the source's error; those of the
  /// image-taking overload.
  status load(const object_key& key, crdt_type type, entry_source& source);

  /// Caches `key` from `image`. The image must hold every effect committed
  /// so far after its base; effects that also reach on_commit() later are
  /// recognised by journal position and kept once. Errors: errc::wrong_type
  /// when the base is not of `type` (or `type` is not stored by Tally);
  /// errc::invalid_argument for an effect with a zero commit time; the
  /// CRDT's apply error when the latest version cannot be built (the key is
  /// then not cached).
  status load(const object_key& key, crdt_type type, entry_image image);

  /// Eager materialization (seed 004, conclusion): if `key` is cached, adds
  /// the committed effect at its place in commit order and updates the
  /// latest version; if not, does nothing (a later miss loads it). Does not
  /// promote the key: only reads count as use. Errors: errc::wrong_type when
  /// the key is cached as another type (cache unchanged); on an apply error
  /// (errc::overflow) or a zero commit time the entry cannot represent the
  /// committed history any more, so the key is dropped from the cache and
  /// the error returned.
  status on_commit(const object_key& key, crdt_type type,
                   committed_effect effect);

  /// After a checkpoint of `key` at `new_base_time`: replaces the entry's
  /// base with `new_base` and drops the effects it covers. Returns the number
  /// dropped; 0 when the key is not cached. Errors (entry unchanged): see
  /// object_entry::rebase().
  expected<std::size_t> rebase(const object_key& key, crdt_object new_base,
                               vector_clock new_base_time);

  /// After a checkpoint of the whole partition at `checkpoint_time`: rebases
  /// every cached entry whose base time is <= it onto its own version at
  /// that time. Snapshots >= checkpoint_time read the same as before; older
  /// ones become unavailable, exactly as after an eviction and reload from
  /// the truncated journal.
  truncate_report truncate_below(const vector_clock& checkpoint_time);

  /// Drops `key` (not counted as an eviction). False when it was not cached.
  bool erase(const object_key& key);

  bool contains(const object_key& key) const noexcept {
    return lru_.contains(key);
  }
  /// The entry of `key` without touching recency; nullptr when not cached.
  const object_entry* peek(const object_key& key) const noexcept {
    return lru_.peek(key);
  }
  std::size_t size() const noexcept { return lru_.size(); }
  std::size_t capacity() const noexcept { return lru_.capacity(); }
  object_cache_stats stats() const noexcept;

private:
  using lru = segmented_lru<object_key, object_entry, object_key_hash>;

  // Counters the eviction listener updates; on the heap so that their
  // address survives moves of the cache.
  struct tallies {
    std::uint64_t latest_reads = 0;
    std::uint64_t replayed_reads = 0;
    std::uint64_t loads = 0;
    std::uint64_t commits_applied = 0;
    std::uint64_t commits_skipped = 0;
    std::size_t effects_held = 0;
  };

  object_cache(lru cache, std::unique_ptr<tallies> t)
      : lru_(std::move(cache)), tallies_(std::move(t)) {}

  // The cached entry of `key` (promoted), nullptr on a miss, or
  // errc::wrong_type. A never-written key's bottom entry of another type is
  // dropped and counts as a miss.
  expected<object_entry*> find_typed(const object_key& key, crdt_type type);
  // The interactive value of `entry` at `snapshot` (stable when
  // `own_effects` is empty); counts latest and replayed reads.
  expected<crdt_value> value_at(const object_entry& entry,
                                const vector_clock& snapshot,
                                const std::vector<crdt_effect>& own_effects);
  // The same, the object rather than its value.
  expected<crdt_object> object_at(const object_entry& entry,
                                  const vector_clock& snapshot,
                                  const std::vector<crdt_effect>& own_effects);

  lru lru_;
  std::unique_ptr<tallies> tallies_;
};

} // namespace tally
