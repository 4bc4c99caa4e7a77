#include "actors/partition_core.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "actors/log.hpp"

namespace tally {

std::uint64_t wall_clock_us() {
  using namespace std::chrono;
  return static_cast<std::uint64_t>(
    duration_cast<microseconds>(system_clock::now().time_since_epoch())
      .count());
}

fbf_time steady_fbf_now() {
  using namespace std::chrono;
  return fbf_time{
    duration_cast<fbf_duration>(steady_clock::now().time_since_epoch())};
}

fbf_config tallyd_fbf_config() {
  using namespace std::chrono;
  fbf_config c;
  c.bits_per_filter = std::uint64_t{1} << 20;
  c.hashes = 7;
  c.past_filters = 2;
  c.refresh_period = seconds{2};
  c.retry_timeout = seconds{5};
  return c;
}

namespace {

// Reads a key through the journal index on a cache miss. There is no
// checkpoint store in the node yet, so the base is always the bottom object.
class journal_source final : public entry_source {
public:
  explicit journal_source(journal& log) : log_(log) {}
  expected<entry_image> fetch(const object_key& key, crdt_type type) override {
    auto effects = log_.read_committed(key);
    if (!effects)
      return effects.err();
    for (const auto& e : *effects)
      if (e.type != type)
        return make_error(errc::wrong_type,
                          "key " + key.bucket + "/" + key.key + " holds a "
                            + std::string{to_string(e.type)} + ", not a "
                            + std::string{to_string(type)});
    return entry_image{std::nullopt, std::move(*effects)};
  }

private:
  journal& log_;
};

} // namespace

expected<std::unique_ptr<partition_core>>
partition_core::open(partition_options opts) {
  std::error_code ec;
  std::filesystem::create_directories(opts.path, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create partition directory "
                                        + opts.path + ": " + ec.message());
  std::unique_ptr<partition_core> self{new partition_core(std::move(opts))};
  auto& o = self->opts_;
  journal_options jo;
  jo.path = o.path;
  jo.partition_id = o.index;
  jo.mode = o.mode;
  jo.collect_effects = false; // keys load on demand through the index
  auto opened = journal::open(jo);
  if (!opened)
    return opened.err();
  self->log_ = std::move(opened->log);
  auto& rec = opened->recovery;
  auto cache = object_cache::make(o.cache);
  if (!cache)
    return cache.err();
  self->cache_.emplace(std::move(*cache));
  if (!rec.last_bloom_timestamp.empty()) {
    auto b = bloom_clock::decode(rec.last_bloom_timestamp, o.bloom_cells,
                                 o.bloom_hashes);
    if (!b)
      return b.err();
    self->bloom_.emplace(std::move(*b));
  } else {
    auto b = bloom_clock::make(o.bloom_cells, o.bloom_hashes);
    if (!b)
      return b.err();
    self->bloom_.emplace(std::move(*b));
  }
  // The clock restarts above every commit ever journaled, even if the
  // physical clock went backwards across the restart.
  self->clock_ = std::max(o.now_us(), rec.max_commit_time.get(local_dc));
  self->commits_ = rec.records; // only a distinct event counter for ticks
  // Exactly-once across restarts: every op id of a committed transaction
  // still in the log is remembered again (DESIGN.md, "Exactly-once").
  for (const auto& r : rec.op_ids) {
    auto f = self->fbf_for(r.bucket);
    if (!f)
      return f.err();
    (*f)->insert(r.op.hash());
  }
  for (auto& u : rec.undecided) {
    if (!u.prepare) {
      // Never prepared: its coordinator died before phase one completed, so
      // no client was told it committed. Abort it.
      self->staged_.push_back(abort_record{u.tx});
      self->staged_refs_.push_back({u.tx, 0});
      continue;
    }
    prepared_tx p;
    p.prepare_time = u.prepare->prepare_time;
    for (auto& [pos, upd] : u.updates) {
      p.positions.push_back(pos);
      if (upd.op)
        self->in_flight_.insert({upd.key.bucket, *upd.op});
      p.updates.push_back(
        tx_update{std::move(upd.key), upd.type, std::move(upd.effect), upd.op});
    }
    self->prepare_times_.insert(p.prepare_time);
    self->undecided_.push_back({u.tx, p.prepare_time});
    self->prepared_.emplace(u.tx, std::move(p));
  }
  return self;
}

std::uint64_t partition_core::tick(std::uint64_t at_least) {
  clock_ = std::max({clock_ + 1, opts_.now_us(), at_least});
  return clock_;
}

std::uint64_t partition_core::safe_time() {
  clock_ = std::max(clock_, opts_.now_us());
  if (prepare_times_.empty())
    return clock_;
  return std::min(clock_, *prepare_times_.begin() - 1);
}

expected<crdt_value>
partition_core::read(const object_key& key, crdt_type type,
                     const vector_clock& snapshot,
                     const std::vector<crdt_effect>& own) {
  journal_source src{*log_};
  return cache_->read_or_load(key, type, snapshot, own, src);
}

expected<forgetful_bloom_filter*>
partition_core::fbf_for(const std::string& bucket) {
  auto i = fbfs_.find(bucket);
  if (i == fbfs_.end()) {
    auto cfg = opts_.fbf;
    cfg.start = opts_.now_fbf();
    auto f = forgetful_bloom_filter::make(cfg);
    if (!f)
      return f.err();
    i = fbfs_.emplace(bucket, std::move(*f)).first;
  }
  // A clock that went backwards (only possible in tests) is ignored: the
  // filter keeps its later time.
  auto now = opts_.now_fbf();
  if (now >= i->second.clock()) {
    auto st = i->second.advance(now);
    (void)st;
  }
  return &i->second;
}

expected<bool> partition_core::is_duplicate(const std::string& bucket,
                                            const op_id& id) {
  if (in_flight_.count({bucket, id}) != 0)
    return true;
  auto f = fbf_for(bucket);
  if (!f || !(*f)->contains(id.hash()))
    return false; // the fast negative path: never seen in the window
  // DESIGN.md's rule for probabilistic structures: a positive is confirmed
  // exactly. Ids enter the FBF only when their commit is durable, and the
  // commit wrote them to `opids` in the same LMDB transaction.
  auto committed = log_->find_committed_op(id);
  if (!committed)
    return committed.err();
  if (*committed) {
    ++fbf_confirmed_;
    return true;
  }
  ++fbf_false_positives_;
  tally::log(log_level::debug, "partition ", opts_.index,
             ": FBF false positive for op id ", id, " in bucket ", bucket,
             " refuted by the journal, applied (", fbf_false_positives_,
             " so far)");
  return false;
}

void partition_core::release_in_flight(const prepared_tx& p) {
  for (const auto& u : p.updates)
    if (u.op)
      in_flight_.erase({u.key.bucket, *u.op});
}

expected<prepare_outcome>
partition_core::stage_prepare(const tx_id& tx, std::vector<tx_update> updates,
                              std::uint64_t snapshot_time, bool two_phase) {
  if (failed_)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + " stopped after a failed write: "
                        + failed_->to_string());
  if (prepared_.count(tx) != 0)
    return make_error(errc::invalid_argument,
                      "transaction already staged at this partition");
  prepare_outcome out;
  prepared_tx p;
  // Checked before anything is recorded, so a failed exact check leaves no
  // trace (the client retries the same ids). `mine`: ids earlier in this
  // transaction count as in flight.
  std::set<std::pair<std::string, op_id>> mine;
  for (auto& u : updates) {
    if (u.op) {
      std::pair<std::string, op_id> entry{u.key.bucket, *u.op};
      bool dup = mine.count(entry) != 0;
      if (!dup) {
        auto d = is_duplicate(u.key.bucket, *u.op);
        if (!d)
          return make_error(d.err().code(),
                            "partition " + std::to_string(opts_.index)
                              + ": duplicate check of op id failed: "
                              + d.err().message());
        dup = *d;
      }
      if (dup) {
        ++out.dismissed;
        continue;
      }
      mine.insert(std::move(entry));
    }
    p.updates.push_back(std::move(u));
  }
  dismissed_ += out.dismissed;
  in_flight_.insert(mine.begin(), mine.end());
  p.prepare_time = tick(snapshot_time + 1);
  out.prepare_time = p.prepare_time;
  for (std::size_t i = 0; i < p.updates.size(); ++i) {
    const auto& u = p.updates[i];
    staged_.push_back(update_record{tx, u.key, u.type, u.effect, u.op});
    staged_refs_.push_back({tx, i});
  }
  p.positions.assign(p.updates.size(), 0);
  if (two_phase) {
    staged_.push_back(prepare_record{tx, p.prepare_time});
    staged_refs_.push_back({tx, 0});
  }
  prepare_times_.insert(p.prepare_time);
  prepared_.emplace(tx, std::move(p));
  return out;
}

