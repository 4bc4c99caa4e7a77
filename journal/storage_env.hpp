// The I/O seam of the storage layers (STYLE.md, habit 4; leveldb's Env):
// every byte the journal, its index, the checkpoint store and the metadata
// read or write goes through these three small interfaces. lmdb_env.hpp is
// the real implementation; fault_env.hpp wraps it to fail the Nth write,
// commit or sync and to simulate a power loss that drops unsynced data.
//
// Model: one environment per partition replica (a directory) with six named
// databases. Transactions are short: the caller begins and ends each one
// inside a single call (the owner is an actor that may run on a different
// thread each time; MDB_NOTLS makes that legal). Single writer: at most one
// write transaction at a time, and the owner never shares the environment
// between threads concurrently.
//
// Errors are tally::error values; LMDB's int codes become errc in exactly
// one place (lmdb_error() in lmdb_env.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/expected.hpp"

namespace tally {

/// The named databases of a partition replica's environment.
enum class store_db : std::uint8_t {
  journal = 0,    // LSN (8 bytes BE) -> record frame
  index = 1,      // object key -> sorted 16-byte [commit LSN][update LSN]
  checkpoint = 2, // object key -> checkpoint entry frame
  meta = 3,       // ASCII name -> value (docs/FORMAT.md, "Metadata")
  opids = 4,      // op id (16 bytes BE) -> commit LSN (u64 BE) of its commit
  decisions = 5,  // tx id (16 bytes BE) -> outcome, LSN, time (issue 13)
};
constexpr int store_db_count = 6;

/// "journal", "index", "checkpoint", "meta", "opids" or "decisions": also
/// the LMDB database names.
const char* to_string(store_db db) noexcept;

/// How a put places its key.
enum class put_mode : std::uint8_t {
  upsert, // insert or overwrite (for `index`: add the duplicate if new)
  append, // the key sorts after every existing key (MDB_APPEND): faster;
          // errc::invalid_argument when it does not
};

/// What a commit promises when it returns.
enum class commit_mode : std::uint8_t {
  lazy,    // visible to later transactions and survives a process crash;
           // durable only after a later sync() or durable commit
  durable, // also on stable storage: the data pages are synced before the
           // new root (meta page) is written, and the root before return
};

/// Page counts of one database (LMDB's MDB_stat).
struct db_stats {
  std::uint64_t entries = 0;
  std::uint64_t branch_pages = 0;
  std::uint64_t leaf_pages = 0;
  std::uint64_t overflow_pages = 0;
  std::uint32_t page_size = 0;
  std::uint32_t depth = 0;
  /// Bytes of pages the database occupies.
  std::uint64_t bytes() const noexcept {
    return (branch_pages + leaf_pages + overflow_pages) * page_size;
  }
};

/// Size facts of the whole environment.
struct env_stats {
  std::uint64_t map_size = 0;   // the configured maximum, in bytes
  std::uint64_t used_bytes = 0; // pages ever allocated (high-water mark)
  std::uint32_t page_size = 0;
};

/// A positioned iterator over one database inside one transaction. Views
/// returned by key()/value() stay valid until the cursor moves or its
/// transaction ends. Positioning calls return true when the cursor is on an
/// entry, false when there is none (end of data); errors are I/O or
/// corruption.
class storage_cursor {
public:
  virtual ~storage_cursor() = default;
  virtual expected<bool> first() = 0;
  virtual expected<bool> last() = 0;
  /// The first entry whose key is >= `key`.
  virtual expected<bool> seek(std::string_view key) = 0;
  /// The next entry (the next duplicate first, in a DUPSORT database).
  virtual expected<bool> next() = 0;
  virtual expected<bool> prev() = 0;
  /// The first duplicate of the next key (DUPSORT databases).
  virtual expected<bool> next_key() = 0;
  /// In a DUPSORT database: the first duplicate of exactly `key` that is
  /// >= `value`; false when `key` is absent or has no such duplicate.
  virtual expected<bool> seek_dup(std::string_view key,
                                  std::string_view value) = 0;
  /// The next duplicate of the current key; false after its last one.
  virtual expected<bool> next_dup() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  /// Deletes the entry under the cursor (write transactions only). The next
  /// call to next() then returns the entry that followed the deleted one
  /// (LMDB's MDB_NEXT after mdb_cursor_del).
  virtual status del() = 0;
};

/// One transaction. Destroying it without commit() aborts it. After any
/// failed write the transaction must be aborted: LMDB refuses further use.
class storage_txn {
public:
  virtual ~storage_txn() = default;
  virtual bool writable() const noexcept = 0;
  /// The value of `key`, nullopt when absent. The view stays valid until
  /// the transaction ends or writes to the same database.
  virtual expected<std::optional<std::string_view>> get(store_db db,
                                                        std::string_view key)
    = 0;
  virtual status put(store_db db, std::string_view key, std::string_view value,
                     put_mode mode = put_mode::upsert)
    = 0;
  /// Deletes `key` (every duplicate of it). False when it was absent.
  virtual expected<bool> del(store_db db, std::string_view key) = 0;
  /// Deletes one duplicate of `key` in a DUPSORT database. False when absent.
  virtual expected<bool> del_dup(store_db db, std::string_view key,
                                 std::string_view value)
    = 0;
  /// A cursor owned by this transaction (valid until it ends).
  virtual expected<storage_cursor*> cursor(store_db db) = 0;
  virtual expected<db_stats> stats(store_db db) = 0;
  /// Ends the transaction, making its writes visible (and, with
  /// commit_mode::durable, durable). On error nothing may be assumed about
  /// whether the writes survive: the journal fail-stops (see journal.hpp),
  /// except for errc::storage_full, which LMDB reports before writing
  /// anything.
  virtual status commit(commit_mode mode) = 0;
  virtual void abort() noexcept = 0;
};

/// One environment (a directory). Owned by one partition replica.
class storage_env {
public:
  virtual ~storage_env() = default;
  /// A read-only (`write` false) or read-write transaction. Read
  /// transactions see the state at begin. errc::unavailable after crash()
  /// (fault_env) or when LMDB's reader table is full.
  virtual expected<std::unique_ptr<storage_txn>> begin(bool write) = 0;
  /// Flushes every lazily committed transaction to stable storage. May
  /// run on another thread than the owner's, concurrently with its
  /// transactions, where sync_from_any_thread() says so (the journal's
  /// background sync: journal::sync_job).
  virtual status sync() = 0;
  /// True when sync() may run on another thread, while the owner writes:
  /// then it covers at least every transaction committed before it began.
  virtual bool sync_from_any_thread() const noexcept { return false; }
  virtual expected<env_stats> stats() = 0;
  /// The environment's directory.
  virtual const std::string& path() const noexcept = 0;
  /// Writes a consistent copy of the whole store (as of the last committed
  /// transaction) into the empty directory `dir`, for a replica that needs
  /// a full copy (docs/REPLICATION.md, "Full copies"). errc::unavailable
  /// where the seam cannot copy; I/O errors otherwise.
  virtual status copy_to(const std::string& dir) {
    return make_error(errc::unavailable, "this store cannot be copied to " + dir);
  }

