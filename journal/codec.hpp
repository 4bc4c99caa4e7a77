// Byte layouts of everything the journal, its index, the checkpoint store and
// the metadata keep in LMDB (docs/FORMAT.md, "Journal record", "Checkpoint
// entry", "Metadata"). Pure functions: no I/O, safe from any thread.
//
// Every stored value that is not a fixed-width integer is a *frame*:
//
//   frame := version:u8 length:u32le crc:u32le payload[length]
//
// with crc = CRC-32C(payload) and payload a Cereal PortableBinary archive.
// A decoder never throws: bad bytes give errc::corrupt with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/copy_term.hpp"
#include "common/expected.hpp"
#include "journal/record.hpp"

namespace tally {

/// Size of a frame header: version byte, payload length, payload CRC-32C.
constexpr std::size_t frame_header_size = 1 + 4 + 4;

/// The version byte of a journal record frame. Bump on any change to the
/// frame or to the payload's top-level layout; keep decoding every version
/// ever written.
constexpr std::uint8_t record_frame_version = 1;

/// Appends frame(version, payload) to `out`.
void append_frame(std::string& out, std::uint8_t version,
                  std::string_view payload);

/// The size (header and payload) of the frame that starts `bytes`, from
/// its header's length field; 0 when `bytes` is shorter than a header.
std::uint64_t frame_size(std::string_view bytes) noexcept;

/// The payload of a frame, after checking its version (== `version`), its
/// length (the frame must be exactly header + length bytes) and its CRC.
/// errc::corrupt naming `what` and the failed check otherwise.
expected<std::string_view> open_frame(std::string_view frame,
                                      std::uint8_t version, const char* what);

/// The stored bytes of one journal record (a frame of version
/// record_frame_version), written to `out` (cleared first; pass the same
/// string again to reuse its capacity).
void encode_record(const journal_record& r, std::string& out);
std::string encode_record(const journal_record& r);

/// Decodes bytes written by encode_record(). errc::corrupt for a bad frame,
/// an unknown record kind or version, a truncated payload or trailing bytes.
expected<journal_record> decode_record(std::string_view bytes);

// ---- keys ----------------------------------------------------------------

/// Journal key: the LSN as 8 bytes big-endian, so LMDB's byte order is LSN
/// order and appends go to the right edge of the B-tree (MDB_APPEND).
constexpr std::size_t lsn_key_size = 8;
void put_be64(char* out, std::uint64_t v) noexcept;
std::uint64_t get_be64(const char* in) noexcept;
std::string lsn_key(lsn position);
/// errc::corrupt unless `key` is exactly 8 bytes.
expected<lsn> decode_lsn_key(std::string_view key);

/// LMDB's compiled-in maximum key size (MDB_MAXKEYSIZE) is 511 bytes and an
/// index key also bounds its DUPSORT values; the encoded key adds a 2-byte
/// bucket length, so bucket and key together may use 509 bytes.
constexpr std::size_t max_object_key_bytes = 511 - 2;

/// Index and checkpoint key of an object: bucket length as u16 big-endian,
/// the bucket bytes, then the key bytes. Prefix-free, so distinct objects
/// never share an encoding. errc::invalid_argument when bucket + key exceed
/// max_object_key_bytes.
expected<std::string> encode_object_key(const object_key& k);
/// errc::corrupt for bytes that encode_object_key() cannot have written.
expected<object_key> decode_object_key(std::string_view bytes);

/// One index value (seed 004, section 2.3): where a committed update of the
/// key is. 16 bytes: commit LSN then update LSN, both big-endian, so LMDB's
/// sorted duplicates come out in commit order, updates in issue order.
struct index_value {
  lsn commit = 0;
  lsn update = 0;
  friend bool operator==(index_value a, index_value b) noexcept {
    return a.commit == b.commit && a.update == b.update;
  }
};
constexpr std::size_t index_value_size = 16;
std::string encode_index_value(index_value v);
/// errc::corrupt unless `bytes` is exactly 16 bytes.
expected<index_value> decode_index_value(std::string_view bytes);

/// Key of the `opids` database (docs/FORMAT.md, "Op-id index"): client then
/// seq, both u64 big-endian (16 bytes).
constexpr std::size_t op_key_size = 16;
std::string encode_op_key(const op_id& id);

/// The operation an op id was used for, as a 64-bit digest: a retry must
/// carry the same key, type and effect as the original (docs/FORMAT.md,
/// "Op-id index"). MurmurHash64A of the encoded object key, the type byte
/// and encode_effect(effect); for a map effect, 'S' and its shape instead
/// (crdt/map_op_shape.hpp: the entries updated and nested counter deltas,
/// the same for every prepare of one map update). Never 0 (0 would read as
/// "unknown").
std::uint64_t op_digest(const object_key& key, crdt_type type,
                        const crdt_effect& effect);

/// An `opids` value: the commit LSN, and since issue 17 the op's digest
/// (16 bytes). Entries written before (8 bytes, LSN only) decode with no
/// digest, so older stores open unchanged.
struct op_entry {
  lsn commit = 0;
  std::optional<std::uint64_t> digest;
};
std::string encode_op_entry(const op_entry& e);
/// errc::corrupt unless `bytes` is 8 or 16 bytes.
expected<op_entry> decode_op_entry(std::string_view bytes);

/// Key of the `decisions` database (docs/FORMAT.md, "Decision index"): the
/// transaction id, origin then seq, both u64 big-endian (16 bytes).
constexpr std::size_t tx_key_size = 16;
std::string encode_tx_key(const tx_id& tx);
/// errc::corrupt unless `bytes` is exactly 16 bytes.
expected<tx_id> decode_tx_key(std::string_view bytes);

/// How a two-phase transaction ended at one partition. Persisted: never
/// renumber.
enum class tx_outcome : std::uint8_t { committed = 1, aborted = 2 };

/// A `decisions` value: the outcome of a transaction that was prepared at
/// this partition, the LSN of its commit or abort record, and a time: the
/// commit time for a commit, the partition's prepare time for an abort
/// (Tally runs one data centre: a clock's largest entry). 17 bytes.
struct decision_entry {
  tx_outcome outcome = tx_outcome::committed;
  lsn at = 0;
  std::uint64_t time = 0;
  friend bool operator==(const decision_entry& a, const decision_entry& b) noexcept {
    return a.outcome == b.outcome && a.at == b.at && a.time == b.time;
  }
};
constexpr std::size_t decision_entry_size = 17;
std::string encode_decision_entry(const decision_entry& e);
/// errc::corrupt unless `bytes` is 17 bytes with a known outcome.
expected<decision_entry> decode_decision_entry(std::string_view bytes);

/// Meta `folded_term` and `promised_term` (docs/FORMAT.md, "Metadata"): the
/// term number, u64 big-endian, then the node id's bytes.
std::string encode_term_value(const copy_term& t);
/// errc::corrupt unless `bytes` holds at least the 8 bytes of the number.
expected<copy_term> decode_term_value(std::string_view bytes);

/// Meta `led_set` (docs/FORMAT.md, "Metadata"; docs/REPLICATION.md,
/// "Handoffs whose fence gave up"): the copy set this store last led, or
/// the set its copy followed (saved at its first batch of a primary of its
/// view, and when a handoff drained it while another copy led): the ring
/// epoch of the view (its rank, as meta `promised_epoch`), the node
/// whose copy this store was (the leader, when it led), and the other
/// copies' node ids. Encoded as the epoch (u64 big-endian), then each node
/// id (the store's node first) as its length (u64 big-endian) and its
/// bytes.
struct led_copy_set {
  std::uint64_t ring_epoch = 0;
  std::string store_node;
  std::vector<std::string> others;
  friend bool operator==(const led_copy_set& a, const led_copy_set& b) noexcept {
    return a.ring_epoch == b.ring_epoch && a.store_node == b.store_node
           && a.others == b.others;
  }
};
std::string encode_led_set_value(const led_copy_set& s);
/// errc::corrupt unless `bytes` holds an epoch and at least the leader's
/// id, each id's length within the value.
expected<led_copy_set> decode_led_set_value(std::string_view bytes);

/// Fixed-width metadata integers: u64 big-endian.
std::string encode_u64(std::uint64_t v);
/// errc::corrupt naming `what` unless `bytes` is exactly 8 bytes.
expected<std::uint64_t> decode_u64(std::string_view bytes, const char* what);

} // namespace tally
