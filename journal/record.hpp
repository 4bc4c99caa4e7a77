// Journal record types (seed 004, section 2.1 and Figure 2.1): what a
// partition replica writes to its operation log. The byte format (version,
// length, checksum, Cereal payload) is in docs/FORMAT.md, "Journal record".
//
// Plain values: no I/O here; journal/journal.hpp writes and reads them.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "clock/bloom_clock.hpp"
#include "clock/vector_clock.hpp"
#include "crdt/crdt_object.hpp"
#include "common/copy_term.hpp"
#include "common/ids.hpp"
#include "crdt/op_id.hpp"

namespace tally {

/// Position of a record in one partition replica's journal. Strictly
/// increasing, never reused, also after truncation.
using lsn = std::uint64_t;

/// One update of one object inside a transaction. `op` is present when the
/// client sent an operation id (Tally's extension): the FBF window is rebuilt
/// from these at recovery, so replays stay idempotent.
struct update_record {
  tx_id tx;
  object_key key;
  crdt_type type = crdt_type::counter;
  crdt_effect effect;
  std::optional<op_id> op;
};

/// Phase one of two-phase commit: the partition's prepare time for `tx`
/// (DESIGN.md, "Transactions": above its clock and above the snapshot).
/// Since class version 2 (issue 13) it names who else can tell the
/// transaction's outcome, so that recovery asks only them
/// (docs/CLUSTER.md, "Recovery of undecided transactions"): the partitions
/// of the two-phase commit (this one included) and the node id of the
/// coordinator. A version-1 record reads with both empty: "unknown", and
/// recovery asks every partition as before.
struct prepare_record {
  tx_id tx;
  std::uint64_t prepare_time = 0;
  std::vector<std::uint32_t> participants = {}; // sorted, distinct
  std::string coordinator = {};                 // node id, "" when unknown
};

/// The transaction committed at `commit_time`; its Bloom timestamp and the
/// wall-clock time (microseconds since the Unix epoch) of the commit.
struct commit_record {
  tx_id tx;
  vector_clock commit_time;
  std::string bloom_timestamp; // bloom_clock::encode() bytes, empty if none
  std::uint64_t wall_time_us = 0;
};

struct abort_record {
  tx_id tx;
};

/// The first record a primary writes under a new term (docs/REPLICATION.md,
/// "Terms in the journal"): every record after it, up to the next term
/// record, was first written under this term. A take-over round compares
/// copies by the term of their last record, then their length (Raft's
/// election restriction, Ongaro and Ousterhout 2014, Sec. 5.4.1), and a new
/// primary makes the records it adopted from older terms visible only once
/// this record is on w copies (Sec. 5.4.2, Figure 8; Sec. 8: a no-op entry
/// at the start of each term).
///
/// `tx` is {0, term number}: origin 0 is never a transaction's (their
/// origin is a node's incarnation or a random number), so prefix checks,
/// which compare the transaction of a record, tell two term records apart
/// by their term, and record_tx() needs no special case.
struct term_record {
  tx_id tx;        // {0, term number}
  std::string by;  // the node whose copy leads under it

