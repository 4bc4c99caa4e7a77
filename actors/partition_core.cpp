#include "actors/partition_core.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "common/log.hpp"
#include "crdt/map_op_shape.hpp"
#include "protocol/request_limits.hpp"

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
  return tallyd_fbf_config(seconds{2}, 2, seconds{5}, 1e-3);
}

fbf_config tallyd_fbf_config(fbf_duration refresh, std::size_t past_filters,
                             fbf_duration retry_timeout, double target_fpp) {
  using namespace std::chrono;
  fbf_config c;
  c.bits_per_filter = std::uint64_t{1} << 20;
  c.hashes = 7;
  c.past_filters = past_filters;
  c.refresh_period = refresh;
  c.retry_timeout = retry_timeout;
  c.adaptive = target_fpp > 0.0;
  if (!c.adaptive)
    return c;
  // Algorithm 3 (paper Sec. III-E) with the shared-period model (Eq. 3
  // corrected, docs/FBF.md "The model"). Bounds relative to the settings:
  // the FBF's longest id lifetime, (N_max + 2) * max(t_max, R), is how long
  // checkpoints keep commits with op ids (fbf_max_id_lifetime), so the
  // bounds stay close to the configured window: defaults t in [1 s, 4 s],
  // N in [2, 6] (at most 8 filters of 128 KiB = 1 MiB per bucket), lifetime
  // 40 s.
  c.target_fpp = target_fpp;
  const fbf_duration one_ms{1};
  c.refresh_step = std::max(one_ms, refresh / 2);
  c.min_refresh_period = std::max(one_ms, refresh / 2);
  c.max_refresh_period = refresh * 2;
  c.adapt_interval = std::clamp<fbf_duration>(refresh / 2, one_ms, seconds{1});
  c.min_past_filters = past_filters;
  c.max_past_filters = std::min(past_filters * 3, fbf_past_filters_limit);
  return c;
}

namespace {

// The cache's miss path (seed 004, 2.3 and 2.5): the key's checkpoint entry
// as the base plus its committed effects after it from the journal index
// (checkpoint_store::load), so a key whose prefix was folded and truncated
// still reads exactly. Every journaled effect carries the type its update
// was written as, and a checkpoint entry the type it was folded as; a
// mismatch with the type asked for is errc::wrong_type, whether the history
// is folded, journaled or both.
class partition_source final : public entry_source {
public:
  explicit partition_source(checkpoint_store& store) : store_(store) {}
  expected<entry_image> fetch(const object_key& key, crdt_type type) override {
    auto image = store_.load(key);
    if (!image)
      return image.err();
    if (image->base && image->base->object.type() != type)
      return mismatch(key, image->base->object.type(), type);
    for (const auto& e : image->effects)
      if (e.type != type)
        return mismatch(key, e.type, type);
    return image;
  }

private:
  static error mismatch(const object_key& key, crdt_type held,
                        crdt_type asked) {
    return make_error(errc::wrong_type,
                      "key " + key.bucket + "/" + key.key + " holds a "
                        + std::string{to_string(held)} + ", not a "
                        + std::string{to_string(asked)});
  }

  checkpoint_store& store_;
};

// The door's default bound is the journal's: a key the door lets through is
// one the journal can index.
static_assert(request_limits{}.max_object_key_bytes == max_object_key_bytes);

std::uint64_t sub_floor(std::uint64_t a, std::uint64_t b) noexcept {
  return a > b ? a - b : 0;
}

} // namespace

expected<std::unique_ptr<partition_core>>
partition_core::open(partition_options opts) {
  std::error_code ec;
  if (!opts.must_exist) // else a missing folder is an error, not a new partition
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
  jo.map_size = o.map_size;
  jo.must_exist = o.must_exist;
  jo.write_ahead_tail = o.write_ahead_tail;
  jo.tail_drain_records = o.tail_drain_records;
  auto opened = journal::open(jo, o.env);
  if (!opened)
    return opened.err();
  self->log_ = std::move(opened->log);
  self->store_.emplace(*self->log_);
  self->op_id_keep_us_ =
    static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
        fbf_max_id_lifetime(o.fbf))
        .count())
    + o.fbf_margin_us;
  auto& rec = opened->recovery;
  if (rec.tail_replayed > 0 || !rec.tail_stop_reason.empty())
    tally::log(log_level::info, "partition ", o.index, " (", o.path, "): took in ",
               rec.tail_replayed, " records a crash left in the write-ahead tail",
               rec.tail_stop_reason.empty() ? std::string{}
                                            : "; the rest of the tail file is not records of "
                                              "this log (a torn last write, never acknowledged, "
                                              "or an emptied file's old bytes): "
                                                + rec.tail_stop_reason);
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
  // The dependency at the journal's end (docs/REPLICATION.md, "Dependency
  // check"): its last commit, found scanning back (once, at open); with no
  // commit in the log, the recovered clock (the last commit ever, folded).
  self->deps_check_ = dependency_check{o.dependency_sink};
  bool unreadable = false;
  self->end_dep_ = self->scan_dependency(self->log_->next_lsn(), UINT64_MAX, &unreadable);
  if (!self->end_dep_ && !unreadable)
    self->end_dep_ = batch_dependency{*self->bloom_, 0, {}};
  // Exactly-once across restarts: every op id of a committed transaction
  // still in the log that the FBF could still hold (committed less than
  // op_id_keep_us ago) is remembered again (DESIGN.md, "Exactly-once").
  // Older ones are out of every window; the log may still hold them for
  // another bound (an unfolded commit). The re-inserted ids get a fresh
  // window from now, so checkpoints keep their records until it ends.
  const std::uint64_t now = o.now_us();
  const std::uint64_t oldest_kept = sub_floor(now, self->op_id_keep_us_);
  for (const auto& r : rec.op_ids) {
    if (r.wall_time_us < oldest_kept)
      continue;
    auto f = self->fbf_for(r.bucket);
    if (!f)
      return f.err();
    (*f)->insert(r.op.hash());
    self->recovered_floor_us_ =
      std::min(self->recovered_floor_us_, r.wall_time_us);
  }
  if (self->recovered_floor_us_ != UINT64_MAX)
    self->recovered_until_us_ = now + self->op_id_keep_us_;
  for (const auto& tx : rec.fenced)
    self->note_fence(tx);
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
    p.participants = u.prepare->participants;
    p.coordinator = u.prepare->coordinator;
    for (auto& [pos, upd] : u.updates) {
      p.positions.push_back(pos);
      if (upd.op)
        self->in_flight_.emplace(
          std::make_pair(upd.key.bucket, *upd.op),
          in_flight_op{u.tx, upd.key, upd.type, upd.effect});
      p.updates.push_back(
        tx_update{std::move(upd.key), upd.type, std::move(upd.effect), upd.op});
    }
    self->hold(p);
    self->undecided_.push_back({u.tx, p.prepare_time, p.participants, p.coordinator});
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

