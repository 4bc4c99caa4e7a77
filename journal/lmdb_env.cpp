#include "journal/lmdb_env.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.hpp"
#include "journal/lmdb_file_check.hpp"
#include "journal/storage_faults.hpp"

namespace tally {

namespace {

// LMDB found a damaged page (storage_faults.hpp): it cannot go on, so the
// process stops, saying which data file.
void on_lmdb_assert(MDB_env* env, const char* msg) {
  const char* path = nullptr;
  if (env == nullptr || mdb_env_get_path(env, &path) != MDB_SUCCESS)
    path = nullptr;
  log(log_level::error, "storage damaged: LMDB found a damaged page in ",
      path ? path : "a data file", "/", lmdb_data_file, " (", msg ? msg : "assertion",
      "); stopping. Restore the partition's data, then start again (docs/NODE.md, "
      "\"Damaged storage\")");
  std::_Exit(storage_damaged_exit_code);
}

} // namespace

const char* to_string(store_db db) noexcept {
  switch (db) {
    case store_db::journal: return "journal";
    case store_db::index: return "index";
    case store_db::checkpoint: return "checkpoint";
    case store_db::meta: return "meta";
    case store_db::opids: return "opids";
    case store_db::decisions: return "decisions";
  }
  return "unknown";
}

error lmdb_error(int rc, std::string_view operation, const std::string& path,
                 std::uint64_t map_size) {
  std::string where = std::string{operation} + " on " + path + ": "
                      + mdb_strerror(rc);
  switch (rc) {
    case MDB_MAP_FULL:
      return make_error(errc::storage_full,
                        where + " (the LMDB map size is "
                          + std::to_string(map_size)
                          + " bytes; raise journal_options::map_size, the "
                            "partition's storage map-size setting, and reopen "
                            "the store; what is stored stays readable)");
    case ENOSPC:
      return make_error(errc::storage_full,
                        where + " (the disk is full; free space, then retry; "
                                "what is stored stays readable)");
    case EFBIG:
    case EDQUOT:
      return make_error(errc::storage_full,
                        where + " (a file size limit or disk quota is reached: raise it or "
                                "free space, then retry; what is stored stays readable)");
    case MDB_TXN_FULL:
      return make_error(errc::storage_full,
                        where + " (one transaction touches too many pages; "
                                "append smaller batches)");
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
      return make_error(errc::corrupt, where);
    case MDB_READERS_FULL:
    case MDB_DBS_FULL:
    case MDB_MAP_RESIZED:
    case EAGAIN:
      return make_error(errc::unavailable, where);
    case MDB_KEYEXIST:
    case MDB_BAD_VALSIZE:
    case MDB_BAD_DBI:
    case MDB_BAD_TXN:
    case MDB_BAD_RSLOT:
    case MDB_INCOMPATIBLE:
    case EINVAL:
      return make_error(errc::invalid_argument, where);
    case MDB_NOTFOUND:
      return make_error(errc::not_found, where);
    default:
      return make_error(errc::io_error, where);
  }
}

namespace {

MDB_val to_val(std::string_view s) noexcept {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view from_val(const MDB_val& v) noexcept {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

class lmdb_cursor final : public storage_cursor {
public:
  lmdb_cursor(MDB_cursor* c, const lmdb_env& env, store_db db)
      : cursor_(c), env_(env), db_(db) {}
  ~lmdb_cursor() override { mdb_cursor_close(cursor_); }

  expected<bool> first() override { return move(MDB_FIRST, "cursor first"); }
  expected<bool> last() override { return move(MDB_LAST, "cursor last"); }
  expected<bool> seek(std::string_view key) override {
    key_ = to_val(key);
    return move(MDB_SET_RANGE, "cursor seek");
  }
  expected<bool> next() override { return move(MDB_NEXT, "cursor next"); }
  expected<bool> prev() override { return move(MDB_PREV, "cursor prev"); }
  expected<bool> next_key() override {
    return move(MDB_NEXT_NODUP, "cursor next key");
  }
  expected<bool> seek_dup(std::string_view key,
                          std::string_view value) override {
    key_ = to_val(key);
    val_ = to_val(value);
    return move(MDB_GET_BOTH_RANGE, "cursor seek duplicate");
  }
  expected<bool> next_dup() override {
    return move(MDB_NEXT_DUP, "cursor next duplicate");
  }
  std::string_view key() const override { return from_val(key_); }
  std::string_view value() const override { return from_val(val_); }
  status del() override {
    if (int rc = mdb_cursor_del(cursor_, 0); rc != MDB_SUCCESS)
      return env_.make_lmdb_error(rc, std::string{"delete from "}
                                        + to_string(db_));
    return {};
  }

private:
  expected<bool> move(MDB_cursor_op op, const char* what) {
    int rc = mdb_cursor_get(cursor_, &key_, &val_, op);
    if (rc == MDB_NOTFOUND)
      return false;
    if (rc != MDB_SUCCESS)
      return env_.make_lmdb_error(rc, std::string{what} + " in "
                                        + to_string(db_));
    return true;
  }

  MDB_cursor* cursor_;
  const lmdb_env& env_;
  store_db db_;
  MDB_val key_{0, nullptr};
  MDB_val val_{0, nullptr};
};

class lmdb_txn final : public storage_txn {
public:
  lmdb_txn(MDB_txn* txn, MDB_env* env, const unsigned* dbis,
           const lmdb_env& owner, bool write)
      : txn_(txn), env_(env), dbis_(dbis), owner_(owner), write_(write) {}
  ~lmdb_txn() override { abort(); }

  bool writable() const noexcept override { return write_; }

  expected<std::optional<std::string_view>> get(store_db db,
                                                std::string_view key) override {
    MDB_val k = to_val(key);
    MDB_val v{0, nullptr};
    int rc = mdb_get(txn_, dbi(db), &k, &v);
    if (rc == MDB_NOTFOUND)
      return std::optional<std::string_view>{};
    if (rc != MDB_SUCCESS)
      return fail(rc, "get from", db);
    return std::optional<std::string_view>{from_val(v)};
  }

  status put(store_db db, std::string_view key, std::string_view value,
             put_mode mode) override {
    MDB_val k = to_val(key);
    MDB_val v = to_val(value);
    unsigned flags = mode == put_mode::append ? MDB_APPEND : 0u;
    if (int rc = mdb_put(txn_, dbi(db), &k, &v, flags); rc != MDB_SUCCESS)
      return fail(rc, "put into", db);
    return {};
  }

  expected<bool> del(store_db db, std::string_view key) override {
    MDB_val k = to_val(key);
    int rc = mdb_del(txn_, dbi(db), &k, nullptr);
    if (rc == MDB_NOTFOUND)
      return false;
    if (rc != MDB_SUCCESS)
      return fail(rc, "delete from", db);
    return true;
  }

  expected<bool> del_dup(store_db db, std::string_view key,
                         std::string_view value) override {
    MDB_val k = to_val(key);
    MDB_val v = to_val(value);
    int rc = mdb_del(txn_, dbi(db), &k, &v);
    if (rc == MDB_NOTFOUND)
      return false;
    if (rc != MDB_SUCCESS)
      return fail(rc, "delete duplicate from", db);
    return true;
  }

  expected<storage_cursor*> cursor(store_db db) override {
    MDB_cursor* c = nullptr;
    if (int rc = mdb_cursor_open(txn_, dbi(db), &c); rc != MDB_SUCCESS)
      return fail(rc, "open a cursor on", db);
    cursors_.push_back(std::make_unique<lmdb_cursor>(c, owner_, db));
    return cursors_.back().get();
  }

  expected<db_stats> stats(store_db db) override {
    MDB_stat st{};
    if (int rc = mdb_stat(txn_, dbi(db), &st); rc != MDB_SUCCESS)
      return fail(rc, "stat", db);
    db_stats out;
    out.entries = st.ms_entries;
    out.branch_pages = st.ms_branch_pages;
    out.leaf_pages = st.ms_leaf_pages;
    out.overflow_pages = st.ms_overflow_pages;
    out.page_size = st.ms_psize;
    out.depth = st.ms_depth;
    return out;
  }

  status commit(commit_mode mode) override {
    if (!txn_)
      return owner_.make_lmdb_error(MDB_BAD_TXN, "commit of an ended transaction");
    cursors_.clear(); // LMDB: close cursors before their transaction ends
    MDB_txn* txn = txn_;
    txn_ = nullptr;
    constexpr unsigned lazy_flags = MDB_NOSYNC | MDB_NOMETASYNC;
    bool durable = write_ && mode == commit_mode::durable;
    if (durable)
      mdb_env_set_flags(env_, lazy_flags, 0);
    int rc = mdb_txn_commit(txn); // frees txn, also on failure
    if (durable)
      mdb_env_set_flags(env_, lazy_flags, 1);
    if (rc != MDB_SUCCESS)
      return owner_.make_lmdb_error(rc, durable ? "durable commit" : "commit");
    return {};
  }

  void abort() noexcept override {
    cursors_.clear();
    if (txn_) {
      mdb_txn_abort(txn_);
      txn_ = nullptr;
    }
  }

private:
  MDB_dbi dbi(store_db db) const noexcept {
    return dbis_[static_cast<int>(db)];
  }
  error fail(int rc, const char* what, store_db db) const {
    return owner_.make_lmdb_error(rc, std::string{what} + " " + to_string(db));
  }

  MDB_txn* txn_;
  MDB_env* env_;
  const unsigned* dbis_;
  const lmdb_env& owner_;
  bool write_;
  std::vector<std::unique_ptr<lmdb_cursor>> cursors_;
};

} // namespace

expected<std::unique_ptr<lmdb_env>> lmdb_env::open(const lmdb_options& opts) {
  // Before anything is created or mapped: LMDB would re-create a missing or
  // empty file, and map a truncated one (SIGBUS at the first read past it).
  if (auto checked = check_lmdb_file(opts.path, opts.must_exist); !checked)
    return checked.err();
  std::error_code ec;
  std::filesystem::create_directories(opts.path, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create the storage directory "
                                        + opts.path + ": " + ec.message());
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != MDB_SUCCESS)
    return lmdb_error(rc, "create environment", opts.path, opts.map_size);
  std::unique_ptr<lmdb_env> env{new lmdb_env(raw, opts.path, opts.map_size)};
  int rc = mdb_env_set_assert(raw, &on_lmdb_assert);
  if (rc == MDB_SUCCESS)
    rc = mdb_env_set_maxdbs(raw, store_db_count);
  if (rc == MDB_SUCCESS)
    rc = mdb_env_set_mapsize(raw, opts.map_size);
  if (rc == MDB_SUCCESS)
    rc = mdb_env_open(raw, opts.path.c_str(),
                      MDB_NOTLS | MDB_NOSYNC | MDB_NOMETASYNC, 0644);
  if (rc != MDB_SUCCESS)
    return env->make_lmdb_error(rc, "open environment");
  MDB_envinfo info{};
  if (mdb_env_info(raw, &info) == MDB_SUCCESS)
    env->map_size_ = info.me_mapsize; // an existing file may hold a larger map
  auto [addr, len] = find_file_mapping(
    (std::filesystem::path{opts.path} / lmdb_data_file).string());
  env->map_addr_ = addr;
  register_storage_mapping(addr, len, opts.path);
  MDB_txn* txn = nullptr;
  if (rc = mdb_txn_begin(raw, nullptr, 0, &txn); rc != MDB_SUCCESS)
    return env->make_lmdb_error(rc, "begin the set-up transaction");
  for (int i = 0; i < store_db_count; ++i) {
    auto db = static_cast<store_db>(i);
    unsigned flags = MDB_CREATE;
    if (db == store_db::index)
      flags |= MDB_DUPSORT | MDB_DUPFIXED; // fixed 16-byte values
    rc = mdb_dbi_open(txn, to_string(db), flags, &env->dbis_[i]);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      return env->make_lmdb_error(rc, std::string{"open database "}
                                        + to_string(db));
    }
  }
  if (rc = mdb_txn_commit(txn); rc != MDB_SUCCESS)
    return env->make_lmdb_error(rc, "commit the set-up transaction");
  return env;
}

lmdb_env::~lmdb_env() {
  if (int fd = tail_fd_.load(); fd >= 0)
    ::close(fd);
  forget_storage_mapping(map_addr_);
  mdb_env_close(env_);
}

expected<std::unique_ptr<storage_txn>> lmdb_env::begin(bool write) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_, nullptr, write ? 0u : MDB_RDONLY, &txn);
  if (rc != MDB_SUCCESS)
    return make_lmdb_error(rc, write ? "begin a write transaction"
                                     : "begin a read transaction");
  return std::unique_ptr<storage_txn>{
    std::make_unique<lmdb_txn>(txn, env_, dbis_, *this, write)};
}