  term_record() = default;
  explicit term_record(const copy_term& t) : tx{0, t.n}, by(t.by) {}
  copy_term term() const { return copy_term{tx.seq, by}; }
};

/// A participant's fence on a transaction it holds no decision for
/// (docs/RELIABILITY.md, "The participant fence"): written when the recovery
/// of undecided transactions asks, because the transaction's coordinator is
/// out of reach. From it on, the partition takes no prepare of `tx` and no
/// commit from its coordinator; only a commit recovery decided from another
/// participant's commit record. Replicated like any record, so a failover
/// keeps the fence.
struct fence_record {
  tx_id tx;
};

using journal_record = std::variant<update_record, prepare_record, commit_record, abort_record,
                                    term_record, fence_record>;

/// A committed effect as the cache and the materializer consume it: the
/// update joined with its transaction's commit.
struct committed_effect {
  lsn position = 0; // the LSN of the update record
  tx_id tx;
  vector_clock commit_time;
  crdt_effect effect;
  // The LSN of the transaction's commit record: what journal::
  // read_committed(key, after_lsn) compares `after_lsn` with. 0 when the
  // producer did not say (e.g. an effect built by hand in a test).
  lsn commit_position = 0;
  // The CRDT type the update was written as, so that a reader can refuse a
  // key read as another type even when it is not cached.
  crdt_type type = crdt_type::counter;
};

/// The transaction a record belongs to.
inline const tx_id& record_tx(const journal_record& r) noexcept {
  return std::visit([](const auto& x) -> const tx_id& { return x.tx; }, r);
}

/// "update", "prepare", "commit" or "abort", for logs and error messages.
inline const char* record_kind_name(const journal_record& r) noexcept {
  static constexpr const char* names[] = {"update", "prepare", "commit",
                                          "abort", "term", "fence"};
  return names[r.index()];
}

// Cereal hooks (docs/FORMAT.md, "Journal record"). Each record type carries
// its own class version (CEREAL_CLASS_VERSION below), written once per
// archive, so one type can evolve without touching the others. A loader that
// meets a version it does not know throws cereal::Exception; the journal's
// decoder turns that into errc::corrupt.
namespace detail {

/// The version the update, commit and abort records are written with
/// today. Bump the one that changes and keep a reader for every version
/// ever written.
constexpr std::uint32_t record_class_version = 1;
/// The prepare record's: 2 since issue 13 (participants and coordinator);
/// version 1 (tx and prepare time only) is still read.
constexpr std::uint32_t prepare_record_class_version = 2;

inline void check_record_version(std::uint32_t version, const char* what,
                                 std::uint32_t newest = record_class_version) {
  if (version == 0 || version > newest)
    throw cereal::Exception(std::string{"unknown "} + what
                            + " record version " + std::to_string(version));
}

} // namespace detail

/// A crdt_type in a Cereal archive: its AntidoteDB wire number (one byte);
/// a loader throws cereal::Exception for an unknown number, naming `where`.
/// Shared by journal records and node-to-node messages (actors/wire.cpp).
template <class Archive>
void crdt_type_as_wire(Archive& ar, crdt_type& t, const char* where) {
  auto wire = static_cast<std::uint8_t>(t);
  ar(wire);
  if constexpr (Archive::is_loading::value) {
    if (!crdt_type_from_wire(wire, t))
      throw cereal::Exception("unknown CRDT type id " + std::to_string(wire) + " in "
                              + where);
  }
}

namespace detail {

// A variant `v` whose alternative `Counter` keeps Cereal's std::variant
// layout (an int32 index 0, then the counter), every other alternative as
// index 1 and its versioned bytes (`encode`, `decode`) as a Cereal string.
template <class Counter, class Archive, class V, class Encode, class Decode>
void counter_or_bytes(Archive& ar, V& v, const char* what, const char* where,
                      Encode encode, Decode decode) {
  std::int32_t index = std::holds_alternative<Counter>(v) ? 0 : 1;
  ar(index);
  if constexpr (Archive::is_loading::value) {
    if (index == 0) {
      Counter c{};
      ar(c);
      v = c;
    } else if (index == 1) {
      std::string bytes;
      ar(bytes);
      auto d = decode(bytes);
      if (!d || std::holds_alternative<Counter>(*d))
        throw cereal::Exception(std::string{"bad "} + what + " in " + where + ": "
                                + (d ? "a counter in the byte form" : d.err().message()));
      v = std::move(*d);
    } else {
      throw cereal::Exception("unknown " + std::string{what} + " index "
                              + std::to_string(index) + " in " + where);
    }
  } else if (index == 0) {
    ar(std::get<Counter>(v));
  } else {
    std::string bytes = encode(v);
    ar(bytes);
  }
}

} // namespace detail

// A crdt_effect in a Cereal archive. Counter effects keep the layout they
// always had, Cereal's std::variant<counter_effect> (an int32 index 0, then
// the int64 delta), so counter records and messages are byte for byte what
// they were; every other effect is index 1 followed by its format-2 bytes
// (encode_effect) as a Cereal string. Shared by journal records and
// node-to-node messages (actors/wire.cpp); docs/FORMAT.md.
template <class Archive>
void effect_as_wire(Archive& ar, crdt_effect& e, const char* where) {
  detail::counter_or_bytes<counter_effect>(
    ar, e, "CRDT effect", where, [](const crdt_effect& x) { return encode_effect(x); },
    [](std::string_view b) { return decode_effect(b); });
}

// A crdt_value in a Cereal archive, likewise: an int64 as Cereal's
// std::variant<std::int64_t> (index 0, the value), any other value as index 1
// and its encode_value bytes.
template <class Archive>
void value_as_wire(Archive& ar, crdt_value& v, const char* where) {
  detail::counter_or_bytes<std::int64_t>(
    ar, v, "CRDT value", where, [](const crdt_value& x) { return encode_value(x); },
    [](std::string_view b) { return decode_value(b); });
}

// cereal's std::optional layout (a bool "nullopt", then the value), with
// the flag read as a byte and checked: cereal loads it straight into a bool,
// and a stored byte other than 0 or 1 is then undefined behaviour (found by
// fuzz/fuzz_journal.cpp).
template <class Archive, class T>
void optional_as_wire(Archive& ar, std::optional<T>& o, const char* where) {
  std::uint8_t absent = o ? 0 : 1;
  ar(absent);
  if constexpr (Archive::is_loading::value) {
    if (absent > 1)
      throw cereal::Exception("bad optional flag " + std::to_string(absent)
                              + " in " + where);
    if (absent) {
      o.reset();
      return;
    }
    o.emplace();
  } else if (absent) {
    return;
  }
  ar(*o);
}

template <class Archive>
void serialize(Archive& ar, update_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "update");
  ar(r.tx, r.key);
  crdt_type_as_wire(ar, r.type, "an update record");
  effect_as_wire(ar, r.effect, "an update record");
  optional_as_wire(ar, r.op, "an update record");
}