std::uint64_t partition_core::safe_time_for(const object_key& key) {
  clock_ = std::max(clock_, opts_.now_us());
  std::uint64_t out = clock_;
  auto [from, to] = prepared_keys_.equal_range(key);
  for (auto i = from; i != to; ++i)
    out = std::min(out, i->second - 1);
  return out;
}

void partition_core::hold(const prepared_tx& p) {
  prepare_times_.insert(p.prepare_time);
  for (const auto& u : p.updates)
    prepared_keys_.emplace(u.key, p.prepare_time);
}

void partition_core::unhold(const prepared_tx& p) {
  prepare_times_.erase(prepare_times_.find(p.prepare_time));
  for (const auto& u : p.updates) {
    auto [from, to] = prepared_keys_.equal_range(u.key);
    for (auto i = from; i != to; ++i)
      if (i->second == p.prepare_time) {
        prepared_keys_.erase(i);
        break;
      }
  }
}

status partition_core::check_snapshot(const vector_clock& snapshot) const {
  // The low watermark (seed 2.7.2): commits <= C are folded, so a snapshot
  // below C cannot be served exactly. Refused for every key alike, cached or
  // not, with or without a checkpoint entry.
  if (!(log_->checkpoint().time <= snapshot))
    return make_error(errc::unavailable,
                      "snapshot too old: start a new transaction (snapshot "
                        + std::to_string(snapshot.get(local_dc))
                        + " is below partition "
                        + std::to_string(opts_.index) + "'s checkpoint time "
                        + std::to_string(checkpoint_time()) + ")");
  return {};
}

expected<crdt_value>
partition_core::read(const object_key& key, crdt_type type,
                     const vector_clock& snapshot,
                     const std::vector<crdt_effect>& own) {
  if (auto st = check_snapshot(snapshot); !st)
    return st.err();
  partition_source src{*store_};
  return cache_->read_or_load(key, type, snapshot, own, src);
}

expected<crdt_object>
partition_core::read_object(const object_key& key, crdt_type type,
                            const vector_clock& snapshot,
                            const std::vector<crdt_effect>& own) {
  if (auto st = check_snapshot(snapshot); !st)
    return st.err();
  partition_source src{*store_};
  return cache_->object_or_load(key, type, snapshot, own, src);
}

expected<forgetful_bloom_filter*>
partition_core::fbf_for(const std::string& bucket) {
  auto i = fbfs_.find(bucket);
  if (i == fbfs_.end()) {
    if (opts_.max_fbfs > 0 && fbfs_.size() >= opts_.max_fbfs) {
      // Evict the least recently used bucket's filter. Its ids may still be
      // inside their window: until op_id_keep_us_ has passed, that bucket's
      // ids are checked exactly in `opids` (find_committed), which keeps
      // every committed id at least that long.
      auto victim = std::min_element(
        fbf_last_use_.begin(), fbf_last_use_.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
      fbf_evicted_until_[victim->first] = opts_.now_us() + op_id_keep_us_;
      fbfs_.erase(victim->first);
      fbf_last_use_.erase(victim);
      ++fbf_evictions_;
    }
    auto cfg = opts_.fbf;
    cfg.start = opts_.now_fbf();
    auto f = forgetful_bloom_filter::make(cfg);
    if (!f)
      return f.err();
    i = fbfs_.emplace(bucket, std::move(*f)).first;
  }
  fbf_last_use_[bucket] = ++fbf_uses_;
  // A clock that went backwards (only possible in tests) is ignored: the
  // filter keeps its later time.
  auto now = opts_.now_fbf();
  if (now >= i->second.clock()) {
    auto st = i->second.advance(now);
    (void)st;
  }
  return &i->second;
}

expected<partition_core::committed_op>
partition_core::find_committed(const std::string& bucket, const op_id& id) {
  auto f = fbf_for(bucket);
  // A bucket whose filter was evicted lately has no trustworthy negative:
  // its ids are checked exactly until every id the old filter held is out
  // of its window.
  bool exact = false;
  if (auto e = fbf_evicted_until_.find(bucket); e != fbf_evicted_until_.end()) {
    if (opts_.now_us() < e->second)
      exact = true;
    else
      fbf_evicted_until_.erase(e);
  }
  const bool positive = f && (*f)->contains(id.hash());
  if (!exact && !positive)
    return committed_op{}; // the fast negative path: never seen in the window
  // DESIGN.md's rule for probabilistic structures: a positive is confirmed
  // exactly. Ids enter the FBF only when their commit is durable, and the
  // commit wrote them to `opids` in the same LMDB transaction.
  auto committed = log_->find_committed_op_entry(id);
  if (!committed)
    return committed.err();
  if (*committed) {
    if (positive)
      ++fbf_confirmed_;
    return committed_op{true, (*committed)->digest};
  }
  if (!positive)
    return committed_op{}; // an exact check after an eviction: not committed
  ++fbf_false_positives_;
  tally::log(log_level::debug, "partition ", opts_.index,
             ": FBF false positive for op id ", id, " in bucket ", bucket,
             " refuted by the journal, applied (", fbf_false_positives_,
             " so far)");
  return committed_op{};
}

void partition_core::release_in_flight(const prepared_tx& p) {
  for (const auto& u : p.updates)
    if (u.op)
      in_flight_.erase({u.key.bucket, *u.op});
}

expected<prepare_outcome>
partition_core::stage_prepare(const tx_id& tx, std::vector<tx_update> updates,
                              std::uint64_t snapshot_time, bool two_phase,
                              std::vector<std::uint32_t> participants,
                              std::string coordinator) {
  if (failed_)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + " stopped after a failed write: "
                        + failed_->to_string());
  if (prepared_.count(tx) != 0 || pending_.count(tx) != 0)
    return make_error(errc::invalid_argument,
                      "transaction already staged at this partition");
  if (fenced(tx))
    return make_error(errc::aborted,
                      "partition " + std::to_string(opts_.index)
                        + ": the transaction was fenced by the recovery of undecided "
                          "transactions (its coordinator was out of reach); nothing "
                          "applied, retry");
  // A key the journal cannot index would fail the whole batch at flush():
  // refused here, so it fails this transaction only (the door refuses it
  // first: protocol/request_limits.hpp).
  for (const auto& u : updates)
    if (u.key.bucket.size() + u.key.key.size() > max_object_key_bytes) {
      auto k = encode_object_key(u.key);
      return make_error(errc::invalid_argument,
                        "partition " + std::to_string(opts_.index) + ": "
                          + (k ? std::string{"object key too long"}
                               : k.err().message()));
    }
  // Checked before anything is recorded, so a failed exact check, a
  // conflict or a wait leaves no trace (the client retries the same ids).
  // `mine`: ids earlier in this transaction, by index into `updates`.
  prepare_outcome out;
  std::vector<bool> dup(updates.size(), false);
  std::map<std::pair<std::string, op_id>, std::size_t> mine;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    const auto& u = updates[i];
    if (!u.op)
      continue;
    std::pair<std::string, op_id> entry{u.key.bucket, *u.op};
    if (auto m = mine.find(entry); m != mine.end()) {
      const auto& first = updates[m->second];
      if (!same_op(first.key, first.type, first.effect, u))
        return conflicting_reuse(*u.op, u);
      dup[i] = true;
      continue;
    }
    mine.emplace(entry, i);
    if (auto f = in_flight_.find(entry); f != in_flight_.end()) {
      const auto& orig = f->second;
      if (!same_op(orig.key, orig.type, orig.effect, u))
        return conflicting_reuse(*u.op, u);
      // The original is undecided: whether this retry is a duplicate
      // depends on its outcome. Wait for it (take_ready()), unless waiting
      // could close a cycle: a two-phase transaction may hold ids at other
      // partitions, where the original may wait for it (two copies of one
      // multi-partition transaction sent at once). Wait-die with a grace
      // period, on (snapshot time, tx_id), one order for every partition:
      // the younger waits for the older as long as needed; the older waits
      // at most older_wait_us, then fails (errc::gave_way, nothing applied;
      // its coordinator retries, see commit_writes). Every cycle has an older-waits edge, so it
      // breaks within that bound. A one-step transaction holds nothing
      // elsewhere: it always waits.
      std::uint64_t die_at = UINT64_MAX;
      if (two_phase && !(age_of(orig.owner) < std::make_pair(snapshot_time, tx)))
        die_at = opts_.now_us() + opts_.older_wait_us;
      out.blocked_by = orig.owner;
      out.wait_bound_us = die_at == UINT64_MAX ? 0 : opts_.older_wait_us;
      pending_.emplace(tx, pending_prepare{std::move(updates), snapshot_time,
                                           two_phase, std::move(participants),
                                           std::move(coordinator), orig.owner, false,
                                           false, die_at});
      return out;
    }
    auto c = find_committed(u.key.bucket, *u.op);
    if (!c)
      return make_error(c.err().code(),
                        "partition " + std::to_string(opts_.index)
                          + ": duplicate check of op id failed: "
                          + c.err().message());
    if (c->committed) {
      // Entries written before digests existed cannot be compared.
      if (c->digest && *c->digest != op_digest(u.key, u.type, u.effect))
        return conflicting_reuse(*u.op, u);
      dup[i] = true;
    }
  }
  if (auto r = check_types(updates, dup); !r)
    return r.err();
  if (auto r = check_rights(updates, dup); !r)
    return r.err();
  if (auto r = check_counter_range(updates, dup); !r)
    return r.err();
  prepared_tx p;
  p.snapshot_time = snapshot_time;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    if (dup[i]) {
      ++out.dismissed;
      continue;
    }
    auto& u = updates[i];
    if (u.op)
      in_flight_.emplace(std::make_pair(u.key.bucket, *u.op),
                         in_flight_op{tx, u.key, u.type, u.effect});
    p.updates.push_back(std::move(u));
  }
  dismissed_ += out.dismissed;
  p.prepare_time = tick(snapshot_time + 1);
  out.prepare_time = p.prepare_time;
  for (std::size_t i = 0; i < p.updates.size(); ++i) {
    const auto& u = p.updates[i];
    staged_.push_back(update_record{tx, u.key, u.type, u.effect, u.op});
    staged_refs_.push_back({tx, i});
  }
  p.positions.assign(p.updates.size(), 0);
  if (two_phase) {
    std::sort(participants.begin(), participants.end());
    participants.erase(std::unique(participants.begin(), participants.end()),
                       participants.end());
    p.participants = participants;
    p.coordinator = coordinator;
    staged_.push_back(prepare_record{tx, p.prepare_time, std::move(participants),
                                     std::move(coordinator)});
    staged_refs_.push_back({tx, 0});
  }
  hold(p);
  prepared_.emplace(tx, std::move(p));
  return out;
}