  // ---- The write-ahead tail (docs/STORAGE.md, "The write-ahead tail") ----
  // An append-only file beside the databases (`tail.log`) where the journal
  // writes its newest records before it moves them into the databases in
  // bulk. Where a seam has no tail, every call is errc::unavailable.

  /// Appends `bytes` at the end of the tail file, through the page cache:
  /// they survive a process crash at once and a power loss after the next
  /// successful tail_sync(). On failure the file keeps no part of them
  /// (a partial write is cut): errc::storage_full for a full disk or file
  /// size limit, errc::io_error otherwise.
  virtual status tail_append(std::string_view bytes) {
    (void)bytes;
    return make_error(errc::unavailable, "this store has no write-ahead tail");
  }
  /// Makes every tail_append() so far durable (an fdatasync of the file).
  /// May run on another thread than the owner's, concurrently with its
  /// appends and resets, where sync_from_any_thread() says so.
  virtual status tail_sync() {
    return make_error(errc::unavailable, "this store has no write-ahead tail");
  }
  /// The whole tail file as it is now ("" when there is none).
  virtual expected<std::string> tail_read() {
    return make_error(errc::unavailable, "this store has no write-ahead tail");
  }
  /// Cuts the tail file to its first `size` bytes (0: empties it). To
  /// empty it the caller first makes everything in it durable in the
  /// databases (sync()): a power loss may undo the cut, which leaves
  /// records the databases hold already. Shrinking needs no room.
  virtual status tail_truncate(std::uint64_t size) {
    (void)size;
    return make_error(errc::unavailable, "this store has no write-ahead tail");
  }
};

} // namespace tally
