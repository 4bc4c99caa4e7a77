#include "clock/vector_clock.hpp"

#include <algorithm>
#include <ostream>

#include "clock/detail/codec.hpp"

namespace tally {

namespace {

using entry = vector_clock::entry;

bool dc_less(const entry& e, dc_id dc) { return e.dc < dc; }

} // namespace

std::string_view to_string(causal_order order) noexcept {
  switch (order) {
    case causal_order::equal: return "equal";
    case causal_order::before: return "before";
    case causal_order::after: return "after";
    case causal_order::concurrent: return "concurrent";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, causal_order order) {
  return os << to_string(order);
}

vector_clock::vector_clock(std::initializer_list<entry> entries) {
  for (const auto& e : entries)
    advance(e.dc, e.time);
}

std::uint64_t vector_clock::get(dc_id dc) const noexcept {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), dc, dc_less);
  return it != entries_.end() && it->dc == dc ? it->time : 0;
}

void vector_clock::set(dc_id dc, std::uint64_t time) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), dc, dc_less);
  bool found = it != entries_.end() && it->dc == dc;
  if (time == 0) {
    if (found)
      entries_.erase(it);
  } else if (found) {
    it->time = time;
  } else {
    entries_.insert(it, entry{dc, time});
  }
}

void vector_clock::advance(dc_id dc, std::uint64_t time) {
  if (time > get(dc))
    set(dc, time);
}

void vector_clock::merge(const vector_clock& other) {
  if (other.entries_.empty())
    return;
  std::vector<entry> out;
  out.reserve(entries_.size() + other.entries_.size());
  auto a = entries_.begin();
  auto b = other.entries_.begin();
  while (a != entries_.end() && b != other.entries_.end()) {
    if (a->dc < b->dc) {
      out.push_back(*a++);
    } else if (b->dc < a->dc) {
      out.push_back(*b++);
    } else {
      out.push_back(entry{a->dc, std::max(a->time, b->time)});
      ++a;
      ++b;
    }
  }
  out.insert(out.end(), a, entries_.end());
  out.insert(out.end(), b, other.entries_.end());
  entries_ = std::move(out);
}

causal_order vector_clock::compare(const vector_clock& other) const noexcept {
  // Walk both sorted lists once; a dc missing on one side is 0 there, and
  // since stored times are never 0 the present side is then the larger.
  bool some_less = false;    // an entry of *this below other's
  bool some_greater = false; // an entry of *this above other's
  auto a = entries_.begin();
  auto b = other.entries_.begin();
  while (a != entries_.end() && b != other.entries_.end()) {
    if (a->dc < b->dc) {
      some_greater = true;
      ++a;
    } else if (b->dc < a->dc) {
      some_less = true;
      ++b;
    } else {
      some_less |= a->time < b->time;
      some_greater |= a->time > b->time;
      ++a;
      ++b;
    }
  }
  some_greater |= a != entries_.end();
  some_less |= b != other.entries_.end();
  if (some_less && some_greater)
    return causal_order::concurrent;
  if (some_less)
    return causal_order::before;
  if (some_greater)
    return causal_order::after;
  return causal_order::equal;
}

// encode() and decode() write and read the bytes of detail::encode_object
// (a Cereal portable binary archive, little-endian) directly: [0] the
// endianness marker 1, [1..4] the class version, [5..8] the entry count,
// then 12 bytes per entry (dc u32, time u64), all little-endian. They run
// for every client request and reply (the clock bytes of
// protocol/descriptor.hpp), where building a std::ostream per call cost
// more than the rest of the encoding; tests/clock check both paths give the
// same bytes.
namespace {

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)]);
  return v;
}

error clock_corrupt(const std::string& why) {
  return make_error(errc::corrupt, "The vector clock encoding is invalid: " + why);
}

} // namespace

std::string vector_clock::encode() const {
  std::string out;
  out.reserve(9 + 12 * entries_.size());
  out.push_back(static_cast<char>(detail::clock_codec_little_endian));
  put_le(out, format_version, 4);
  put_le(out, entries_.size(), 4);
  for (const auto& e : entries_) {
    put_le(out, e.dc, 4);
    put_le(out, e.time, 8);
  }
  return out;
}