status partition_core::stage_commit(const tx_id& tx,
                                    std::uint64_t commit_time) {
  if (failed_)
    return make_error(errc::unavailable, "partition stopped after a failed "
                                         "write: " + failed_->to_string());
  auto i = prepared_.find(tx);
  if (i == prepared_.end())
    return make_error(errc::not_found, "commit of a transaction this "
                                       "partition has not prepared");
  if (commit_time < i->second.prepare_time)
    return make_error(errc::invalid_argument,
                      "commit time below the prepare time");
  i->second.commit_time = commit_time;
  clock_ = std::max(clock_, commit_time);
  bloom_->tick(bloom_event(opts_.index, ++commits_));
  commit_record c;
  c.tx = tx;
  c.commit_time = vector_clock{{local_dc, commit_time}};
  c.bloom_timestamp = bloom_->encode();
  c.wall_time_us = wall_clock_us();
  staged_.push_back(std::move(c));
  staged_refs_.push_back({tx, 0});
  return {};
}

status partition_core::stage_abort(const tx_id& tx) {
  auto i = prepared_.find(tx);
  if (i == prepared_.end())
    return {};
  release_in_flight(i->second);
  prepare_times_.erase(prepare_times_.find(i->second.prepare_time));
  prepared_.erase(i);
  if (failed_)
    return {};
  staged_.push_back(abort_record{tx});
  staged_refs_.push_back({tx, 0});
  return {};
}