status lmdb_env::sync() {
  if (int rc = mdb_env_sync(env_, 1); rc != MDB_SUCCESS)
    return make_lmdb_error(rc, "sync");
  return {};
}

expected<env_stats> lmdb_env::stats() {
  MDB_envinfo info{};
  MDB_stat st{};
  if (int rc = mdb_env_info(env_, &info); rc != MDB_SUCCESS)
    return make_lmdb_error(rc, "environment info");
  if (int rc = mdb_env_stat(env_, &st); rc != MDB_SUCCESS)
    return make_lmdb_error(rc, "environment stat");
  env_stats out;
  out.map_size = info.me_mapsize;
  out.page_size = st.ms_psize;
  out.used_bytes = (static_cast<std::uint64_t>(info.me_last_pgno) + 1) * st.ms_psize;
  return out;
}

status lmdb_env::copy_to(const std::string& dir) {
  if (int rc = mdb_env_copy2(env_, dir.c_str(), MDB_CP_COMPACT); rc != 0)
    return make_lmdb_error(rc, "copy to " + dir);
  return {};
}

// ---- the write-ahead tail (docs/STORAGE.md, "The write-ahead tail") ----

namespace {

std::string tail_path(const std::string& dir) { return dir + "/tail.log"; }

} // namespace

// Opens tail.log (creating it with `create`); false when it does not
// exist and `create` is off. Called by the owner only: a sync thread reads
// tail_fd_ only after an append, when it is open.
expected<bool> lmdb_env::open_tail(bool create) {
  if (tail_fd_.load() >= 0)
    return true;
  int fd = ::open(tail_path(path_).c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd < 0) {
    if (errno == ENOENT && !create)
      return false;
    return make_lmdb_error(errno, "open the write-ahead tail " + tail_path(path_));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return make_lmdb_error(e, "stat the write-ahead tail " + tail_path(path_));
  }
  // Until the journal has read the file and cut it to its entries
  // (tail_truncate), appends go after all of it, zeros ahead included.
  tail_size_ = static_cast<std::uint64_t>(st.st_size);
  tail_file_size_ = tail_size_;
  tail_fd_.store(fd);
  return true;
}

