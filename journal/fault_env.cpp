#include "journal/fault_env.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace tally {

namespace {

const char* to_string(fault_point p) noexcept {
  switch (p) {
    case fault_point::write: return "write";
    case fault_point::commit: return "commit";
    case fault_point::sync: return "sync";
  }
  return "unknown";
}

expected<std::string> read_file(const std::string& file) {
  std::ifstream in{file, std::ios::binary};
  if (!in)
    return make_error(errc::io_error, "fault_env: cannot read " + file);
  return std::string{std::istreambuf_iterator<char>{in},
                     std::istreambuf_iterator<char>{}};
}

class fault_cursor final : public storage_cursor {
public:
  fault_cursor(storage_cursor* inner, fault_env& env, bool& failed)
      : inner_(inner), env_(env), failed_(failed) {}
  expected<bool> first() override { return inner_->first(); }
  expected<bool> last() override { return inner_->last(); }
  expected<bool> seek(std::string_view key) override { return inner_->seek(key); }
  expected<bool> next() override { return inner_->next(); }
  expected<bool> prev() override { return inner_->prev(); }
  expected<bool> next_key() override { return inner_->next_key(); }
  expected<bool> seek_dup(std::string_view key, std::string_view value) override {
    return inner_->seek_dup(key, value);
  }
  expected<bool> next_dup() override { return inner_->next_dup(); }
  std::string_view key() const override { return inner_->key(); }
  std::string_view value() const override { return inner_->value(); }
  status del() override {
    if (auto st = env_.tick(fault_point::write); !st) {
      failed_ = true;
      return st;
    }
    return inner_->del();
  }

private:
  storage_cursor* inner_;
  fault_env& env_;
  bool& failed_;
};

class fault_txn final : public storage_txn {
public:
  fault_txn(std::unique_ptr<storage_txn> inner, fault_env& env)
      : inner_(std::move(inner)), env_(env) {}

  bool writable() const noexcept override { return inner_->writable(); }

  expected<std::optional<std::string_view>> get(store_db db,
                                                std::string_view key) override {
    return inner_->get(db, key);
  }
  status put(store_db db, std::string_view key, std::string_view value,
             put_mode mode) override {
    if (auto st = before_write(); !st)
      return st;
    return inner_->put(db, key, value, mode);
  }
  expected<bool> del(store_db db, std::string_view key) override {
    if (auto st = before_write(); !st)
      return st.err();
    return inner_->del(db, key);
  }
  expected<bool> del_dup(store_db db, std::string_view key,
                         std::string_view value) override {
    if (auto st = before_write(); !st)
      return st.err();
    return inner_->del_dup(db, key, value);
  }
  expected<storage_cursor*> cursor(store_db db) override {
    auto c = inner_->cursor(db);
    if (!c)
      return c.err();
    cursors_.push_back(std::make_unique<fault_cursor>(*c, env_, failed_));
    return cursors_.back().get();
  }
  expected<db_stats> stats(store_db db) override { return inner_->stats(db); }

  status commit(commit_mode mode) override {
    cursors_.clear();
    if (!inner_->writable())
      return inner_->commit(mode);
    if (failed_) {
      // LMDB refuses to commit a transaction after a failed write.
      inner_->abort();
      return bad_txn();
    }
    if (auto st = env_.tick(fault_point::commit); !st) {
      if (env_.last_commit_fault_applied())
        (void)inner_->commit(commit_mode::lazy);
      else
        inner_->abort();
      return st;
    }
    if (mode == commit_mode::lazy)
      return inner_->commit(commit_mode::lazy);
    if (auto st = env_.tick(fault_point::sync); !st) {
      // The data reached the page cache; whether it reached the disk is
      // unknown: the synced image is not updated, so crash() drops it.
      (void)inner_->commit(commit_mode::lazy);
      return st;
    }
    if (auto st = inner_->commit(commit_mode::durable); !st)
      return st;
    return env_.snapshot();
  }

  void abort() noexcept override {
    cursors_.clear();
    inner_->abort();
  }

private:
  status before_write() {
    if (failed_)
      return bad_txn();
    if (auto st = env_.tick(fault_point::write); !st) {
      failed_ = true;
      return st;
    }
    return {};
  }
  status bad_txn() {
    return make_error(errc::invalid_argument,
                      "fault_env: transaction used after a failed write "
                      "(LMDB: MDB_BAD_TXN)");
  }

