// Segmented LRU (seed 004, sections 2.4.1 and 2.4.2; Karedla, Love and
// Wherry, "Caching strategies to improve disk system performance", 1994).
//
// The cache is a circular list of `segments` segments of at most
// `entries_per_segment` entries each. The head segment takes every insert
// and every promotion; a hit in an older segment moves the entry to the head.
// When the head is full, the TAIL segment (the oldest) is emptied whole -
// every entry in it is evicted at once - and becomes the new head. Recency is
// therefore tracked per segment, not per entry: entries inside one segment
// have no order among themselves, which is what makes a hit in the head and
// an eviction cheap (AntidoteDB drops a whole ETS table instead of deleting
// entries one by one, section 2.4.2).
//
// Lookup, insert, promotion and erase are O(1) on average; a rotation costs
// O(entries evicted). The map's nodes double as the members of an intrusive
// doubly linked list per segment, so a promotion allocates nothing.
//
// Contract: a plain single-threaded value owned by one partition actor
// (DESIGN.md, "The partition actor"); movable, not copyable. Pointers and
// references to values stay valid until that entry is erased or evicted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/expected.hpp"

namespace tally {

template <class K, class V, class Hash = std::hash<K>,
          class KeyEqual = std::equal_to<K>>
class segmented_lru {
public:
  struct config {
    /// Number of segments (levels). 1 degenerates to "flush everything when
    /// full"; more segments evict a smaller, older slice at a time.
    std::size_t segments = 4;
    /// Capacity of one segment, in entries.
    std::size_t entries_per_segment = 1024;
  };

  /// Monotonic counters since construction (clear() does not reset them).
  struct counters {
    std::uint64_t hits = 0;       // find() found the key
    std::uint64_t misses = 0;     // find() did not
    std::uint64_t evictions = 0;  // entries removed by rotations
    std::uint64_t promotions = 0; // entries moved from an older segment to the head
    std::uint64_t rotations = 0;  // times the tail was emptied and became the head
  };

  /// Called once per evicted entry, just before it is destroyed, with the
  /// entries of one rotation delivered consecutively. It must not call back
  /// into this cache.
  using eviction_listener = std::function<void(const K& key, V& value)>;

  /// A cache with `cfg`; errc::bad_config when a count is 0 or the capacity
  /// does not fit in size_t.
  static expected<segmented_lru> make(config cfg,
                                      eviction_listener on_evict = {}) {
    if (cfg.segments == 0 || cfg.entries_per_segment == 0)
      return make_error(errc::bad_config,
                        "segmented_lru: segments and entries_per_segment "
                        "must both be at least 1");
    if (cfg.segments > std::numeric_limits<std::uint32_t>::max()
        || cfg.entries_per_segment
             > std::numeric_limits<std::size_t>::max() / cfg.segments)
      return make_error(errc::bad_config,
                        "segmented_lru: segments * entries_per_segment "
                        "overflows; choose a smaller capacity");
    return segmented_lru{cfg, std::move(on_evict)};
  }

  segmented_lru(segmented_lru&&) = default;
  segmented_lru& operator=(segmented_lru&&) = default;
  // A copy would hold list pointers into the other cache's nodes.
  segmented_lru(const segmented_lru&) = delete;
  segmented_lru& operator=(const segmented_lru&) = delete;

  /// The value of `key`, counted as a hit (and promoted to the head segment
  /// if it sits in an older one, which may rotate and evict the tail) or as
  /// a miss (nullptr).
  V* find(const K& key) {
    auto it = map_.find(key);
    if (it == map_.end()) {
      ++counters_.misses;
      return nullptr;
    }
    ++counters_.hits;
    promote(it->second);
    return &it->second.value;
  }

  /// The value of `key` or nullptr, with no effect on recency or counters.
  V* peek(const K& key) noexcept {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second.value;
  }
  const V* peek(const K& key) const noexcept {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second.value;
  }

  bool contains(const K& key) const noexcept { return map_.count(key) != 0; }

