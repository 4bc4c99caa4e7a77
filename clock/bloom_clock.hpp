// Bloom clock (Misra and Kshemkalyani, "The Bloom Clock for Causality
// Testing", seed 002, section 3, Algorithm 1): a counting Bloom filter of m
// cells ticked with k hashes of each event id. It tests y -> z by B_z >= B_y
// (Proposition 1) with no false negatives and some false positives.
//
// In Tally (DESIGN.md, "Bloom clocks") a committed transaction is an event;
// "B_local does not dominate B_deps" proves a dependency is missing (the fast
// negative path), while a positive is always confirmed exactly with vector
// clocks or sequence numbers. The probabilities of section 4 live in
// clock/bloom_probability.hpp.
#pragma once

#include <cereal/cereal.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.hpp"
#include "common/hash.hpp"

namespace tally {

/// The 64-bit id of event number `seq` of process `process` (the paper's
/// (i, x) of Algorithm 1), as bloom_clock::tick expects it.
constexpr std::uint64_t bloom_event(std::uint64_t process,
                                    std::uint64_t seq) noexcept {
  return hash_pair(process, seq);
}

class bloom_clock {
public:
  using cell = std::uint32_t;

  /// Cells saturate here instead of wrapping (docs/CLOCKS.md, "Saturation"):
  /// a saturating increment still never decreases a cell, so Proposition 1
  /// keeps its no-false-negative guarantee; it can only add false positives.
  static constexpr cell cell_max = std::numeric_limits<cell>::max();

  /// Upper bound on m. The paper sizes m below the number of processes
  /// (m < n); 2^20 cells is far above any useful clock and caps what one
  /// clock, and so one decode of untrusted bytes, may allocate (4 MiB).
  static constexpr std::uint32_t max_cells = 1u << 20;

  /// Upper bound on k. The paper recommends small k (2 to 4): every extra
  /// hash adds to B^sum without making timestamps more distinct.
  static constexpr std::uint32_t max_hashes = 64;

  /// The format version written by encode() and save().
  static constexpr std::uint32_t format_version = 1;

  /// The zero clock with m cells and k hashes (Algorithm 1, line 1).
  /// errc::invalid_argument unless 1 <= m <= max_cells and
  /// 1 <= k <= max_hashes.
  static expected<bloom_clock> make(std::uint32_t m, std::uint32_t k);

  /// A clock with the given cells (m = cells.size()) and k hashes, e.g. a
  /// timestamp rebuilt by an analysis tool. Same domain errors as make().
  static expected<bloom_clock> from_cells(std::uint32_t k,
                                          std::vector<cell> cells);

  std::uint32_t m() const noexcept {
    return static_cast<std::uint32_t>(cells_.size());
  }
  std::uint32_t k() const noexcept { return k_; }

  /// The m counters B[0..m-1].
  const std::vector<cell>& cells() const noexcept { return cells_; }

  /// True when both clocks have the same m and k: only then may they be
  /// merged or compared.
  bool compatible(const bloom_clock& other) const noexcept {
    return k_ == other.k_ && cells_.size() == other.cells_.size();
  }

  /// The cell that hash function i (0 <= i < k) maps `event_hash` to. Double
  /// hashing: g_i = h1 + i*h2 over split_hash(mix64(event_hash)), reduced
  /// onto [0, m). The extra mix64 makes ids that are not hashes (plain
  /// sequence numbers) safe to pass. Positions are persisted: never change
  /// this mapping without a new format version.
  std::uint32_t index(std::uint64_t event_hash, std::uint32_t i) const noexcept;

  /// Local tick for event `event_hash` (Algorithm 1, lines 2-4): increments
  /// the k cells index(event_hash, 0..k-1); two hashes landing on the same
  /// cell increment it twice, so an unsaturated tick adds exactly k to sum().
  /// A cell at cell_max stays there (saturation).
  void tick(std::uint64_t event_hash) noexcept;

  /// Receive-side merge (Algorithm 1, line 5): B[j] = max(B[j], other[j]) for
  /// every j. errc::invalid_argument, and *this unchanged, when the clocks are
  /// not compatible().
  status merge(const bloom_clock& other);

  /// B_this >= B_other cell-wise, Proposition 1's test for other -> this
  /// (equivalently Equation 1's pr_delta(p) = 1). False proves that the event
  /// of `other` does not precede this one; true may be a false positive.
  /// errc::invalid_argument when the clocks are not compatible().
  expected<bool> dominates(const bloom_clock& other) const;

  /// B^sum (Definition 1), the sum of all cells. Exact: m * cell_max < 2^64.
  std::uint64_t sum() const noexcept;

  /// True when some cell reached cell_max and stopped counting; sums and the
  /// probabilities of section 4 then understate this clock's history.
  bool saturated() const noexcept;

  /// The canonical bytes of this clock: a Cereal portable binary archive
  /// (little-endian), layout in docs/CLOCKS.md.
  std::string encode() const;

  /// Reads the bytes written by encode(). errc::corrupt for empty, truncated
  /// or garbage bytes, an unknown version, m or k out of range, or trailing
  /// bytes. Never throws.
  static expected<bloom_clock> decode(std::string_view bytes);

  /// As decode(bytes), and also errc::corrupt when the decoded clock's m or k
  /// differ from the ones this node is configured with.
  static expected<bloom_clock> decode(std::string_view bytes, std::uint32_t m,
                                      std::uint32_t k);

  /// Cereal hooks for embedding a clock in other archives (journal records,
  /// replication messages). load() throws cereal::Exception on an unknown
  /// version or m/k out of range, as Cereal does on truncation.
  template <class Archive>
  void save(Archive& ar, std::uint32_t /* version */) const {
    ar(m(), k_);
    for (cell c : cells_)
      ar(c);
  }

  template <class Archive>
  void load(Archive& ar, std::uint32_t version) {
    if (version != format_version)
      throw cereal::Exception(unknown_version_message(version));
    std::uint32_t m = 0;
    std::uint32_t k = 0;
    ar(m, k);
    if (auto problem = parameter_problem(m, k); !problem.empty())
      throw cereal::Exception(problem);
    // Read cell by cell so that a garbage m cannot allocate more than the
    // input actually holds.
    std::vector<cell> cells;
    for (std::uint32_t i = 0; i < m; ++i) {
      cell c = 0;
      ar(c);
      cells.push_back(c);
    }
    k_ = k;
    cells_ = std::move(cells);
  }

  friend bool operator==(const bloom_clock& a, const bloom_clock& b) {
    return a.k_ == b.k_ && a.cells_ == b.cells_;
  }
  friend bool operator!=(const bloom_clock& a, const bloom_clock& b) {
    return !(a == b);
  }

private:
  // Clocks only come from make(), from_cells() or decode(), so m and k are
  // always in range. The default state exists for decode() to load into.
  bloom_clock() = default;

  static std::string unknown_version_message(std::uint32_t version);
  // An empty string when m and k are in range, else what is wrong.
  static std::string parameter_problem(std::uint64_t m, std::uint32_t k);

  std::uint32_t k_ = 1;
  std::vector<cell> cells_;
};

/// "bloom_clock{m=4, k=2, [0, 3, 1, 0]}".
std::string to_string(const bloom_clock& clock);
std::ostream& operator<<(std::ostream& os, const bloom_clock& clock);

} // namespace tally

CEREAL_CLASS_VERSION(tally::bloom_clock, tally::bloom_clock::format_version)
