// The identity of one client operation: <client id, sequence number>
// (FBF paper, section II-A). A retried request reuses its id, which is what
// lets the partition's Forgetful Bloom Filter recognise the retry.
#pragma once

#include <cstdint>
#include <ostream>

#include "common/hash.hpp"

namespace tally {

struct op_id {
  std::uint64_t client = 0; // chosen at random by the client library
  std::uint64_t seq = 0;    // per-client, strictly increasing

  /// The element hash the FBF stores for this id.
  std::uint64_t hash() const noexcept { return hash_pair(client, seq); }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(client, seq);
  }

  friend bool operator==(const op_id& a, const op_id& b) noexcept {
    return a.client == b.client && a.seq == b.seq;
  }
  friend bool operator!=(const op_id& a, const op_id& b) noexcept {
    return !(a == b);
  }
  friend bool operator<(const op_id& a, const op_id& b) noexcept {
    return a.client != b.client ? a.client < b.client : a.seq < b.seq;
  }
  friend std::ostream& operator<<(std::ostream& os, const op_id& id) {
    return os << '<' << id.client << ',' << id.seq << '>';
  }
};

} // namespace tally
