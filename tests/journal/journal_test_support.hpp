// Helpers shared by the journal and checkpoint suites: a temporary directory
// per test, record builders and a random transaction history with its
// expected committed effects (the model the property tests compare with).
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "journal/fault_env.hpp"
#include "journal/journal.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

/// A fresh directory under $TMPDIR (mkdtemp), removed with everything in it.
class temp_dir {
public:
  temp_dir() {
    auto base = std::filesystem::temp_directory_path() / "tally-storage-XXXXXX";
    std::string tmpl = base.string();
    BOOST_REQUIRE_MESSAGE(::mkdtemp(tmpl.data()) != nullptr,
                          "mkdtemp failed for " << tmpl);
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// A path inside this directory (one LMDB environment each).
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline journal_options options(const std::string& path,
                               durability mode = durability::full,
                               std::uint64_t partition = 7) {
  journal_options o;
  o.path = path;
  o.partition_id = partition;
  o.mode = mode;
  // Tests never need the 1 GiB default; a smaller map keeps them honest.
  o.map_size = std::uint64_t{64} << 20;
  return o;
}

/// "ok" or the error, for failure messages (Boost evaluates a message even
/// when the check passes, so it must not call err() on a value).
template <class T>
std::string describe(const expected<T>& e) {
  return e.has_value() ? std::string{"ok"} : e.err().to_string();
}

inline opened_journal open_ok(const journal_options& o,
                              std::shared_ptr<storage_env> env = nullptr) {
  auto r = journal::open(o, std::move(env));
  if (!r.has_value())
    BOOST_FAIL("open failed: " << r.err().to_string());
  return std::move(r).value();
}

inline object_key key(int i, const std::string& bucket = "b") {
  return object_key{bucket, "k" + std::to_string(i)};
}

inline update_record update(tx_id tx, object_key k, std::int64_t delta,
                            std::optional<op_id> op = std::nullopt) {
  update_record u;
  u.tx = tx;
  u.key = std::move(k);
  u.type = crdt_type::counter;
  u.effect = counter_effect{delta};
  u.op = op;
  return u;
}

inline commit_record commit(tx_id tx, std::uint64_t time,
                            std::uint64_t wall_us = 0, dc_id dc = 1) {
  commit_record c;
  c.tx = tx;
  c.commit_time = vector_clock{{dc, time}};
  c.bloom_timestamp = "bloom@" + std::to_string(time);
  c.wall_time_us = wall_us;
  return c;
}

inline bool same_effect(const committed_effect& a, const committed_effect& b) {
  return a.position == b.position && a.tx == b.tx
         && a.commit_time == b.commit_time && a.effect == b.effect
         && a.commit_position == b.commit_position;
}

inline bool same_effects(const std::vector<committed_effect>& a,
                         const std::vector<committed_effect>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_effect(a[i], b[i]))
      return false;
  return true;
}

inline std::int64_t sum(const std::vector<committed_effect>& effects) {
  std::int64_t s = 0;
  for (const auto& e : effects)
    s += std::get<counter_effect>(e.effect).delta;
  return s;
}

/// A fault_env on `path` (journal/fault_env.hpp) with a small map.
inline std::shared_ptr<fault_env> open_fault_env(const std::string& path,
                                                 std::uint64_t map_size = 64u << 20) {
  auto env = fault_env::open(lmdb_options{path, map_size});
  BOOST_REQUIRE_MESSAGE(env.has_value(), describe(env));
  return *env;
}

/// The sum of the counter `key(key_index)` through the journal's index.
inline std::int64_t total(tally::journal& j, int key_index) {
  auto r = j.read_committed(key(key_index));
  BOOST_REQUIRE_MESSAGE(r.has_value(), describe(r));
  return sum(*r);
}

/// A random interleaving of transactions over `keys` keys: updates, some
/// prepares, commits with increasing commit times and some aborts. It
/// predicts the LSN of every record (appends are consecutive from
/// `next_lsn`) and so the committed effects per key in commit order.
class history {
public:
  history(seeded_rng& rng, int keys, lsn next_lsn, std::uint64_t origin = 1)
      : rng_(rng), keys_(keys), next_(next_lsn), origin_(origin) {}

  /// The next batch of `n` records, recorded in the model.
  std::vector<journal_record> batch(std::size_t n) {
    std::vector<journal_record> out;
    while (out.size() < n) {
      auto roll = rng_.uniform(0, 99);
      if (open_.empty() || roll < 25) {
        tx_id tx{origin_, ++seq_};
        open_[tx];
        add_update(tx, out);
      } else {
        auto it = std::next(open_.begin(),
                            static_cast<long>(rng_.uniform(0, open_.size() - 1)));
        auto tx = it->first;
        if (roll < 60 && !it->second.prepared) {
          add_update(tx, out);
        } else if (roll < 68 && !it->second.prepared) {
          it->second.prepared = true;
          out.push_back(prepare_record{tx, ++clock_});
          ++next_;
        } else if (roll < 92) {
          ++clock_;
          auto c = commit(tx, clock_, clock_ * 1000);
          lsn at = next_++;
          for (auto& [upos, k, delta] : it->second.updates)
            expected_[k].push_back(committed_effect{
              upos, tx, c.commit_time, crdt_effect{counter_effect{delta}}, at});
          committed_.push_back(tx);
          out.push_back(std::move(c));
          open_.erase(it);
        } else {
          out.push_back(abort_record{tx});
          ++next_;
          open_.erase(it);
        }
      }
    }
    return out;
  }

  /// Committed effects of key i as the journal must return them.
  const std::vector<committed_effect>& expected(int i) const {
    static const std::vector<committed_effect> none;
    auto it = expected_.find(key(i));
    return it == expected_.end() ? none : it->second;
  }
  const std::map<object_key, std::vector<committed_effect>>& all() const {
    return expected_;
  }
  std::size_t open_transactions() const { return open_.size(); }
  int keys() const { return keys_; }
  /// The largest prepare or commit time handed out so far.
  std::uint64_t clock() const { return clock_; }
  lsn next_lsn() const { return next_; }

private:
  struct open_tx {
    bool prepared = false;
    std::vector<std::tuple<lsn, object_key, std::int64_t>> updates;
  };

  void add_update(tx_id tx, std::vector<journal_record>& out) {
    auto k = key(static_cast<int>(rng_.uniform(0, keys_ - 1)));
    auto delta = rng_.uniform_signed(-100, 100);
    open_[tx].updates.emplace_back(next_++, k, delta);
    out.push_back(update(tx, k, delta, op_id{origin_, ++ops_}));
  }

  seeded_rng& rng_;
  int keys_;
  lsn next_;
  std::uint64_t origin_;
  std::uint64_t seq_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t ops_ = 0;
  std::map<tx_id, open_tx> open_;
  std::vector<tx_id> committed_;
  std::map<object_key, std::vector<committed_effect>> expected_;
};

} // namespace tally::test