  std::unique_ptr<storage_txn> inner_;
  fault_env& env_;
  bool failed_ = false;
  std::vector<std::unique_ptr<fault_cursor>> cursors_;
};

} // namespace

expected<std::shared_ptr<fault_env>> fault_env::open(const lmdb_options& opts) {
  auto inner = lmdb_env::open(opts);
  if (!inner)
    return inner.err();
  std::shared_ptr<fault_env> env{new fault_env(std::move(*inner))};
  if (auto st = env->inner_->sync(); !st)
    return st.err();
  if (auto st = env->snapshot(); !st)
    return st.err();
  auto tail = env->inner_->tail_read();
  if (!tail)
    return tail.err();
  env->synced_tail_ = std::move(*tail);
  return env;
}

void fault_env::inject(const fault_spec& f) {
  auto& a = armed_[static_cast<int>(f.at)];
  a.on = f.nth > 0;
  a.remaining = f.nth;
  a.code = f.code;
  a.applied = f.applied;
}

void fault_env::clear() noexcept {
  for (auto& a : armed_)
    a = armed{};
}

status fault_env::tick(fault_point p) {
  if (!inner_)
    return unavailable();
  ++counts_[static_cast<int>(p)];
  auto& a = armed_[static_cast<int>(p)];
  if (!a.on || --a.remaining > 0)
    return {};
  a.on = false;
  ++fired_;
  last_applied_ = a.applied;
  return inner_->make_lmdb_error(a.code, std::string{"injected "}
                                           + to_string(p) + " fault");
}

status fault_env::snapshot() {
  if (!inner_)
    return unavailable();
  auto image = read_file(path_ + "/data.mdb");
  if (!image)
    return image.err();
  synced_image_ = std::move(*image);
  return {};
}

status fault_env::crash() {
  if (!inner_)
    return unavailable();
  inner_.reset(); // closes the LMDB environment
  {
    std::ofstream out{path_ + "/data.mdb", std::ios::binary | std::ios::trunc};
    out.write(synced_image_.data(),
              static_cast<std::streamsize>(synced_image_.size()));
    if (!out)
      return make_error(errc::io_error,
                        "fault_env: cannot rewrite " + path_ + "/data.mdb");
  }
  std::error_code ec;
  std::filesystem::remove(path_ + "/lock.mdb", ec);
  std::filesystem::remove(path_ + "/tail.log", ec);
  if (!synced_tail_.empty()) {
    std::ofstream out{path_ + "/tail.log", std::ios::binary | std::ios::trunc};
    out.write(synced_tail_.data(), static_cast<std::streamsize>(synced_tail_.size()));
    if (!out)
      return make_error(errc::io_error, "fault_env: cannot rewrite " + path_ + "/tail.log");
  }
  return {};
}

status fault_env::unavailable() const {
  return make_error(errc::unavailable,
                    "fault_env at " + path_
                      + " crashed (simulated power loss); open it again");
}

expected<std::unique_ptr<storage_txn>> fault_env::begin(bool write) {
  if (!inner_)
    return unavailable().err();
  auto txn = inner_->begin(write);
  if (!txn)
    return txn.err();
  return std::unique_ptr<storage_txn>{
    std::make_unique<fault_txn>(std::move(*txn), *this)};
}

status fault_env::sync() {
  if (auto st = tick(fault_point::sync); !st)
    return st;
  if (auto st = inner_->sync(); !st)
    return st;
  return snapshot();
}

expected<env_stats> fault_env::stats() {
  if (!inner_)
    return unavailable().err();
  return inner_->stats();
}

status fault_env::tail_append(std::string_view bytes) {
  if (auto st = tick(fault_point::write); !st)
    return st;
  return inner_->tail_append(bytes);
}

status fault_env::tail_sync() {
  if (auto st = tick(fault_point::sync); !st)
    return st;
  if (auto st = inner_->tail_sync(); !st)
    return st;
  auto tail = inner_->tail_read();
  if (!tail)
    return tail.err();
  synced_tail_ = std::move(*tail);
  return {};
}

expected<std::string> fault_env::tail_read() {
  if (!inner_)
    return unavailable().err();
  return inner_->tail_read();
}

status fault_env::tail_truncate(std::uint64_t size) {
  if (!inner_)
    return unavailable();
  return inner_->tail_truncate(size);
}

} // namespace tally