status partition_core::check_types(const std::vector<tx_update>& ups,
                                   const std::vector<bool>& dup) {
  // An object has one type for ever: an update of another type than the
  // key's (committed, undecided elsewhere or earlier in this request) is
  // refused here, nothing staged, rather than left for every later read
  // to fail on. A counter update's committed type is checked by the read
  // in check_counter_range.
  auto wrong = [](const tx_update& u, crdt_type other) {
    return make_error(errc::wrong_type,
                      u.key.bucket.substr(0, 64) + "/" + u.key.key.substr(0, 64)
                        + " is a " + std::string{to_string(other)}
                        + ", not a " + std::string{to_string(u.type)}
                        + "; nothing applied");
  };
  std::map<object_key, crdt_type> seen;
  for (std::size_t i = 0; i < ups.size(); ++i) {
    const auto& u = ups[i];
    if (dup[i])
      continue;
    auto [it, fresh] = seen.emplace(u.key, u.type);
    if (!fresh) {
      if (it->second != u.type)
        return wrong(u, it->second);
      continue;
    }
    for (const auto& [tx, p] : prepared_)
      for (const auto& other : p.updates)
        if (other.key == u.key && other.type != u.type)
          return wrong(u, other.type);
    if (is_counter_effect(u.effect))
      continue;
    auto v = read(u.key, u.type, vector_clock{{local_dc, clock_}}, {});
    if (!v && v.err().code() == errc::wrong_type)
      return make_error(errc::wrong_type, v.err().message() + "; nothing applied");
  }
  return {};
}

status partition_core::check_rights(const std::vector<tx_update>& ups,
                                    const std::vector<bool>& dup) {
  // A bounded counter's decrements and transfers spend rights. The
  // coordinator checked them at the transaction's snapshot, which may not
  // show spends committed since, and two transactions on one snapshot could
  // spend the same rights: so they are checked here again, against the
  // latest committed state minus every undecided spend of the key
  // (increments not yet committed are not counted). Any subset of the
  // undecided transactions may then commit, in any order, without the
  // value going below 0.
  __extension__ typedef __int128 wide;
  std::map<std::pair<object_key, replica_id>, wide> need;
  for (std::size_t i = 0; i < ups.size(); ++i) {
    const auto* e = std::get_if<b_counter_effect>(&ups[i].effect);
    if (!dup[i] && e && e->what != b_counter_effect::kind::increment)
      need[{ups[i].key, e->replica}] += e->amount;
  }
  for (auto& [who, amount] : need) {
    const auto& [key, replica] = who;
    wide undecided = 0;
    for (const auto& [tx, p] : prepared_)
      for (const auto& u : p.updates)
        if (u.key == key)
          if (const auto* e = std::get_if<b_counter_effect>(&u.effect);
              e && e->what != b_counter_effect::kind::increment && e->replica == replica)
            undecided += e->amount;
    auto obj = read_object(key, crdt_type::bcounter, vector_clock{{local_dc, clock_}}, {});
    if (!obj)
      return obj.err();
    const wide rights = std::get<b_counter>(obj->state()).rights(replica);
    if (rights - undecided < amount)
      return make_error(
        errc::no_permissions,
        "bcounter " + key.bucket.substr(0, 64) + "/" + key.key.substr(0, 64) + ": replica "
          + std::to_string(replica) + " holds " + std::to_string(static_cast<std::int64_t>(rights))
          + " rights, " + std::to_string(static_cast<std::int64_t>(undecided))
          + " of them spent by undecided transactions; this update spends "
          + std::to_string(static_cast<std::int64_t>(amount)) + "; nothing applied");
  }
  return {};
}

