// The real storage_env: one LMDB environment (a directory holding data.mdb
// and lock.mdb) per partition replica, with the named databases of
// storage_env.hpp. This file is the only place that translates LMDB's int
// codes into tally errors (lmdb_error()).
//
// Flags: MDB_NOTLS (the owning actor may run its short transactions on a
// different thread each time), MDB_NOSYNC|MDB_NOMETASYNC (no sync at commit:
// the journal decides when to sync, see journal.hpp "Durability"). A durable
// commit clears both flags for that one commit, so LMDB itself orders it:
// data pages fdatasync'ed, then the meta page written through its O_DSYNC
// descriptor. LMDB keeps that descriptor open under NOSYNC precisely so the
// flags may be reset at run time (mdb.c, mdb_env_open2).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/expected.hpp"
#include "journal/storage_env.hpp"

struct MDB_env; // lmdb.h stays out of this header

namespace tally {

/// 1 GiB. LMDB reserves the map as address space only: the file grows with
/// the data (sparse), so a generous default costs nothing until used, and
/// 64 partitions x 1 GiB fits easily in a 64-bit address space. A journal
/// with periodic checkpoints stays far below it (docs/STORAGE.md).
constexpr std::uint64_t default_map_size = std::uint64_t{1} << 30;
/// tail.log grows by this many zero bytes at a time, ahead of its entries
/// (docs/STORAGE.md, "The write-ahead tail": a sync then writes no inode).
constexpr std::uint64_t tail_prealloc_bytes = std::uint64_t{256} << 10;

struct lmdb_options {
  std::string path;                         // directory; created if missing
  std::uint64_t map_size = default_map_size; // bytes; raise it when full
  /// The data file must be there already (the node's manifest lists it):
  /// a missing or empty one is errc::corrupt instead of a new, empty store.
  bool must_exist = false;
};

/// Translates an LMDB (or errno) code `rc` from `operation` on the
/// environment at `path` (map size `map_size`) into a tally error:
///   MDB_MAP_FULL, MDB_TXN_FULL, ENOSPC, EFBIG (a file size limit),
///   EDQUOT                                      -> errc::storage_full
///   MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID,
///   MDB_VERSION_MISMATCH                        -> errc::corrupt
///   MDB_READERS_FULL, MDB_DBS_FULL, MDB_MAP_RESIZED, EAGAIN
///                                               -> errc::unavailable
///   MDB_KEYEXIST, MDB_BAD_VALSIZE, MDB_BAD_DBI, MDB_BAD_TXN, MDB_BAD_RSLOT,
///   MDB_INCOMPATIBLE, EINVAL                    -> errc::invalid_argument
///   MDB_NOTFOUND                                -> errc::not_found
///   anything else (EIO, EACCES, ENOMEM, ...)    -> errc::io_error
/// The message names the operation, the path and LMDB's own text; for a
/// full map it says which setting to raise.
error lmdb_error(int rc, std::string_view operation, const std::string& path,
                 std::uint64_t map_size);

class lmdb_env final : public storage_env {
public:
  /// Opens (creating if needed) the environment at `opts.path` and its
  /// named databases. The data file is checked before it is mapped
  /// (check_lmdb_file: missing with must_exist, empty, truncated, damaged
  /// headers), and LMDB's assertions on damaged pages stop the process with
  /// a message naming the file (storage_faults.hpp). Errors: errc::io_error
  /// when the directory cannot be created or opened; errc::corrupt when the
  /// files are not a whole LMDB environment; errc::unavailable when another
  /// process holds it in an incompatible way. Not twice in one process: LMDB's locks are per
  /// process, so open each directory once and share the object.
  static expected<std::unique_ptr<lmdb_env>> open(const lmdb_options& opts);

  ~lmdb_env() override;
  lmdb_env(const lmdb_env&) = delete;
  lmdb_env& operator=(const lmdb_env&) = delete;

  expected<std::unique_ptr<storage_txn>> begin(bool write) override;
  status sync() override;
  /// mdb_env_sync is an fdatasync of the data file: any thread, any time.
  bool sync_from_any_thread() const noexcept override { return true; }
  expected<env_stats> stats() override;
  const std::string& path() const noexcept override { return path_; }
  /// mdb_env_copy2 with compaction: a consistent copy while writes go on.
  status copy_to(const std::string& dir) override;

  /// The write-ahead tail is `tail.log` in the directory, opened with
  /// O_APPEND when it is first read (if it exists) or appended to;
  /// tail_sync() is an fdatasync of it, from any thread.
  status tail_append(std::string_view bytes) override;
  status tail_sync() override;
  expected<std::string> tail_read() override;
  status tail_truncate(std::uint64_t size) override;

  std::uint64_t map_size() const noexcept { return map_size_; }

  /// lmdb_error() for this environment.
  error make_lmdb_error(int rc, std::string_view operation) const {
    return lmdb_error(rc, operation, path_, map_size_);
  }

private:
  lmdb_env(MDB_env* env, std::string path, std::uint64_t map_size)
      : env_(env), path_(std::move(path)), map_size_(map_size) {}

  expected<bool> open_tail(bool create);
  // Grows tail.log with zeros to hold `end` bytes, a chunk at a time; false
  // when there is no room for a chunk (the append then extends the file
  // by exactly what it writes, as without the zeros).
  bool preallocate_tail(int fd, std::uint64_t end);

  MDB_env* env_;
  const void* map_addr_ = nullptr; // registered with storage_faults
  unsigned dbis_[store_db_count] = {};
  std::string path_;
  std::uint64_t map_size_;
  // tail.log: -1 until the first append. Read by tail_sync() on a sync
  // thread, hence atomic; never closed before the destructor.
  std::atomic<int> tail_fd_{-1};
  // Where the next entry goes (the end of the appended entries), where a
  // failed write is cut; and the file's length: tail_size_ plus the zeros
  // written ahead (tail_prealloc_bytes at a time), so that a sync after an
  // append rewrites allocated blocks and the file's size stays as it was.
  std::uint64_t tail_size_ = 0;
  std::uint64_t tail_file_size_ = 0;
};

} // namespace tally