status partition_core::flush() {
  if (staged_.empty())
    return {};
  if (failed_)
    return *failed_;
  auto range = log_->append(staged_);
  status synced;
  if (range && log_->mode() == durability::batch)
    synced = log_->sync();
  if (!range || !synced) {
    failed_ = range ? synced.err() : range.err();
    staged_.clear();
    staged_refs_.clear();
    return *failed_;
  }
  lsn at = range->first;
  for (std::size_t r = 0; r < staged_.size(); ++r, ++at) {
    const auto& ref = staged_refs_[r];
    auto& rec = staged_[r];
    if (std::holds_alternative<update_record>(rec)) {
      auto i = prepared_.find(ref.tx);
      if (i != prepared_.end())
        i->second.positions[ref.update_index] = at;
    } else if (auto* c = std::get_if<commit_record>(&rec)) {
      auto i = prepared_.find(ref.tx);
      if (i == prepared_.end())
        continue;
      auto& p = i->second;
      for (std::size_t u = 0; u < p.updates.size(); ++u) {
        committed_effect e;
        e.position = p.positions[u];
        e.tx = ref.tx;
        e.commit_time = c->commit_time;
        e.effect = p.updates[u].effect;
        e.commit_position = at;
        auto st = cache_->on_commit(p.updates[u].key, p.updates[u].type,
                                    std::move(e));
        (void)st; // on error the cache dropped the key: it reloads on a miss
        if (p.updates[u].op) {
          auto f = fbf_for(p.updates[u].key.bucket);
          if (f)
            (*f)->insert(p.updates[u].op->hash());
        }
      }
      release_in_flight(p);
      prepare_times_.erase(prepare_times_.find(p.prepare_time));
      prepared_.erase(i);
    }
  }
  staged_.clear();
  staged_refs_.clear();
  return {};
}

expected<std::optional<std::uint64_t>>
partition_core::find_commit(const tx_id& tx) {
  std::optional<std::uint64_t> found;
  auto st = log_->scan(log_->truncation_lsn(), log_->next_lsn(),
                       [&](lsn, const journal_record& r) {
                         if (auto* c = std::get_if<commit_record>(&r);
                             c && c->tx == tx) {
                           found = c->commit_time.get(local_dc);
                           return false;
                         }
                         return true;
                       });
  if (!st)
    return st.err();
  return found;
}

} // namespace tally