status partition_core::check_counter_range(const std::vector<tx_update>& ups,
                                           const std::vector<bool>& dup) {
  // Counter overflow is refused here, at prepare time, where the partition
  // knows its latest committed value V of each key and every undecided
  // transaction's effects on it (docs/CRDT.md, "Overflow"). Concurrent
  // increments commute and any subset of the undecided transactions may
  // commit, in any commit order, each after every commit already applied
  // (commit times are above the clock at prepare). So every value a
  // snapshot can ever see is V plus a subset sum of the undecided effects,
  // which lies in [V + sum of negatives, V + sum of positives]. Admitting an
  // update only if that interval stays within int64 keeps it so for all
  // later snapshots: the key never becomes unreadable.
  __extension__ typedef __int128 wide; // no -Wpedantic warning
  struct range {
    wide up = 0;
    wide down = 0;
  };
  std::map<object_key, range> mine;
  for (std::size_t i = 0; i < ups.size(); ++i) {
    if (dup[i])
      continue;
    const auto* e = std::get_if<counter_effect>(&ups[i].effect);
    if (!e)
      continue;
    auto& r = mine[ups[i].key];
    (e->delta > 0 ? r.up : r.down) += e->delta;
  }
  for (auto& [key, r] : mine) {
    for (const auto& [tx, p] : prepared_)
      for (const auto& u : p.updates)
        if (u.key == key)
          if (const auto* e = std::get_if<counter_effect>(&u.effect))
            (e->delta > 0 ? r.up : r.down) += e->delta;
    const crdt_type type = [&] {
      for (const auto& u : ups)
        if (u.key == key)
          return u.type;
      return crdt_type::counter;
    }();
    auto v = read(key, type, vector_clock{{local_dc, clock_}}, {});
    if (!v) {
      if (v.err().code() == errc::wrong_type)
        return make_error(errc::wrong_type, v.err().message() + "; nothing applied");
      return v.err();
    }
    const auto* cur = std::get_if<std::int64_t>(&*v);
    if (!cur)
      continue;
    const wide hi = *cur + r.up, lo = *cur + r.down;
    if (hi > INT64_MAX || lo < INT64_MIN)
      return make_error(
        errc::overflow,
        "counter " + key.bucket.substr(0, 64) + "/" + key.key.substr(0, 64)
          + " would leave the 64-bit range: its value is "
          + std::to_string(*cur)
          + " and this update with the undecided ones on it could reach "
          + (hi > INT64_MAX ? "above 2^63-1" : "below -2^63")
          + "; nothing applied");
  }
  return {};
}

std::pair<std::uint64_t, tx_id>
partition_core::age_of(const tx_id& tx) const {
  auto i = prepared_.find(tx);
  // Recovered prepares have no snapshot time: the oldest.
  return {i == prepared_.end() ? 0 : i->second.snapshot_time, tx};
}

bool partition_core::same_op(const object_key& key, crdt_type type,
                             const crdt_effect& effect, const tx_update& u) {
  if (key != u.key || type != u.type)
    return false;
  // A resent map update is prepared anew, with fresh tokens: it is the same
  // operation when its shape is (the entries it updates and their nested
  // counter deltas; crdt/map_op_shape.hpp), as op_digest compares it.
  if (auto shape = map_op_shape(effect))
    return shape == map_op_shape(u.effect);
  return effect == u.effect;
}

error partition_core::conflicting_reuse(const op_id& id, const tx_update& u) {
  return make_error(errc::invalid_argument,
                    "conflicting reuse of op id <" + std::to_string(id.client) + ","
                      + std::to_string(id.seq) + ">"
                      + ": it was already used for another operation than "
                        "this one on " + u.key.bucket.substr(0, 64) + "/"
                      + u.key.key.substr(0, 64)
                      + " (a retry must resend the same key and delta, or "
                        "for a map the same entries and nested deltas; a "
                        "new operation needs a new op id)");
}

std::vector<tx_id> partition_core::take_ready() {
  std::vector<tx_id> out;
  out.swap(ready_);
  return out;
}

expected<prepare_outcome> partition_core::resume_prepare(const tx_id& tx) {
  auto i = pending_.find(tx);
  if (i == pending_.end())
    return make_error(errc::not_found, "no prepare of this transaction is "
                                       "waiting at this partition");
  auto pp = std::move(i->second);
  pending_.erase(i);
  if (pp.cancelled)
    return make_error(errc::aborted,
                      "transaction aborted while its prepare waited for "
                      "the outcome of a retried op id");
  if (pp.expired)
    return make_error(errc::gave_way,
                      "partition " + std::to_string(opts_.index)
                        + ": an op id of this transaction is in flight in a "
                          "younger undecided transaction that did not finish "
                          "in time: nothing applied, retry");
  return stage_prepare(tx, std::move(pp.updates), pp.snapshot_time,
                       pp.two_phase, std::move(pp.participants),
                       std::move(pp.coordinator));
}

std::size_t partition_core::expire_waits() {
  const std::uint64_t now = opts_.now_us();
  std::size_t n = 0;
  for (auto& [waiting, pp] : pending_)
    if (!pp.cancelled && !pp.expired && pp.die_at_us <= now) {
      pp.expired = true;
      ready_.push_back(waiting);
      ++n;
    }
  return n;
}

void partition_core::wake_waiting_for(const tx_id& tx) {
  for (const auto& [waiting, pp] : pending_)
    if (!pp.cancelled && !pp.expired && pp.blocked_by == tx)
      ready_.push_back(waiting);
}

