// The term of a partition's primary (docs/REPLICATION.md, "Fencing by
// terms"): a number, with the node whose copy led (or tried to) under it to
// break ties, so that two promoters never share a term. Ordered by number,
// then node. Kept by replication/copy_fence.hpp (what a copy promised) and,
// per record, by the journal (journal/journal.hpp, term_at: the term each
// record was first written under).
//
// Plain value: no actors, no I/O.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>

namespace tally {

struct copy_term {
  std::uint64_t n = 0; // 0: none (a record written before terms, or n_val 1)
  std::string by;      // node id (ring/claim.hpp's node_id)

  friend bool operator<(const copy_term& a, const copy_term& b) {
    return std::tie(a.n, a.by) < std::tie(b.n, b.by);
  }
  friend bool operator==(const copy_term& a, const copy_term& b) {
    return a.n == b.n && a.by == b.by;
  }
  friend bool operator!=(const copy_term& a, const copy_term& b) { return !(a == b); }
  std::string to_string() const { return std::to_string(n) + "/" + by; }
  friend std::ostream& operator<<(std::ostream& os, const copy_term& t) {
    return os << t.to_string();
  }
};

} // namespace tally