  /// Inserts `key` -> `value` into the head segment, or replaces the value of
  /// a cached key and moves it to the head. May rotate first (evicting the
  /// whole tail) when the head is full. Returns the stored value.
  V& insert(const K& key, V value) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      it->second.value = std::move(value);
      promote(it->second);
      return it->second.value;
    }
    if (segments_[head_].size == cfg_.entries_per_segment)
      rotate();
    auto [pos, inserted] = map_.emplace(key, node{std::move(value)});
    (void)inserted;
    node& n = pos->second;
    n.key = &pos->first;
    link(n, head_);
    return n.value;
  }

  /// Removes `key` without calling the listener or counting an eviction.
  /// Returns false when it was not cached.
  bool erase(const K& key) {
    auto it = map_.find(key);
    if (it == map_.end())
      return false;
    unlink(it->second);
    map_.erase(it);
    return true;
  }

  /// Removes every entry without calling the listener.
  void clear() noexcept {
    map_.clear();
    for (auto& s : segments_)
      s = segment{};
  }

  /// Age of the segment holding `key`: 0 for the head, segments()-1 for the
  /// tail; nullopt when not cached. For tests and diagnostics.
  std::optional<std::size_t> age_of(const K& key) const {
    auto it = map_.find(key);
    if (it == map_.end())
      return std::nullopt;
    auto n = segments_.size();
    return (head_ + n - it->second.segment) % n;
  }

  /// Number of entries in the segment of age `age` (0 = head).
  std::size_t segment_size(std::size_t age) const {
    auto n = segments_.size();
    return segments_[(head_ + n - age % n) % n].size;
  }

  /// Calls f(const K&, V&) for every entry, in no particular order, without
  /// touching recency or counters. `f` must not insert or erase.
  template <class F>
  void for_each(F&& f) {
    for (auto& [key, n] : map_)
      f(key, n.value);
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [key, n] : map_)
      f(key, n.value);
  }

  std::size_t size() const noexcept { return map_.size(); }
  bool empty() const noexcept { return map_.empty(); }
  std::size_t capacity() const noexcept {
    return cfg_.segments * cfg_.entries_per_segment;
  }
  const config& settings() const noexcept { return cfg_; }
  const counters& stats() const noexcept { return counters_; }

private:
  struct node {
    explicit node(V v) : value(std::move(v)) {}
    V value;
    const K* key = nullptr; // points into the map's node, stable until erase
    node* prev = nullptr;
    node* next = nullptr;
    std::uint32_t segment = 0;
  };

  struct segment {
    node* first = nullptr;
    std::size_t size = 0;
  };

  segmented_lru(config cfg, eviction_listener on_evict)
      : cfg_(cfg), segments_(cfg.segments), on_evict_(std::move(on_evict)) {
    // No reservation for the full capacity: the bucket array grows with the
    // entries (amortized rehashes). Reserving 16,384 buckets per partition
    // (1M per node) made every lookup of a small working set touch a cold
    // bucket: 7.5% of a read's CPU in the hash table (docs/PERFORMANCE.md).
  }

  void link(node& n, std::size_t seg) {
    segment& s = segments_[seg];
    n.segment = static_cast<std::uint32_t>(seg);
    n.prev = nullptr;
    n.next = s.first;
    if (s.first)
      s.first->prev = &n;
    s.first = &n;
    ++s.size;
  }

  void unlink(node& n) {
    segment& s = segments_[n.segment];
    if (n.prev)
      n.prev->next = n.next;
    else
      s.first = n.next;
    if (n.next)
      n.next->prev = n.prev;
    n.prev = n.next = nullptr;
    --s.size;
  }

  // Section 2.4.1: "recently read or materialised objects are always
  // inserted in the segment at the head". The entry leaves its segment
  // before any rotation, so a promotion out of the tail cannot evict itself.
  void promote(node& n) {
    if (n.segment == head_)
      return;
    unlink(n);
    if (segments_[head_].size == cfg_.entries_per_segment)
      rotate();
    link(n, head_);
    ++counters_.promotions;
  }

  // Section 2.4.2: "as the segment at the head of the cache reaches
  // capacity, the segment at the tail is emptied ... the head is then
  // modified to point to the empty segment". Segments are ordered newest to
  // oldest as head, head-1, ..., head+1 (mod n), so the tail is head+1.
  void rotate() {
    std::size_t tail = (head_ + 1) % segments_.size();
    segment& s = segments_[tail];
    node* n = s.first;
    while (n) {
      node* next = n->next;
      if (on_evict_)
        on_evict_(*n->key, n->value);
      // Erase by iterator: erasing by a key that lives inside the erased node
      // would read freed memory.
      map_.erase(map_.find(*n->key));
      ++counters_.evictions;
      n = next;
    }
    s = segment{};
    head_ = tail;
    ++counters_.rotations;
  }

  config cfg_;
  std::vector<segment> segments_;
  std::size_t head_ = 0;
  std::unordered_map<K, node, Hash, KeyEqual> map_;
  eviction_listener on_evict_;
  counters counters_;
};

} // namespace tally
