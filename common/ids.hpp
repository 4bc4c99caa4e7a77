// Identifiers every layer above crdt/ shares: the object key (AntidoteDB's
// (bucket, key) pair) and the transaction id. They live here, not in
// journal/, so that protocol/ and the client can name them without
// depending on the storage layer (DESIGN.md, "Layers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "common/hash.hpp"

namespace tally {

/// A transaction id, unique in the cluster: the coordinator's node hash and a
/// per-coordinator sequence number.
struct tx_id {
  std::uint64_t origin = 0;
  std::uint64_t seq = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(origin, seq);
  }
  friend bool operator==(const tx_id& a, const tx_id& b) noexcept {
    return a.origin == b.origin && a.seq == b.seq;
  }
  friend bool operator!=(const tx_id& a, const tx_id& b) noexcept {
    return !(a == b);
  }
  friend bool operator<(const tx_id& a, const tx_id& b) noexcept {
    return a.origin != b.origin ? a.origin < b.origin : a.seq < b.seq;
  }
  friend std::ostream& operator<<(std::ostream& os, const tx_id& t) {
    return os << "tx<" << t.origin << ',' << t.seq << '>';
  }
};

struct tx_id_hash {
  std::size_t operator()(const tx_id& t) const noexcept {
    return static_cast<std::size_t>(hash_pair(t.origin, t.seq));
  }
};

/// The identity of an object: AntidoteDB's (key, bucket) pair.
struct object_key {
  std::string bucket;
  std::string key;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(bucket, key);
  }
  friend bool operator==(const object_key& a, const object_key& b) noexcept {
    return a.bucket == b.bucket && a.key == b.key;
  }
  friend bool operator!=(const object_key& a, const object_key& b) noexcept {
    return !(a == b);
  }
  friend bool operator<(const object_key& a, const object_key& b) noexcept {
    return a.bucket != b.bucket ? a.bucket < b.bucket : a.key < b.key;
  }
  friend std::ostream& operator<<(std::ostream& os, const object_key& k) {
    return os << k.bucket << '/' << k.key;
  }
};

struct object_key_hash {
  std::size_t operator()(const object_key& k) const noexcept {
    return static_cast<std::size_t>(
      hash_bytes(k.key, hash_bytes(k.bucket, 0x746b6579ULL)));
  }
};

} // namespace tally