status partition_core::stage_commit(const tx_id& tx,
                                    std::uint64_t commit_time, bool from_recovery) {
  if (failed_)
    return make_error(errc::unavailable, "partition stopped after a failed "
                                         "write: " + failed_->to_string());
  // docs/RELIABILITY.md, "The participant fence": once fenced, only a
  // commit another participant's commit record proves is taken. The
  // coordinator tells its client the outcome is unknown; recovery decides.
  if (!from_recovery && fenced(tx) && prepared_.count(tx) != 0
      && !prepared_.at(tx).commit_time)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + ": the transaction was fenced by the recovery of undecided "
                          "transactions while its coordinator was out of reach; its "
                          "outcome is unknown: retry with the same op ids");
  auto i = prepared_.find(tx);
  if (i == prepared_.end()) {
    // Recovery may have committed it here first (its decision came from
    // another participant): the coordinator's own commit, at the same time,
    // is acknowledged, not refused.
    auto d = log_->find_decision(tx);
    if (d && *d && (*d)->outcome == tx_outcome::committed && (*d)->time == commit_time)
      return {};
    // Aborted here and committed elsewhere: atomicity is broken (a split
    // decision). Never expected; said loudly, so that the chaos suite and an
    // operator see it (the asker logs it as an error).
    if (d && *d && (*d)->outcome == tx_outcome::aborted) {
      // The coordinator's commit, after recovery aborted the transaction
      // behind a fence while the coordinator was out of reach
      // (docs/RELIABILITY.md, "The participant fence"): no participant
      // took a commit, so nothing of it applies anywhere. A proven commit
      // here would be a split decision.
      if (fenced(tx) && !from_recovery)
        return make_error(errc::aborted,
                          "partition " + std::to_string(opts_.index)
                            + ": the transaction was aborted by the recovery of undecided "
                              "transactions while its coordinator was out of reach; nothing "
                              "applied, retry");
      return make_error(errc::aborted, "split decision: a commit of a transaction this "
                                       "partition aborted");
    }
    return make_error(errc::not_found, "commit of a transaction this "
                                       "partition has not prepared");
  }
  if (i->second.commit_time) {
    // Its commit is staged or journaled already and not yet applied (its
    // batch waits for a sync or for a write quorum of copies): a second
    // commit record would make every copy refuse the journal ("a second
    // commit") and replace itself again and again. The asker (a resolution
    // retrying a decision that timed out, a coordinator's resend) asks
    // again once the first commit is applied and then hears "committed".
    if (i->second.commit_time == commit_time)
      return make_error(errc::unavailable,
                        "the commit of this transaction is under way "
                        "(waiting for its sync or for a write quorum of "
                        "copies); retry");
    return make_error(errc::invalid_argument,
                      "a commit of this transaction at another time is "
                      "under way");
  }
  if (commit_time < i->second.prepare_time)
    return make_error(errc::invalid_argument,
                      "commit time below the prepare time");
  i->second.commit_time = commit_time;
  clock_ = std::max(clock_, commit_time);
  // The commit is event (i, x) of Algorithm 1 (seed 002, section 3) with
  // i, x the transaction id's origin and sequence: unique in the cluster,
  // so two primaries of this partition (an old one's unacknowledged tail,
  // the new one's commits) never tick the same event, and a restart reuses
  // no id (a counter of commits since the open did both).
  bloom_->tick(bloom_event(tx.origin, tx.seq));
  commit_record c;
  c.tx = tx;
  c.commit_time = vector_clock{{local_dc, commit_time}};
  c.bloom_timestamp = bloom_->encode();
  c.wall_time_us = opts_.now_us(); // the FBF horizon compares with it
  staged_.push_back(std::move(c));
  staged_refs_.push_back({tx, 0});
  return {};
}

void partition_core::note_fence(const tx_id& tx) {
  const std::uint64_t now = opts_.now_us();
  fenced_[tx] = now;
  if (fenced_.size() % 64 == 0) // now and then: drop the fences kept long enough
    for (auto i = fenced_.begin(); i != fenced_.end();)
      i = now - std::min(now, i->second) > fence_keep_us ? fenced_.erase(i) : std::next(i);
}

expected<fence_answer> partition_core::stage_fence(const tx_id& tx) {
  if (failed_)
    return make_error(errc::unavailable, "partition stopped after a failed "
                                         "write: " + failed_->to_string());
  fence_answer out;
  // A commit under way (waiting for its flush, its sync or its copies) is
  // no proof yet: a crash or failover can still take it back.
  if (auto i = prepared_.find(tx); i != prepared_.end() && i->second.commit_time)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + ": the transaction's commit is under way here; ask again");
  if (prepared_.count(tx) == 0) {
    auto d = find_decision(tx);
    if (!d)
      return d.err();
    out.folded_through = d->kept_from > 0 ? d->kept_from - 1 : 0;
    if (d->outcome == tx_outcome::committed) {
      out.commit_time = d->commit_time;
      return out;
    }
    if (d->outcome == tx_outcome::aborted) {
      out.aborted = true;
      return out;
    }
  }
  // Staged again when asked again: the answer waits for this record, so
  // for every fence before it too.
  note_fence(tx);
  staged_.push_back(fence_record{tx});
  staged_refs_.push_back({tx, 0});
  out.fenced = true;
  return out;
}

status partition_core::stage_abort(const tx_id& tx) {
  if (auto w = pending_.find(tx); w != pending_.end()) {
    if (!w->second.cancelled && !w->second.expired) {
      w->second.cancelled = true;
      ready_.push_back(tx);
    }
    return {};
  }
  auto i = prepared_.find(tx);
  if (i == prepared_.end())
    return {};
  if (i->second.commit_time) // decided: its commit is staged or journaled
    return make_error(errc::invalid_argument,
                      "abort of a transaction whose commit is under way");
  drop_prepared(tx);
  if (failed_)
    return {};
  staged_.push_back(abort_record{tx});
  staged_refs_.push_back({tx, 0});
  return {};
}

lsn partition_core::stage_term(const copy_term& t) {
  const lsn at = log_->next_lsn() + staged_.size();
  staged_.push_back(term_record{t});
  staged_refs_.push_back({record_tx(staged_.back()), 0});
  return at;
}

status partition_core::flush() {
  if (staged_.empty())
    return {};
  if (failed_)
    return *failed_;
  // A late commit (a set-aside transaction committed at a time <= C): its
  // effects go straight into the checkpoint store, in the append.
  auto late = [this](storage_txn& txn, const commit_record& c, lsn at) -> status {
    auto i = prepared_.find(c.tx);
    if (i == prepared_.end())
      return {};
    std::vector<std::pair<object_key, committed_effect>> effects;
    for (std::size_t u = 0; u < i->second.updates.size(); ++u) {
      const auto& up = i->second.updates[u];
      effects.emplace_back(up.key, committed_effect{i->second.positions[u], c.tx, c.commit_time,
                                                    up.effect, at, up.type});
    }
    return store_->fold_late(txn, effects);
  };
  auto range = log_->append(staged_, late);
  // Only a storage I/O failure stops the partition. Anything else (a full
  // map, a record the journal refuses) left the journal usable with nothing
  // of the batch applied: fail that batch's transactions and keep serving.
  if (!range && range.err().code() != errc::io_error && !log_->stopped())
    return fail_batch(range.err());
  const bool deferred = opts_.sync_elsewhere && log_->mode() == durability::batch;
  status synced;
  if (range && log_->mode() == durability::batch && !opts_.sync_elsewhere)
    synced = log_->sync();
  if (!range || !synced) {
    failed_ = range ? synced.err() : range.err();
    staged_.clear();
    staged_refs_.clear();
    return *failed_;
  }
  // What the batch depends on: the journal's end before it.
  auto deps = end_dep_;
  note_appended(range->first, staged_);
  if (!deferred) {
    apply_appended(range->first, std::move(deps));
    return {};
  }
  // Durability batch, synced elsewhere: the batch applies once a sync
  // covers it (synced()); its commits stay in the prepared set until then,
  // so no read sees them before they are durable. The replicas may have
  // it at once.
  if (opts_.keep_flushed)
    flushed_.push_back(replication_batch{range->first, staged_, std::move(deps)});
  unsynced_.push_back(appended_batch{range->first, std::move(staged_), std::move(staged_refs_)});
  staged_.clear();
  staged_refs_.clear();
  return {};
}

std::optional<journal::sync_job> partition_core::sync_job() const {
  if (failed_ || !opts_.sync_elsewhere)
    return std::nullopt;
  return log_->background_sync();
}

