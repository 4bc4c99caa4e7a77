// A fault-injecting storage_env for tests (STYLE.md, habit 4; leveldb's
// FaultInjectionTestEnv). It wraps a real lmdb_env and can
//
//   - fail the Nth write (put or delete), commit or sync from now on with a
//     chosen LMDB/errno code, translated by the same lmdb_error() as real
//     failures, so the journal sees exactly what LMDB would report;
//   - simulate a power loss with crash(): every transaction committed since
//     the last successful sync (explicit sync() or durable commit) is lost.
//
// How the power loss is simulated: at open and after every successful sync
// the environment's data file (data.mdb) is copied into memory. crash()
// closes the real environment, writes that copy back over data.mdb and
// removes lock.mdb, which is what the disk would hold had the machine died
// then: LMDB without MDB_WRITEMAP writes pages with pwrite(), so the file's
// bytes at a sync point are exactly the synced state. It does not model
// partial writes within one sync (LMDB's ordered durable commit is trusted
// for that; see docs/STORAGE.md). Meant for small test environments: each
// sync copies the whole data file.
//
// Not thread-safe; one test drives it.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "journal/lmdb_env.hpp"
#include "journal/storage_env.hpp"

namespace tally {

/// Where a fault fires.
enum class fault_point : std::uint8_t {
  write,  // storage_txn::put/del/del_dup, storage_cursor::del
  commit, // storage_txn::commit (before its sync, for durable commits)
  sync,   // storage_env::sync, and the sync part of a durable commit
};

struct fault_spec {
  fault_point at = fault_point::commit;
  /// Fires on the nth operation at `at` counted from inject() (1 = next).
  std::uint64_t nth = 1;
  /// The LMDB or errno code reported, e.g. EIO, ENOSPC, MDB_MAP_FULL.
  int code = EIO;
  /// For commits only: true when the failing commit did in fact reach the
  /// file (LMDB wrote it, then reported an error), false when nothing of it
  /// remains. Either way the caller cannot tell which.
  bool applied = false;
};

class fault_env final : public storage_env {
public:
  /// Opens the real environment and takes the first synced image (the files
  /// as a restart would find them now). Errors: those of lmdb_env::open;
  /// errc::io_error when data.mdb cannot be read.
  static expected<std::shared_ptr<fault_env>> open(const lmdb_options& opts);

  /// Arms one fault per point; a new one at the same point replaces it. A
  /// fault fires once, then disarms.
  void inject(const fault_spec& f);
  /// Disarms every fault.
  void clear() noexcept;
  /// How many faults have fired since open.
  std::uint64_t fired() const noexcept { return fired_; }
  /// How many operations at `p` were attempted since open (a durable
  /// commit counts as one commit and one sync).
  std::uint64_t count(fault_point p) const noexcept {
    return counts_[static_cast<int>(p)];
  }

  /// Simulates a power loss (see the file comment). Afterwards every call
  /// returns errc::unavailable: drop the objects using this environment and
  /// open the directory again. Errors: errc::io_error when the files cannot
  /// be rewritten.
  status crash();
  bool crashed() const noexcept { return !inner_; }

  expected<std::unique_ptr<storage_txn>> begin(bool write) override;
  status sync() override;
  expected<env_stats> stats() override;
  const std::string& path() const noexcept override { return path_; }

  /// The write-ahead tail: an append counts as a write, a tail sync as a
  /// sync (faults fire there as for the databases). crash() puts back the
  /// tail file as its last successful tail_sync() left it; a reset is not
  /// taken as synced, so a crash after one may bring old entries back (the
  /// journal skips them: docs/STORAGE.md). The same for a cut.
  status tail_append(std::string_view bytes) override;
  status tail_sync() override;
  expected<std::string> tail_read() override;
  status tail_truncate(std::uint64_t size) override;

  // Used by the wrapped transactions and cursors.
  /// The injected error if the next operation at `p` must fail, else ok.
  status tick(fault_point p);
  /// Copies data.mdb as the new synced image.
  status snapshot();
  /// Whether the commit fault that fired last was `applied` (fault_spec).
  bool last_commit_fault_applied() const noexcept { return last_applied_; }

private:
  struct armed {
    bool on = false;
    std::uint64_t remaining = 0;
    int code = 0;
    bool applied = false;
  };

  explicit fault_env(std::unique_ptr<lmdb_env> inner)
      : inner_(std::move(inner)), path_(inner_->path()) {}

  status unavailable() const;

  std::unique_ptr<lmdb_env> inner_;
  std::string path_;
  std::string synced_image_;
  std::string synced_tail_; // tail.log at the last tail sync (or open)
  armed armed_[3];
  std::uint64_t counts_[3] = {};
  std::uint64_t fired_ = 0;
  bool last_applied_ = false;
};

} // namespace tally
