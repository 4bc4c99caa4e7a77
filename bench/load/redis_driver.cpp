// The Redis driver over hiredis (driver.hpp). Built only when CMake found
// hiredis (TALLY_LOAD_HIREDIS); otherwise make_redis_driver says so.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "bench/load/driver.hpp"

#ifdef TALLY_LOAD_HIREDIS
#include <hiredis/hiredis.h>
#include <sys/time.h>
#endif

namespace tally::load {

#ifndef TALLY_LOAD_HIREDIS

bool have_redis() noexcept { return false; }

namespace {
class no_redis final : public driver {
public:
  std::string connect() override {
    return "this tally-bench was built without hiredis (install libhiredis-dev "
           "and rebuild)";
  }
  std::string send(const op&) override { return connect(); }
  std::string send_again() override { return connect(); }
  outcome receive() override { return {false, "unsupported", true}; }
  outcome transact(const op&) override { return {false, "unsupported", true}; }
  std::string read_values(const std::vector<std::uint64_t>&,
                          std::vector<std::int64_t>&) override {
    return connect();
  }
  std::string read_typed(const std::vector<std::uint64_t>&,
                         std::vector<std::vector<std::string>>&) override {
    return connect();
  }
  void close() override {}
};
} // namespace

std::unique_ptr<driver> make_redis_driver(const target&, const workload&,
                                          std::uint64_t) {
  return std::make_unique<no_redis>();
}

#else

bool have_redis() noexcept { return true; }

namespace {

using command = std::vector<std::string>;

class redis_driver final : public driver {
public:
  redis_driver(const target& t, const workload& w) : target_(t), w_(w) {}
  ~redis_driver() override { close(); }

  std::string connect() override {
    close();
    timeval tv{static_cast<time_t>(w_.timeout_ms / 1000),
               static_cast<suseconds_t>((w_.timeout_ms % 1000) * 1000)};
    ctx_ = redisConnectWithTimeout(target_.host.c_str(), target_.port, tv);
    if (!ctx_ || ctx_->err) {
      std::string why = ctx_ ? ctx_->errstr : "out of memory";
      close();
      return "cannot connect to redis at " + target_.host + ":"
             + std::to_string(target_.port) + ": " + why
             + " — is redis-server running?";
    }
    redisSetTimeout(ctx_, tv);
    return {};
  }

  std::string send(const op& o) override {
    last_.clear();
    if (o.kind == op::type::read) {
      if (o.read_keys.size() == 1) {
        last_.push_back({"GET", name(o.read_keys[0])});
      } else {
        command c{"MGET"};
        for (auto k : o.read_keys)
          c.push_back(name(k));
        last_.push_back(std::move(c));
      }
    } else if (o.update_keys.size() == 1) {
      last_.push_back({"INCRBY", name(o.update_keys[0]), std::to_string(w_.inc)});
    } else {
      last_.push_back({"MULTI"});
      for (auto k : o.update_keys)
        last_.push_back({"INCRBY", name(k), std::to_string(w_.inc)});
      last_.push_back({"EXEC"});
    }
    return send_again();
  }

  std::string send_again() override {
    for (const auto& c : last_)
      append(c);
    replies_.push_back(last_.size());
    return flush();
  }

  outcome receive() override {
    const std::size_t n = replies_.front();
    replies_.pop_front();
    return collect(n);
  }

  outcome transact(const op& o) override {
    for (auto k : o.read_keys) {
      append({"GET", name(k)});
      if (auto e = flush(); !e.empty())
        return {false, "io", true};
      outcome r = collect(1);
      if (!r.ok)
        return r;
    }
    if (o.update_keys.empty())
      return {};
    op u;
    u.kind = op::type::update;
    u.update_keys = o.update_keys;
    if (o.update_keys.size() == 1) {
      // MULTI/EXEC even for one key, as the transaction it stands for.
      last_ = {{"MULTI"},
               {"INCRBY", name(o.update_keys[0]), std::to_string(w_.inc)},
               {"EXEC"}};
      if (auto e = send_again(); !e.empty())
        return {false, "io", true};
    } else if (auto e = send(u); !e.empty()) {
      return {false, "io", true};
    }
    outcome r = receive();
    if (r.ok && o.dup) {
      if (auto e = send_again(); !e.empty())
        return {false, "io", true};
      r = receive();
    }
    return r;
  }

  std::string read_typed(const std::vector<std::uint64_t>&,
                         std::vector<std::vector<std::string>>&) override {
    return "the redis driver runs counter workloads only";
  }

  std::string read_values(const std::vector<std::uint64_t>& keys,
                          std::vector<std::int64_t>& out) override {
    out.clear();
    for (std::size_t i = 0; i < keys.size(); i += 500) {
      command c{"MGET"};
      for (std::size_t j = i; j < std::min(keys.size(), i + 500); ++j)
        c.push_back(name(keys[j]));
      append(c);
      if (auto e = flush(); !e.empty())
        return e;
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw)
        return std::string("redis: ") + ctx_->errstr;
      auto* r = static_cast<redisReply*>(raw);
      std::string err;
      if (r->type != REDIS_REPLY_ARRAY) {
        err = "redis: MGET did not return an array";
      } else {
        for (std::size_t j = 0; j < r->elements; ++j) {
          auto* e = r->element[j];
          out.push_back(e->type == REDIS_REPLY_STRING
                          ? std::strtoll(e->str, nullptr, 10)
                          : 0);
        }
      }
      freeReplyObject(r);
      if (!err.empty())
        return err;
    }
    return {};
  }

  void close() override {
    if (ctx_)
      redisFree(ctx_);
    ctx_ = nullptr;
    replies_.clear();
  }

private:
  std::string name(std::uint64_t k) const {
    return bucket_of(w_, k) + ":" + key_of(k);
  }

  void append(const command& c) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : c) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(),
                           lens.data());
  }

  std::string flush() {
    int done = 0;
    while (!done)
      if (redisBufferWrite(ctx_, &done) != REDIS_OK)
        return std::string("redis: ") + ctx_->errstr;
    return {};
  }

  /// Reads n replies; the first error (or a nil EXEC: aborted) decides.
  outcome collect(std::size_t n) {
    outcome out;
    for (std::size_t i = 0; i < n; ++i) {
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) {
        const bool timed_out = ctx_->err == REDIS_ERR_IO && errno == EAGAIN;
        return {false, timed_out ? "io:timeout" : "io:unavailable", true};
      }
      auto* r = static_cast<redisReply*>(raw);
      if (out.ok && r->type == REDIS_REPLY_ERROR) {
        out = {false, "redis-error", false};
      } else if (out.ok && i + 1 == n && n > 1 && r->type == REDIS_REPLY_NIL) {
        out = {false, "aborted", false};
      }
      freeReplyObject(r);
    }
    return out;
  }

  target target_;
  workload w_;
  redisContext* ctx_ = nullptr;
  std::vector<command> last_;
  std::deque<std::size_t> replies_;
};

} // namespace

std::unique_ptr<driver> make_redis_driver(const target& t, const workload& w,
                                          std::uint64_t) {
  return std::make_unique<redis_driver>(t, w);
}

#endif

} // namespace tally::load