status partition_core::synced(lsn upto, const status& outcome) {
  if (failed_)
    return *failed_;
  if (auto st = log_->synced(upto, outcome); !st) {
    failed_ = st.err();
    return st;
  }
  apply_synced(log_->durable_lsn());
  return {};
}

void partition_core::apply_synced(lsn upto) {
  while (!unsynced_.empty()
         && unsynced_.front().first + unsynced_.front().records.size() <= upto + 1) {
    apply_batch(unsynced_.front());
    unsynced_.pop_front();
  }
}

void partition_core::apply_appended(lsn first, std::optional<batch_dependency> deps) {
  appended_batch b{first, std::move(staged_), std::move(staged_refs_)};
  staged_.clear();
  staged_refs_.clear();
  apply_batch(b);
  if (opts_.keep_flushed)
    flushed_.push_back(replication_batch{first, std::move(b.records), std::move(deps)});
}

void partition_core::note_appended(lsn first, const std::vector<journal_record>& records) {
  if (end_dep_)
    end_dep_ = dependency_within(*end_dep_, first, records, first + records.size());
  // A timestamp that cannot be decoded (never written by Tally): the end's
  // dependency is unknown until the journal is scanned again.
  if (!end_dep_)
    end_dep_ = scan_dependency(first + records.size(), 4096);
}

std::optional<batch_dependency> partition_core::scan_dependency(lsn at, std::uint64_t limit,
                                                                bool* unreadable) {
  const lsn trunc = log_->truncation_lsn();
  if (at < trunc || at > log_->next_lsn())
    return std::nullopt;
  constexpr lsn window = 256;
  std::uint64_t scanned = 0;
  lsn hi = at;
  while (hi > trunc && scanned < limit) {
    const lsn lo = hi - trunc > window ? hi - window : trunc;
    std::optional<batch_dependency> found;
    bool bad = false;
    auto st = log_->scan(lo, hi, [&](lsn pos, const journal_record& r) {
      const auto* c = std::get_if<commit_record>(&r);
      if (c && !c->bloom_timestamp.empty()) {
        auto clock = bloom_clock::decode(c->bloom_timestamp);
        if (!clock) {
          bad = true;
          return false;
        }
        found = batch_dependency{std::move(*clock), pos, c->tx};
      }
      return true;
    });
    if (!st || bad) {
      if (unreadable)
        *unreadable = true;
      return std::nullopt;
    }
    if (found)
      return found;
    scanned += hi - lo;
    hi = lo;
  }
  if (hi > trunc)
    return std::nullopt; // too far back
  // No commit from the log's start to `at`: the zero clock if nothing was
  // ever folded (Algorithm 1, line 1), else unknown here.
  if (trunc == 1)
    if (auto zero = bloom_clock::make(opts_.bloom_cells, opts_.bloom_hashes))
      return batch_dependency{std::move(*zero), 0, {}};
  return std::nullopt;
}

std::optional<batch_dependency> partition_core::dependency_at(lsn at) {
  if (at < log_->truncation_lsn() || at > log_->next_lsn())
    return std::nullopt;
  // No commit between the journal's last one and its end.
  if (end_dep_ && end_dep_->commit_at < at)
    return end_dep_;
  return scan_dependency(at, 4096);
}

dependency_verdict partition_core::check_dependencies(const replication_batch& b,
                                                      std::function<bool()> prefix_matches) {
  exact_checks exact;
  exact.prefix_matches = std::move(prefix_matches);
  exact.holds_commit = [this](lsn at, const tx_id& tx) {
    if (at < log_->truncation_lsn())
      return true; // folded here: it was here
    auto t = tx_at(at);
    return t && *t && **t == tx;
  };
  // B_z: the Bloom timestamp of this journal's last commit.
  const bloom_clock& mine = end_dep_ ? end_dep_->clock : *bloom_;
  return deps_check_.check(mine, log_->next_lsn(), b, exact);
}

void partition_core::apply_batch(const appended_batch& b) {
  lsn at = b.first;
  for (std::size_t r = 0; r < b.records.size(); ++r, ++at) {
    const auto& ref = b.refs[r];
    auto& rec = b.records[r];
    if (std::holds_alternative<update_record>(rec)) {
      auto i = prepared_.find(ref.tx);
      if (i != prepared_.end())
        i->second.positions[ref.update_index] = at;
    } else if (auto* c = std::get_if<commit_record>(&rec)) {
      auto i = prepared_.find(ref.tx);
      if (i == prepared_.end())
        continue;
      auto& p = i->second;
      // A late commit is in the checkpoint entries: cached versions of its
      // keys (based at C without it) are dropped and reload.
      const bool late = log_->checkpoint().sequence > 0
                        && c->commit_time <= log_->checkpoint().time;
      for (std::size_t u = 0; u < p.updates.size(); ++u) {
        if (late) {
          cache_->erase(p.updates[u].key);
          if (p.updates[u].op)
            if (auto f = fbf_for(p.updates[u].key.bucket))
              (*f)->insert(p.updates[u].op->hash());
          continue;
        }
        committed_effect e;
        e.position = p.positions[u];
        e.tx = ref.tx;
        e.commit_time = c->commit_time;
        e.effect = p.updates[u].effect;
        e.commit_position = at;
        auto st = cache_->on_commit(p.updates[u].key, p.updates[u].type,
                                    std::move(e));
        // On an apply error the cache dropped the key; on wrong_type (the
        // key is cached as another type) it kept the entry without this
        // effect: drop it too, so a miss reloads the whole history (and
        // its type check sees the mismatch).
        if (!st)
          cache_->erase(p.updates[u].key);
        if (p.updates[u].op) {
          auto f = fbf_for(p.updates[u].key.bucket);
          if (f)
            (*f)->insert(p.updates[u].op->hash());
        }
      }
      release_in_flight(p);
      unhold(p);
      prepared_.erase(i);
      // Its ids are in the FBF and `opids` now: a waiting retry is a
      // duplicate.
      wake_waiting_for(ref.tx);
    }
  }
}

std::vector<replication_batch> partition_core::take_flushed() {
  auto out = std::move(flushed_);
  flushed_.clear();
  return out;
}

