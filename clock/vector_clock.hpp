// Vector clock with one entry per data centre (DESIGN.md, "Transactions"):
// the exact causality tracker of Tally's TCC protocol. Snapshot times, commit
// times and the clock returned to clients are vector clocks, so multi-DC
// replication can come later without changing formats.
//
// Representation: a vector of (dc, time) pairs sorted by dc with no zero
// times. A missing entry means time 0, so {dc1: 0} and {} are the same clock
// and compare equal; every operation keeps this normal form.
#pragma once

#include <cereal/cereal.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.hpp"

namespace tally {

/// A data-centre id, the key of a vector-clock entry.
using dc_id = std::uint32_t;

/// The causal relation between two clocks a and b, as a.compare(b) reports it.
enum class causal_order : std::uint8_t {
  equal,     // a == b
  before,    // a < b: every entry of a <= b, at least one strictly
  after,     // b < a
  concurrent // neither dominates the other
};

/// "equal", "before", "after" or "concurrent".
std::string_view to_string(causal_order order) noexcept;
std::ostream& operator<<(std::ostream& os, causal_order order);

class vector_clock {
public:
  /// One entry: the time (e.g. microseconds) that data centre `dc` reached.
  struct entry {
    dc_id dc;
    std::uint64_t time;
    friend bool operator==(const entry& a, const entry& b) {
      return a.dc == b.dc && a.time == b.time;
    }
  };

  /// The format version written by encode() and save(). Bump it, and keep a
  /// reader for the old one, whenever the encoding changes.
  static constexpr std::uint32_t format_version = 1;

  /// The zero clock (every entry 0).
  vector_clock() = default;

  /// A clock from entries in any order. A dc listed twice keeps the larger
  /// time; zero times are dropped.
  vector_clock(std::initializer_list<entry> entries);

  /// The time of `dc`; 0 when the clock has no entry for it. O(log n).
  std::uint64_t get(dc_id dc) const noexcept;

  /// Sets the entry of `dc` to exactly `time` (which may lower it); time 0
  /// removes the entry.
  void set(dc_id dc, std::uint64_t time);

  /// Raises the entry of `dc` to `time` if that is larger (entry := max).
  void advance(dc_id dc, std::uint64_t time);

  /// Entry-wise max with `other`: afterwards *this is the least clock that
  /// dominates both (the join). O(n + m).
  void merge(const vector_clock& other);

  /// How *this relates to `other` entry-wise (missing entries are 0). O(n + m).
  causal_order compare(const vector_clock& other) const noexcept;

  /// The non-zero entries, sorted by dc.
  const std::vector<entry>& entries() const noexcept { return entries_; }

  /// Number of non-zero entries.
  std::size_t size() const noexcept { return entries_.size(); }

  /// True for the zero clock.
  bool empty() const noexcept { return entries_.empty(); }

  /// The canonical bytes of this clock: a Cereal portable binary archive
  /// (little-endian), layout in docs/CLOCKS.md. Equal clocks give equal bytes.
  std::string encode() const;

  /// Reads the bytes written by encode(). Returns errc::corrupt for empty,
  /// truncated or garbage bytes, an unknown format version, a non-canonical
  /// entry list (unsorted, duplicate dc, zero time) or trailing bytes. Never
  /// throws.
  static expected<vector_clock> decode(std::string_view bytes);

  /// Cereal hooks, so journal records and messages can embed a clock in their
  /// own archives (versioned through CEREAL_CLASS_VERSION below). load()
  /// throws cereal::Exception on an unknown version or invalid contents, as
  /// Cereal itself does on truncation: catch it where the archive is read.
  template <class Archive>
  void save(Archive& ar, std::uint32_t /* version */) const {
    ar(static_cast<std::uint32_t>(entries_.size()));
    for (const auto& e : entries_)
      ar(e.dc, e.time);
  }

  template <class Archive>
  void load(Archive& ar, std::uint32_t version) {
    if (version != format_version)
      throw cereal::Exception(unknown_version_message(version));
    std::uint32_t n = 0;
    ar(n);
    // Entries are read one at a time instead of resizing to n first, so a
    // garbage count cannot allocate more than the input actually holds.
    std::vector<entry> entries;
    for (std::uint32_t i = 0; i < n; ++i) {
      entry e{};
      ar(e.dc, e.time);
      entries.push_back(e);
    }
    if (auto problem = canonical_form_problem(entries); !problem.empty())
      throw cereal::Exception(problem);
    entries_ = std::move(entries);
  }

  friend bool operator==(const vector_clock& a, const vector_clock& b) {
    return a.entries_ == b.entries_;
  }
  friend bool operator!=(const vector_clock& a, const vector_clock& b) {
    return !(a == b);
  }

private:
  static std::string unknown_version_message(std::uint32_t version);
  // An empty string when `entries` is in normal form, else what is wrong.
  static std::string canonical_form_problem(const std::vector<entry>& entries);

  std::vector<entry> entries_;
};

/// a <= b: b dominates a (every entry of a is <= the same entry of b).
bool operator<=(const vector_clock& a, const vector_clock& b) noexcept;

/// a < b: a causally precedes b (a <= b and a != b).
bool operator<(const vector_clock& a, const vector_clock& b) noexcept;

/// The entry-wise max of `a` and `b`.
vector_clock merged(vector_clock a, const vector_clock& b);

/// Total commit order, a tiebreak consistent with causality: negative when a
/// orders first, 0 only when a == b, positive when b orders first.
/// Order: by the sum of all entries (exact, in 128 bits, so it never wraps),
/// then lexicographically over the entries by ascending dc with missing
/// entries read as 0. If a < b causally then sum(a) < sum(b), so a orders
/// first; clocks with equal sums are equal or concurrent, and the
/// lexicographic step only breaks ties among those.
int commit_order(const vector_clock& a, const vector_clock& b) noexcept;

/// commit_order(a, b) < 0, as a comparator for sorting and ordered containers.
struct commit_order_less {
  bool operator()(const vector_clock& a, const vector_clock& b) const noexcept {
    return commit_order(a, b) < 0;
  }
};

/// "{1:5, 3:7}" (dc:time, ascending dc); "{}" for the zero clock.
std::string to_string(const vector_clock& clock);
std::ostream& operator<<(std::ostream& os, const vector_clock& clock);

} // namespace tally

CEREAL_CLASS_VERSION(tally::vector_clock, tally::vector_clock::format_version)