// Zeros written ahead of the entries (docs/STORAGE.md, "The write-ahead
// tail"): an fdatasync of a write into blocks the file already has, below
// its size, flushes the data alone; one that grows the file also writes
// the inode (the new size). Measured on this machine's ext4: 44 instead of
// 75 us of CPU per small write and sync, 4,100 instead of 3,300 a second
// (docs/STORAGE.md). Real zeros, not fallocate(2): blocks allocated
// unwritten need their extents converted at the first write, which the
// sync flushes again.
bool lmdb_env::preallocate_tail(int fd, std::uint64_t end) {
  if (end <= tail_file_size_)
    return true;
  const std::uint64_t target = (end + tail_prealloc_bytes - 1) / tail_prealloc_bytes
                               * tail_prealloc_bytes;
  static const std::string zeros(64 * 1024, '\0');
  std::uint64_t at = tail_file_size_;
  while (at < target) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), target - at));
    ssize_t w = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      // No room for the chunk: give back what it took.
      (void)::ftruncate(fd, static_cast<off_t>(tail_file_size_));
      return false;
    }
    at += static_cast<std::uint64_t>(w);
  }
  tail_file_size_ = target;
  return true;
}

status lmdb_env::tail_append(std::string_view bytes) {
  if (auto opened = open_tail(true); !opened)
    return opened.err();
  const int fd = tail_fd_.load();
  (void)preallocate_tail(fd, tail_size_ + bytes.size());
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                         static_cast<off_t>(tail_size_ + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : ENOSPC;
      // Cut what got written (and the zeros ahead), so the file ends on a
      // whole entry again.
      if ((done > 0 || tail_file_size_ > tail_size_)
          && ::ftruncate(fd, static_cast<off_t>(tail_size_)) != 0)
        return make_lmdb_error(errno, "cut a failed append to the write-ahead tail");
      tail_file_size_ = tail_size_;
      return make_lmdb_error(e, "append to the write-ahead tail");
    }
    done += static_cast<std::size_t>(n);
  }
  tail_size_ += bytes.size();
  tail_file_size_ = std::max(tail_file_size_, tail_size_);
  return {};
}

status lmdb_env::tail_sync() {
  int fd = tail_fd_.load();
  if (fd < 0)
    return {}; // no tail file: nothing to sync
  if (::fdatasync(fd) != 0)
    return make_lmdb_error(errno, "sync the write-ahead tail");
  return {};
}

expected<std::string> lmdb_env::tail_read() {
  auto opened = open_tail(false);
  if (!opened)
    return opened.err();
  if (!*opened)
    return std::string{};
  const int fd = tail_fd_.load();
  std::string out(tail_file_size_, '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_lmdb_error(errno, "read the write-ahead tail");
    if (n == 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

status lmdb_env::tail_truncate(std::uint64_t size) {
  int fd = tail_fd_.load();
  if (fd < 0) {
    if (size == 0 && ::truncate(tail_path(path_).c_str(), 0) != 0 && errno != ENOENT)
      return make_lmdb_error(errno, "empty the write-ahead tail");
    return {};
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0)
    return make_lmdb_error(errno, "cut the write-ahead tail");
  tail_size_ = size;
  tail_file_size_ = size;
  return {};
}

} // namespace tally