status partition_core::stage_replicated(const journal_record& rec) {
  const tx_id& tx = record_tx(rec);
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(opts_.index)
                        + ": replicated " + record_kind_name(rec)
                        + " record does not fit: " + why);
  };
  if (auto* u = std::get_if<update_record>(&rec)) {
    auto& p = prepared_[tx]; // prepare time set by its prepare or commit
    if (p.prepare_time != 0 || p.commit_time)
      return bad("an update after the transaction's prepare");
    if (u->op)
      in_flight_.emplace(std::make_pair(u->key.bucket, *u->op),
                         in_flight_op{tx, u->key, u->type, u->effect});
    p.updates.push_back(tx_update{u->key, u->type, u->effect, u->op});
    p.positions.push_back(0);
    staged_refs_.push_back({tx, p.updates.size() - 1});
  } else if (auto* pr = std::get_if<prepare_record>(&rec)) {
    auto& p = prepared_[tx];
    if (p.prepare_time != 0)
      return bad("a second prepare");
    p.prepare_time = pr->prepare_time;
    p.participants = pr->participants;
    p.coordinator = pr->coordinator;
    hold(p);
    clock_ = std::max(clock_, pr->prepare_time);
    staged_refs_.push_back({tx, 0});
  } else if (auto* c = std::get_if<commit_record>(&rec)) {
    const std::uint64_t t = c->commit_time.get(local_dc);
    auto i = prepared_.find(tx);
    if (i != prepared_.end()) {
      auto& p = i->second;
      if (p.commit_time)
        return bad("a second commit");
      if (p.prepare_time == 0) { // one-step: no prepare record
        p.prepare_time = t;
        hold(p);
      }
      p.commit_time = t;
    }
    // A commit with nothing prepared here (every update a duplicate) is
    // journaled as the primary journaled it, and applies nothing.
    clock_ = std::max(clock_, t);
    if (!c->bloom_timestamp.empty()) {
      auto b = bloom_clock::decode(c->bloom_timestamp, opts_.bloom_cells,
                                   opts_.bloom_hashes);
      if (!b)
        return bad("its Bloom timestamp: " + b.err().message());
      bloom_.emplace(std::move(*b));
    }
    staged_refs_.push_back({tx, 0});
  } else if (std::holds_alternative<term_record>(rec)) {
    staged_refs_.push_back({tx, 0}); // the journal keeps its term (term_at)
  } else if (std::holds_alternative<fence_record>(rec)) {
    note_fence(tx); // this copy refuses the coordinator too, if it leads
    staged_refs_.push_back({tx, 0});
  } else {
    drop_prepared(tx); // an abort
    staged_refs_.push_back({tx, 0});
  }
  staged_.push_back(rec);
  return {};
}

bool partition_core::overlap_matches(const replication_batch& b) {
  const lsn end = log_->next_lsn();
  const lsn from = std::max(b.first, log_->truncation_lsn());
  const lsn to = std::min(end, b.end());
  if (from >= to)
    return true;
  bool same = true;
  auto st = log_->scan(from, to, [&](lsn at, const journal_record& mine) {
    const auto& theirs = b.records[at - b.first];
    if (mine.index() != theirs.index() || record_tx(mine) != record_tx(theirs)) {
      same = false;
      return false;
    }
    return true;
  });
  return st && same;
}

expected<lsn> partition_core::apply_replicated(const replication_batch& b) {
  if (failed_)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + " stopped after a failed write: " + failed_->to_string());
  const lsn end = log_->next_lsn();
  if (b.first > end)
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(opts_.index)
                        + ": replicated batch starts at LSN " + std::to_string(b.first)
                        + ", this journal ends at " + std::to_string(end));
  if (b.first < end && !overlap_matches(b))
    return make_error(errc::corrupt,
                      "partition " + std::to_string(opts_.index)
                        + ": replicated batch from LSN " + std::to_string(b.first)
                        + " differs from this journal's records below "
                        + std::to_string(end) + " (a former primary's tail)");
  if (b.end() <= end)
    return end; // a resend of what is here already
  if (!staged_.empty())
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(opts_.index)
                        + ": a replica does not stage writes of its own");
  for (std::size_t r = end - b.first; r < b.records.size(); ++r) {
    if (auto st = stage_replicated(b.records[r]); !st) {
      // The state took part of the batch and the journal none of it: only
      // a restart (recovery from the journal) makes them agree again.
      failed_ = st.err();
      staged_.clear();
      staged_refs_.clear();
      return st.err();
    }
  }
  auto range = log_->append(staged_);
  status synced;
  // Synced here, unless the sync threads do it (options.sync_elsewhere):
  // then the copy answers its primary once a sync covers the batch
  // (partition_replication::on_needs_sync), and its shard never waits
  // for the disk.
  if (range && log_->mode() == durability::batch && !opts_.sync_elsewhere)
    synced = log_->sync();
  if (!range || !synced || range->first != end) {
    failed_ = !range    ? range.err()
              : !synced ? synced.err()
                        : make_error(errc::corrupt, "replicated batch appended at LSN "
                                                      + std::to_string(range->first)
                                                      + ", expected "
                                                      + std::to_string(end));
    staged_.clear();
    staged_refs_.clear();
    tally::log(log_level::error, "partition ", opts_.index,
               ": replica stopped, a replicated batch failed: ", failed_->to_string());
    return *failed_;
  }
  note_appended(range->first, staged_);
  apply_appended(range->first, std::nullopt);
  return log_->next_lsn();
}

expected<replication_batch> partition_core::records_from(lsn from,
                                                         std::size_t max_records) {
  if (from < log_->truncation_lsn())
    return make_error(errc::not_found,
                      "partition " + std::to_string(opts_.index) + ": LSN "
                        + std::to_string(from) + " is folded into the checkpoint (the log starts at "
                        + std::to_string(log_->truncation_lsn()) + "): a full copy is needed");
  if (from > log_->next_lsn())
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(opts_.index) + ": LSN "
                        + std::to_string(from) + " is beyond the journal's end "
                        + std::to_string(log_->next_lsn()));
  replication_batch out;
  out.first = from;
  const lsn to = from + std::min<std::uint64_t>(max_records, log_->next_lsn() - from);
  auto st = log_->scan(from, to, [&](lsn, const journal_record& r) {
    out.records.push_back(r);
    return true;
  });
  if (!st)
    return st.err();
  out.deps = dependency_at(from);
  return out;
}

expected<std::optional<tx_id>> partition_core::tx_at(lsn at) {
  if (at == 0)
    return std::optional<tx_id>{};
  if (at < log_->truncation_lsn() || at >= log_->next_lsn())
    return make_error(errc::not_found, "partition " + std::to_string(opts_.index)
                                         + ": no record at LSN " + std::to_string(at));
  std::optional<tx_id> out;
  auto st = log_->scan(at, at + 1, [&](lsn, const journal_record& r) {
    out = record_tx(r);
    return false;
  });
  if (!st)
    return st.err();
  return out;
}

status partition_core::sync() {
  if (failed_)
    return *failed_;
  auto st = log_->sync();
  if (!st) {
    failed_ = st.err();
    return st;
  }
  apply_synced(log_->durable_lsn());
  return st;
}