expected<vector_clock> vector_clock::decode(std::string_view bytes) {
  if (bytes.empty())
    return make_error(errc::corrupt, "The vector clock encoding is empty.");
  if (static_cast<unsigned char>(bytes.front()) != detail::clock_codec_little_endian)
    return make_error(errc::corrupt, "The vector clock encoding does not start with the "
                                     "little-endian marker byte; it is not a Tally clock.");
  if (bytes.size() < 5)
    return clock_corrupt("it ends inside its version.");
  auto version = static_cast<std::uint32_t>(get_le(bytes, 1, 4));
  if (version != format_version)
    return clock_corrupt(unknown_version_message(version));
  if (bytes.size() < 9)
    return clock_corrupt("it ends inside its entry count.");
  const std::uint64_t n = get_le(bytes, 5, 4);
  const std::uint64_t body = bytes.size() - 9;
  if (body < 12 * n)
    return clock_corrupt("it ends inside its entries (" + std::to_string(n) + " announced).");
  if (body > 12 * n)
    return make_error(errc::corrupt, "The vector clock encoding has "
                                       + std::to_string(body - 12 * n)
                                       + " unexpected bytes after its end.");
  std::vector<entry> entries;
  entries.reserve(static_cast<std::size_t>(n));
  for (std::size_t i = 0, at = 9; i < n; ++i, at += 12)
    entries.push_back(entry{static_cast<dc_id>(get_le(bytes, at, 4)), get_le(bytes, at + 4, 8)});
  if (auto problem = canonical_form_problem(entries); !problem.empty())
    return clock_corrupt(problem);
  vector_clock out;
  out.entries_ = std::move(entries);
  return out;
}

std::string vector_clock::unknown_version_message(std::uint32_t version) {
  return "vector clock format version " + std::to_string(version)
         + " is unknown; this build reads version "
         + std::to_string(format_version) + ".";
}

std::string
vector_clock::canonical_form_problem(const std::vector<entry>& entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].time == 0)
      return "vector clock entry for dc " + std::to_string(entries[i].dc)
             + " has time 0, which the canonical form omits.";
    if (i > 0 && entries[i - 1].dc >= entries[i].dc)
      return "vector clock entries are not strictly sorted by dc (dc "
             + std::to_string(entries[i].dc) + " follows dc "
             + std::to_string(entries[i - 1].dc) + ").";
  }
  return {};
}

bool operator<=(const vector_clock& a, const vector_clock& b) noexcept {
  auto order = a.compare(b);
  return order == causal_order::equal || order == causal_order::before;
}

bool operator<(const vector_clock& a, const vector_clock& b) noexcept {
  return a.compare(b) == causal_order::before;
}

vector_clock merged(vector_clock a, const vector_clock& b) {
  a.merge(b);
  return a;
}

int commit_order(const vector_clock& a, const vector_clock& b) noexcept {
  // A sum of up to 2^32 entries below 2^64 each stays below 2^96: 128 bits
  // never wrap, so a causal successor always has the strictly larger sum.
  __extension__ using u128 = unsigned __int128; // GCC/Clang; -Wpedantic-clean
  auto sum = [](const vector_clock& c) {
    u128 s = 0;
    for (const auto& e : c.entries())
      s += e.time;
    return s;
  };
  u128 sa = sum(a);
  u128 sb = sum(b);
  if (sa != sb)
    return sa < sb ? -1 : 1;
  // Lexicographic over the dense vectors (dc ascending, missing = 0): find
  // the first dc where the two differ.
  auto x = a.entries().begin();
  auto y = b.entries().begin();
  auto x_end = a.entries().end();
  auto y_end = b.entries().end();
  for (; x != x_end && y != y_end; ++x, ++y) {
    if (x->dc != y->dc)
      // The smaller dc is present (non-zero) on one side only.
      return x->dc < y->dc ? 1 : -1;
    if (x->time != y->time)
      return x->time < y->time ? -1 : 1;
  }
  if (x != x_end)
    return 1;
  if (y != y_end)
    return -1;
  return 0;
}

std::string to_string(const vector_clock& clock) {
  std::string out = "{";
  bool first = true;
  for (const auto& e : clock.entries()) {
    if (!first)
      out += ", ";
    first = false;
    out += std::to_string(e.dc) + ":" + std::to_string(e.time);
  }
  out += "}";
  return out;
}

std::ostream& operator<<(std::ostream& os, const vector_clock& clock) {
  return os << to_string(clock);
}

} // namespace tally