template <class Archive>
void serialize(Archive& ar, prepare_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "prepare", detail::prepare_record_class_version);
  ar(r.tx, r.prepare_time);
  if (version >= 2)
    ar(r.participants, r.coordinator);
  else if constexpr (Archive::is_loading::value) {
    r.participants.clear();
    r.coordinator.clear();
  }
}

template <class Archive>
void serialize(Archive& ar, commit_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "commit");
  ar(r.tx, r.commit_time, r.bloom_timestamp, r.wall_time_us);
}

template <class Archive>
void serialize(Archive& ar, abort_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "abort");
  ar(r.tx);
}

template <class Archive>
void serialize(Archive& ar, fence_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "fence");
  ar(r.tx);
}

template <class Archive>
void serialize(Archive& ar, term_record& r, std::uint32_t const version) {
  detail::check_record_version(version, "term");
  ar(r.tx.seq, r.by);
  if constexpr (Archive::is_loading::value)
    r.tx.origin = 0;
}

} // namespace tally

CEREAL_CLASS_VERSION(tally::update_record, tally::detail::record_class_version)
CEREAL_CLASS_VERSION(tally::prepare_record, tally::detail::prepare_record_class_version)
CEREAL_CLASS_VERSION(tally::commit_record, tally::detail::record_class_version)
CEREAL_CLASS_VERSION(tally::abort_record, tally::detail::record_class_version)
CEREAL_CLASS_VERSION(tally::term_record, tally::detail::record_class_version)
CEREAL_CLASS_VERSION(tally::fence_record, tally::detail::record_class_version)