status partition_core::fail_batch(const error& cause) {
  // Transactions whose updates or prepare are in the batch never became
  // durable: they are dropped (in-flight ids and prepare time released), so
  // their coordinators get the error and abort, and a retry can apply. A
  // commit or abort of a transaction prepared in an earlier batch is a
  // decision already taken elsewhere: it stays staged and is written by the
  // next flush (the transaction stays prepared until then, so reads above
  // its prepare time wait, as for any prepared transaction).
  std::set<tx_id> fresh;
  for (std::size_t r = 0; r < staged_.size(); ++r)
    if (std::holds_alternative<update_record>(staged_[r])
        || std::holds_alternative<prepare_record>(staged_[r]))
      fresh.insert(staged_refs_[r].tx);
  std::vector<journal_record> kept;
  std::vector<staged_ref> kept_refs;
  for (std::size_t r = 0; r < staged_.size(); ++r) {
    if (fresh.count(staged_refs_[r].tx) != 0)
      continue;
    kept.push_back(std::move(staged_[r]));
    kept_refs.push_back(std::move(staged_refs_[r]));
  }
  for (const auto& tx : fresh)
    drop_prepared(tx);
  staged_ = std::move(kept);
  staged_refs_ = std::move(kept_refs);
  ++failed_batches_;
  tally::log(log_level::warn, "partition ", opts_.index, ": a write batch of ",
             fresh.size(), " transaction(s) failed and was not applied (",
             cause.to_string(), "); the partition keeps serving");
  return make_error(cause.code(),
                    "partition " + std::to_string(opts_.index)
                      + ": write not applied: " + cause.message());
}

void partition_core::drop_prepared(const tx_id& tx) {
  auto i = prepared_.find(tx);
  if (i == prepared_.end())
    return;
  release_in_flight(i->second);
  unhold(i->second);
  prepared_.erase(i);
  wake_waiting_for(tx); // its ids were never applied: a waiting retry applies
}

std::size_t partition_core::advance_filters() {
  const fbf_time now = opts_.now_fbf();
  std::size_t n = 0;
  for (auto& [bucket, f] : fbfs_) {
    // A clock that went backwards (only possible in tests) is ignored.
    if (now < f.clock())
      continue;
    if (f.advance(now))
      ++n;
  }
  return n;
}

expected<partition_checkpoint> partition_core::checkpoint() {
  if (failed_)
    return make_error(errc::unavailable,
                      "partition " + std::to_string(opts_.index)
                        + " stopped after a failed write: "
                        + failed_->to_string());
  partition_checkpoint out;
  // C <= safe time: no commit <= C can arrive any more (every prepared or
  // staged transaction has a prepare time > safe time). C <= every running
  // transaction's snapshot: by the retention window (an older snapshot is
  // refused exactly by read()). Seed 004, 2.7.2: CheckpointTime <=
  // MinDependency.
  // An empty log has nothing to fold or drop: skip the durable meta write
  // (an idle partition would otherwise sync once per interval).
  if (log_->truncation_lsn() == log_->next_lsn())
    return out;
  const std::uint64_t now = opts_.now_us();
  // Set aside (issue 13): transactions prepared long ago, whose coordinator
  // went silent, and those the checkpoint time has passed already. They do
  // not hold C back: their keys stay unreadable above their prepare time,
  // and a late commit of one is folded into the checkpoint store.
  checkpoint_bounds b;
  std::uint64_t safe = safe_time();
  if (opts_.set_aside_after_us != 0) {
    safe = clock_;
    for (const auto& [tx, p] : prepared_) {
      if (p.prepare_time == 0)
        continue; // a replica's transaction in flight (not set aside: off there)
      const bool aside = !p.commit_time
                         && (p.prepare_time <= checkpoint_time()
                             || p.prepare_time + opts_.set_aside_after_us < now);
      if (aside)
        b.set_aside.insert(tx);
      else
        safe = std::min(safe, p.prepare_time - 1);
    }
  }
  const std::uint64_t c = sub_floor(safe, opts_.snapshot_retention_us);
  if (c <= checkpoint_time())
    return out;
  // A log that holds nothing but set-aside transactions the checkpoint time
  // has passed already (an idle partition waiting for a decision): a
  // checkpoint would fold nothing and only append their records again, in
  // a synced write, at every interval until they are decided.
  if (only_set_aside_records(b.set_aside))
    return out;
  b.checkpoint_time = vector_clock{{local_dc, c}};
  // Every journaled record counts as replicated, except those a replica
  // that is behind still needs (keep_log_from: it is sent them from here).
  b.replicated_lsn = log_->next_lsn() - 1;
  if (keep_log_from_ != 0)
    b.replicated_lsn = std::min(b.replicated_lsn, keep_log_from_ - 1);
  // Every id the FBF may still hold keeps its record and `opids` entry, so
  // an FBF positive for a true duplicate is always confirmed exactly.
  std::uint64_t horizon = sub_floor(now, op_id_keep_us_);
  if (now < recovered_until_us_)
    horizon = std::min(horizon, recovered_floor_us_);
  b.fbf_horizon_us = horizon; // 0 (early in a test clock) keeps them all
  // Decisions of two-phase transactions stay answerable for
  // decision_keep_us, and as long as their records are in the log (<= C).
  b.decisions_kept_from = std::min(c, sub_floor(now, opts_.decision_keep_us));
  const std::uint64_t sequence_before = log_->checkpoint().sequence;
  auto report = store_->checkpoint(b);
  if (!report) {
    if (report.err().code() == errc::io_error)
      failed_ = report.err(); // the journal stopped: so does the partition
    return report.err();
  }
  cache_->truncate_below(b.checkpoint_time);
  // Set-aside transactions whose records moved to the log's end (if this
  // call wrote a checkpoint at all).
  const auto& moved = log_->checkpoint().sequence != sequence_before
                        ? log_->last_relocation()
                        : std::vector<relocation>{};
  for (const auto& m : moved) {
    auto i = prepared_.find(m.tx);
    if (i == prepared_.end())
      continue;
    for (std::size_t u = 0; u < m.updates.size() && u < i->second.positions.size(); ++u)
      i->second.positions[u] = m.updates[u];
  }
  out.set_aside = b.set_aside.size();
  out.ran = true;
  out.report = std::move(*report);
  out.fbf_horizon_us = b.fbf_horizon_us;
  out.log_span = log_->next_lsn() - log_->truncation_lsn();
  return out;
}

bool partition_core::only_set_aside_records(const std::set<tx_id>& set_aside) const {
  if (set_aside.empty())
    return false;
  std::uint64_t records = 0;
  for (const auto& tx : set_aside) {
    auto p = prepared_.find(tx);
    auto j = log_->undecided().find(tx);
    if (p == prepared_.end() || j == log_->undecided().end()
        || p->second.prepare_time > checkpoint_time())
      return false;
    records += j->second.updates.size() + (j->second.prepare_lsn ? 1 : 0);
  }
  return records == log_->next_lsn() - log_->truncation_lsn();
}

std::vector<undecided_prepare>
partition_core::prepared_before(std::uint64_t before) const {
  std::vector<undecided_prepare> out;
  for (const auto& [tx, p] : prepared_)
    if (!p.commit_time && p.prepare_time < before)
      out.push_back(undecided_prepare{tx, p.prepare_time, p.participants, p.coordinator});
  return out;
}

expected<tx_decision> partition_core::find_decision(const tx_id& tx) {
  auto found = log_->find_decision(tx);
  if (!found)
    return found.err();
  tx_decision out;
  out.kept_from = log_->decisions_kept_from();
  if (*found) {
    out.outcome = (*found)->outcome;
    if ((*found)->outcome == tx_outcome::committed)
      out.commit_time = (*found)->time;
  }
  return out;
}

} // namespace tally
