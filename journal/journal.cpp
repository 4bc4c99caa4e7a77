#include "journal/journal.hpp"

#include "common/bounded_input_archive.hpp"

#include <algorithm>
#include <istream>
#include <limits>
#include <ostream>

#include <cereal/archives/portable_binary.hpp>

#include "common/membuf.hpp"
#include "journal/write_ahead_tail.hpp"

namespace tally {

namespace {

// Metadata keys (docs/FORMAT.md, "Metadata").
constexpr std::string_view meta_format_version = "format_version";
constexpr std::string_view meta_partition_id = "partition_id";
constexpr std::string_view meta_next_lsn = "next_lsn";
constexpr std::string_view meta_truncation_lsn = "truncation_lsn";
constexpr std::string_view meta_checkpoint = "checkpoint";
constexpr std::string_view meta_decisions_kept_from = "decisions_kept_from";
// The term of the last record folded into the checkpoint (docs/FORMAT.md):
// written by apply_checkpoint when it changes; absent: term 0.
constexpr std::string_view meta_folded_term = "folded_term";
// The highest term this copy promised to a take-over round or took batches
// under (docs/FORMAT.md; docs/REPLICATION.md, "Persistent promises"):
// written by save_promised_term, synced; absent: term 0.
constexpr std::string_view meta_promised_term = "promised_term";
// The ring epoch of that promise (docs/REPLICATION.md, "Rounds across two
// copy sets"): u64, written with it; absent: 0.
constexpr std::string_view meta_promised_epoch = "promised_epoch";
// The copy set this store last led (docs/REPLICATION.md, "Handoffs whose
// fence gave up"): written when it starts to lead a set, deleted once a
// handoff's fence held that set; absent: none.
constexpr std::string_view meta_led_set = "led_set";

// The time a decision entry carries: a clock's largest entry (Tally runs
// one data centre, so its only one).
std::uint64_t clock_top(const vector_clock& c) noexcept {
  std::uint64_t t = 0;
  for (const auto& e : c.entries())
    t = std::max(t, e.time);
  return t;
}

// At least this many `decisions` entries are looked at per sweep (and twice
// as many as were added since the last one, so the sweep keeps up).
constexpr std::uint64_t decisions_sweep_min = 4096;

// Frame version of meta "checkpoint".
constexpr std::uint8_t checkpoint_state_version = 1;

std::string encode_checkpoint_state(const checkpoint_state& s) {
  std::string payload;
  {
    detail::string_sink sink{payload};
    std::ostream os{&sink};
    cereal::PortableBinaryOutputArchive ar{os};
    ar(s.sequence, s.time, s.max_commit_time, s.last_bloom_timestamp);
  }
  std::string out;
  append_frame(out, checkpoint_state_version, payload);
  return out;
}

expected<checkpoint_state> decode_checkpoint_state(std::string_view bytes) {
  auto payload = open_frame(bytes, checkpoint_state_version,
                            "meta checkpoint state");
  if (!payload)
    return payload.err();
  try {
    bounded_input_archive ar{*payload}; // lengths checked before allocating
    checkpoint_state s;
    ar(s.sequence, s.time, s.max_commit_time, s.last_bloom_timestamp);
    if (ar.remaining() != 0)
      return make_error(errc::corrupt,
                        "meta checkpoint state: trailing bytes");
    return s;
  } catch (const std::exception& e) {
    return make_error(errc::corrupt,
                      std::string{"meta checkpoint state: "} + e.what());
  }
}

// Undecided transactions during one append: changes are staged here and
// reach journal::pending_ only after the LMDB commit succeeded, so a failed
// append leaves the in-memory state as it was.
class pending_overlay {
public:
  using map = std::unordered_map<tx_id, pending_tx, tx_id_hash>;

  explicit pending_overlay(const map& base) : base_(base) {}

  // The staged state of `tx`, created (first record at `at`) if unknown.
  pending_tx& touch(const tx_id& tx, lsn at) {
    auto it = changed_.find(tx);
    if (it == changed_.end()) {
      auto b = base_.find(tx);
      it = changed_
             .emplace(tx, b != base_.end() ? std::optional<pending_tx>{b->second}
                                           : std::optional<pending_tx>{})
             .first;
    }
    if (!it->second) {
      it->second.emplace();
      it->second->first_lsn = at;
    }
    return *it->second;
  }

  // Removes `tx` (it committed or aborted) and returns its staged state.
  std::optional<pending_tx> take(const tx_id& tx) {
    std::optional<pending_tx> out;
    if (auto it = changed_.find(tx); it != changed_.end()) {
      out = std::move(it->second);
      it->second.reset();
    } else {
      if (auto b = base_.find(tx); b != base_.end())
        out = b->second;
      changed_.emplace(tx, std::nullopt);
    }
    return out;
  }

  void apply_to(map& target) {
    for (auto& [tx, state] : changed_) {
      if (state)
        target[tx] = std::move(*state);
      else
        target.erase(tx);
    }
  }

private:
  const map& base_;
  std::unordered_map<tx_id, std::optional<pending_tx>, tx_id_hash> changed_;
};

error corrupt_at(lsn at, const error& cause) {
  return make_error(errc::corrupt, "journal record at LSN " + std::to_string(at)
                                     + ": " + cause.message());
}

} // namespace

// What an append will write, planned before anything is written: the LMDB
// puts and the in-memory state the batch leaves (applied once it is
// written). The same plan serves the path without the tail, the tail and
// the tail's drain.
struct journal::append_plan {
  explicit append_plan(const pending_overlay::map& pending) : staged(pending) {}
  pending_overlay staged;
  vector_clock max_commit;
  std::string last_bloom;
  bool saw_commit = false;
  std::uint64_t decisions_added = 0;
  std::vector<std::pair<lsn, copy_term>> new_terms;
  std::vector<planned_put> puts;
  // Late commits: the record's index in the batch and its LSN.
  std::vector<std::pair<std::size_t, lsn>> lates;
  // What the tail must answer before its drain: `opids`, `decisions` and
  // the index.
  std::vector<std::pair<std::string, op_entry>> op_ids;
  std::vector<std::pair<std::string, decision_entry>> decisions;
  std::vector<std::pair<std::string, index_value>> index_entries;
  std::uint64_t put_bytes = 0; // keys and values of `puts`
  lsn first = 0;
  lsn end = 0; // one past the last LSN
};

const char* to_string(durability d) noexcept {
  switch (d) {
    case durability::full: return "full";
    case durability::batch: return "batch";
    case durability::none: return "none";
    case durability::periodic: return "periodic";
  }
  return "unknown";
}

// ---- open and recovery ---------------------------------------------------

expected<opened_journal> journal::open(const journal_options& opts,
                                       std::shared_ptr<storage_env> env) {
  if (!env) {
    auto real = lmdb_env::open(lmdb_options{opts.path, opts.map_size, opts.must_exist});
    if (!real)
      return real.err();
    env = std::move(*real);
  }
  std::unique_ptr<journal> j{new journal(env, opts)};
  auto rec = j->recover(opts.collect_effects);
  if (!rec)
    return rec.err();
  return opened_journal{std::move(j), std::move(*rec)};
}

expected<bool> journal::init_or_check_meta(storage_txn& txn) {
  const auto& path = env_->path();
  auto version = txn.get(store_db::meta, meta_format_version);
  if (!version)
    return version.err();
  if (!version->has_value()) {
    auto js = txn.stats(store_db::journal);
    if (!js)
      return js.err();
    if (js->entries != 0)
      return make_error(errc::corrupt,
                        "store at " + path
                          + " holds journal records but no format version");
    const std::pair<std::string_view, std::uint64_t> init[] = {
      {meta_format_version, store_format_version},
      {meta_partition_id, partition_},
      {meta_next_lsn, 1},
      {meta_truncation_lsn, 1},
      {meta_decisions_kept_from, 0}, // every decision is kept (a new store)
    };
    for (const auto& [name, value] : init)
      if (auto st = txn.put(store_db::meta, name, encode_u64(value)); !st)
        return st.err();
    next_ = 1;
    truncation_ = 1;
    decisions_kept_from_ = 0;
    return true;
  }
  auto v = decode_u64(**version, "meta format_version");
  if (!v)
    return v.err();
  if (*v != store_format_version)
    return make_error(errc::corrupt,
                      "store at " + path + " has format version "
                        + std::to_string(*v) + "; this build reads version "
                        + std::to_string(store_format_version)
                        + " only (docs/FORMAT.md)");
  auto read_u64 = [&](std::string_view name) -> expected<std::uint64_t> {
    auto raw = txn.get(store_db::meta, name);
    if (!raw)
      return raw.err();
    if (!raw->has_value())
      return make_error(errc::corrupt, "store at " + path + " lacks meta "
                                         + std::string{name});
    return decode_u64(**raw, "meta value");
  };
  auto pid = read_u64(meta_partition_id);
  if (!pid)
    return pid.err();
  if (*pid != partition_)
    return make_error(errc::bad_config,
                      "store at " + path + " belongs to partition "
                        + std::to_string(*pid) + ", not "
                        + std::to_string(partition_)
                        + "; check the data directory setting");
  auto next = read_u64(meta_next_lsn);
  if (!next)
    return next.err();
  auto trunc = read_u64(meta_truncation_lsn);
  if (!trunc)
    return trunc.err();
  if (*trunc == 0 || *trunc > *next)
    return make_error(errc::corrupt, "store at " + path + ": truncation LSN "
                                       + std::to_string(*trunc)
                                       + " is not in [1, next LSN "
                                       + std::to_string(*next) + "]");
  next_ = *next;
  truncation_ = *trunc;
  auto cp = txn.get(store_db::meta, meta_checkpoint);
  if (!cp)
    return cp.err();
  if (cp->has_value()) {
    auto state = decode_checkpoint_state(**cp);
    if (!state)
      return state.err();
    checkpoint_ = std::move(*state);
  }
  // The terms kept in meta (absent: term 0).
  for (auto [key, into] : {std::pair{meta_folded_term, &folded_term_},
                           std::pair{meta_promised_term, &promised_term_}}) {
    auto bytes = txn.get(store_db::meta, key);
    if (!bytes)
      return bytes.err();
    if (!bytes->has_value())
      continue;
    auto t = decode_term_value(**bytes);
    if (!t)
      return t.err();
    *into = std::move(*t);
  }
  auto epoch = txn.get(store_db::meta, meta_promised_epoch);
  if (!epoch)
    return epoch.err();
  if (epoch->has_value()) {
    auto e = decode_u64(**epoch, "meta promised_epoch");
    if (!e)
      return e.err();
    promised_epoch_ = *e;
  }
  auto led = txn.get(store_db::meta, meta_led_set);
  if (!led)
    return led.err();
  if (led->has_value()) {
    auto s = decode_led_set_value(**led);
    if (!s)
      return s.err();
    led_set_ = std::move(*s);
  }
  return false;
}

expected<recovery_result> journal::recover(bool collect_effects) {
  // 1. Metadata: create it for a new store, check it for an existing one.
  {
    auto txn = env_->begin(true);
    if (!txn)
      return txn.err();
    auto fresh = init_or_check_meta(**txn);
    if (!fresh)
      return fresh.err();
    if (*fresh) {
      if (auto st = (*txn)->commit(commit_mode::durable); !st)
        return st.err();
    }
  }
  max_commit_ = checkpoint_.max_commit_time;
  last_bloom_ = checkpoint_.last_bloom_timestamp;

  // 2. Verify and replay every record. A bad record is remembered, not
  //    acted on: only when no valid record follows it is it part of a tail.
  struct recovering_tx {
    lsn first_lsn = 0;
    std::optional<prepare_record> prepare;
    lsn prepare_lsn = 0;
    std::vector<std::pair<lsn, update_record>> updates;
  };
  std::unordered_map<tx_id, recovering_tx, tx_id_hash> txs;
  decided_.clear(); // rebuilt from the records read below
  // The decisions of transactions prepared here, for a store that has no
  // decision index yet (backfill_decisions).
  std::vector<std::pair<tx_id, decision_entry>> decisions;
  recovery_result out;
  std::vector<std::string> bad_keys;
  lsn first_bad = 0;
  std::string first_bad_reason;
  lsn last_valid = 0;
  const bool has_checkpoint = checkpoint_.sequence > 0;
  // What every valid record adds to the state recovery rebuilds: the
  // records in LMDB, then those a crash left only in the write-ahead tail.
  auto visit_record = [&](lsn pos, journal_record& record) {
    std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, update_record>) {
          auto& t = txs[r.tx];
          if (t.first_lsn == 0)
            t.first_lsn = pos;
          t.updates.emplace_back(pos, std::move(r));
        } else if constexpr (std::is_same_v<T, prepare_record>) {
          auto& t = txs[r.tx];
          if (t.first_lsn == 0)
            t.first_lsn = pos;
          t.prepare = r;
          t.prepare_lsn = pos;
        } else if constexpr (std::is_same_v<T, term_record>) {
          terms_[pos] = r.term();
        } else if constexpr (std::is_same_v<T, fence_record>) {
          out.fenced.push_back(r.tx); // the partition refuses its coordinator again
        } else if constexpr (std::is_same_v<T, commit_record>) {
          max_commit_.merge(r.commit_time);
          last_bloom_ = r.bloom_timestamp;
          decided_.emplace_back(pos, clock_top(r.commit_time));
          auto it = txs.find(r.tx);
          if (it == txs.end())
            return; // its updates were truncated with the checkpoint
          if (it->second.prepare)
            decisions.emplace_back(r.tx, decision_entry{tx_outcome::committed, pos,
                                                        clock_top(r.commit_time)});
          bool folded = has_checkpoint && r.commit_time <= checkpoint_.time;
          for (auto& [upos, u] : it->second.updates) {
            if (u.op)
              out.op_ids.push_back(
                recovered_op{*u.op, u.key.bucket, r.wall_time_us, pos});
            if (collect_effects && !folded)
              out.effects[u.key].push_back(committed_effect{
                upos, r.tx, r.commit_time, std::move(u.effect), pos, u.type});
          }
          txs.erase(it);
        } else {
          static_assert(std::is_same_v<T, abort_record>);
          decided_.emplace_back(pos, 0); // read by every checkpoint
          auto it = txs.find(r.tx);
          if (it == txs.end())
            return;
          if (it->second.prepare)
            decisions.emplace_back(r.tx, decision_entry{tx_outcome::aborted, pos,
                                                        it->second.prepare->prepare_time});
          txs.erase(it);
        }
      },
      record);
  };
  {
    auto txn = env_->begin(false);
    if (!txn)
      return txn.err();
    auto cur = (*txn)->cursor(store_db::journal);
    if (!cur)
      return cur.err();
    auto more = (*cur)->first();
    for (; more && *more; more = (*cur)->next()) {
      auto key = (*cur)->key();
      auto at = decode_lsn_key(key);
      expected<journal_record> rec = at.has_value() ? decode_record((*cur)->value())
                                                    : expected<journal_record>{at.err()};
      if (rec && (*at < truncation_ || *at >= next_))
        rec = make_error(errc::corrupt,
                         "LSN outside the log's range [" + std::to_string(truncation_)
                           + ", " + std::to_string(next_) + ")");
      lsn pos = at ? *at : last_valid + 1;
      if (!rec) {
        if (bad_keys.empty()) {
          first_bad = pos;
          first_bad_reason = rec.err().message();
        }
        bad_keys.emplace_back(key);
        continue;
      }
      if (!bad_keys.empty())
        return make_error(errc::corrupt,
                          "journal record at LSN " + std::to_string(first_bad)
                            + " is corrupt (" + first_bad_reason
                            + ") but a valid record follows at LSN "
                            + std::to_string(pos)
                            + "; nothing was changed or applied: restore this "
                              "partition replica from its peers");
      last_valid = pos;
      ++out.records;
      visit_record(pos, *rec);
    }
    if (!more)
      return more.err();
  }

  // The undecided state a transaction's records left (step 4, and the
  // write-ahead tail's plan below).
  auto pending_of = [](const recovering_tx& t) {
    pending_tx p;
    p.first_lsn = t.first_lsn;
    if (t.prepare) {
      p.prepare_lsn = t.prepare_lsn;
      p.prepare_time = t.prepare->prepare_time;
    }
    for (const auto& [upos, u] : t.updates)
      p.updates.push_back(pending_update{
        upos, u.key, u.op, u.op ? op_digest(u.key, u.type, u.effect) : 0});
    return p;
  };

  // 2b. The write-ahead tail (docs/STORAGE.md, "The write-ahead tail"):
  //     records from LMDB's end on that a crash left only there are taken
  //     in as the journal's tail, as if just appended. Nothing is written
  //     (a node with no room left must still open and serve reads): their
  //     LMDB writes are planned against the state at LMDB's end and made
  //     by the next drain.
  const lsn lmdb_end = next_; // meta next_lsn
  std::uint64_t tail_file_size = 0;
  std::uint64_t tail_valid_bytes = 0;
  std::uint64_t adopted = 0;
  {
    auto bytes = env_->tail_read();
    if (!bytes && bytes.err().code() != errc::unavailable)
      return bytes.err();
    if (bytes && !bytes->empty()) {
      tail_file_size = bytes->size();
      auto parsed = parse_tail(*bytes);
      out.tail_stop_reason = std::move(parsed.stop_reason);
      tail_valid_bytes = parsed.valid_bytes;
      std::vector<std::pair<lsn, journal_record>> found;
      for (auto& [at, rec] : parsed.records) {
        if (at < lmdb_end)
          continue; // LMDB has it: drained before the crash
        if (found.empty() && at != lmdb_end)
          return make_error(errc::corrupt,
                            "the write-ahead tail of " + env_->path() + " resumes at LSN "
                              + std::to_string(at) + " but the journal ends before LSN "
                              + std::to_string(lmdb_end)
                              + ": the records in between are missing; nothing was changed: "
                                "restore this partition replica from its peers");
        found.emplace_back(at, std::move(rec));
      }
      if (!found.empty()) {
        for (const auto& [tx, t] : txs)
          pending_.emplace(tx, pending_of(t));
        std::vector<journal_record> records;
        records.reserve(found.size());
        for (const auto& [at, rec] : found)
          records.push_back(rec);
        auto plan = plan_append(records, false);
        if (!plan)
          return plan.err();
        if (!plan->lates.empty())
          return make_error(errc::corrupt, "the write-ahead tail of " + env_->path()
                                             + " holds a commit at or below the checkpoint "
                                               "time, which is never written there");
        take_into_tail(*plan, records);
        pending_.clear(); // rebuilt with every record at step 4
        for (auto& [at, rec] : found) {
          last_valid = at;
          ++out.records;
          visit_record(at, rec);
        }
        adopted = found.size();
      }
    }
  }
  out.tail_replayed = adopted;

  // 3. Cut a bad tail.
  if (!bad_keys.empty()) {
    if (auto st = cut_tail(bad_keys, first_bad); !st)
      return st.err();
    out.cut_records = bad_keys.size();
    out.cut_from = first_bad;
  }

  // 4. Undecided transactions, oldest first.
  for (auto& [tx, t] : txs) {
    pending_.emplace(tx, pending_of(t));
    out.undecided.push_back(recovered_tx{tx, t.first_lsn, std::move(t.prepare),
                                         t.prepare_lsn, std::move(t.updates)});
  }
  std::sort(out.undecided.begin(), out.undecided.end(),
            [](const recovered_tx& a, const recovered_tx& b) {
              return a.first_lsn < b.first_lsn;
            });

  // 5. Every committed op id still in the log has its `opids` entry. Only a
  //    store written before `opids` existed lacks some: add them.
  //    (The tail's are written by its drain.)
  {
    std::vector<recovered_op> in_lmdb;
    for (const auto& r : out.op_ids)
      if (r.commit_lsn < lmdb_end)
        in_lmdb.push_back(r);
    if (auto st = backfill_op_ids(in_lmdb); !st)
      return st.err();
  }
  decisions.erase(std::remove_if(decisions.begin(), decisions.end(),
                                 [&](const auto& d) { return d.second.at >= lmdb_end; }),
                  decisions.end());
  // 5b. Likewise the decision index, for a store written before it existed.
  auto backfilled = backfill_decisions(decisions);
  if (!backfilled)
    return backfilled.err();
  out.decisions_backfilled = *backfilled;

  // 6. What was read at open is what a restart finds: make it durable, so
  //    durable_lsn() starts honest in every mode.
  next_ = std::max(next_, last_valid + 1);
  if (auto st = env_->sync(); !st)
    return st.err();
  // The tail file: cut to its records when it holds some beyond LMDB
  // (dropping a torn last write, so that appends follow whole entries),
  // and synced; emptied when LMDB holds everything in it (it is synced).
  if (adopted > 0) {
    if (tail_valid_bytes < tail_file_size)
      if (auto st = env_->tail_truncate(tail_valid_bytes); !st)
        return st.err();
    if (auto st = env_->tail_sync(); !st)
      return st.err();
    tail_file_bytes_ = tail_valid_bytes;
  } else if (tail_file_size > 0) {
    if (auto st = env_->tail_truncate(0); !st)
      return st.err();
  }
  durable_ = next_ - 1;
  note_lmdb_room();

  out.max_commit_time = max_commit_;
  out.last_bloom_timestamp = last_bloom_;
  out.checkpoint_time = checkpoint_.time;
  out.truncation_lsn = truncation_;
  out.next_lsn = next_;
  return out;
}

status journal::cut_tail(const std::vector<std::string>& bad_keys,
                         lsn first_bad) {
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  for (const auto& k : bad_keys)
    if (auto d = (*txn)->del(store_db::journal, k); !d)
      return d.err();
  // Index entries of commits in the cut tail. Their keys are unknown (the
  // commit record is the corrupt part), so the whole index is scanned: rare
  // (only after a torn write) and bounded by the index size.
  auto cur = (*txn)->cursor(store_db::index);
  if (!cur)
    return cur.err();
  auto more = (*cur)->first();
  while (more && *more) {
    auto iv = decode_index_value((*cur)->value());
    if (!iv)
      return iv.err();
    if (iv->commit >= first_bad) {
      if (auto st = (*cur)->del(); !st)
        return st;
    }
    more = (*cur)->next();
  }
  if (!more)
    return more.err();
  // Op ids of commits in the cut tail: those transactions are undecided
  // again, so their ids must not count as committed. Whole scan, as above.
  auto ops = (*txn)->cursor(store_db::opids);
  if (!ops)
    return ops.err();
  more = (*ops)->first();
  while (more && *more) {
    auto e = decode_op_entry((*ops)->value());
    if (!e)
      return e.err();
    if (e->commit >= first_bad) {
      if (auto st = (*ops)->del(); !st)
        return st;
    }
    more = (*ops)->next();
  }
  if (!more)
    return more.err();
  // Decisions of the cut commits and aborts: undecided again. Whole scan.
  auto dec = (*txn)->cursor(store_db::decisions);
  if (!dec)
    return dec.err();
  more = (*dec)->first();
  while (more && *more) {
    auto e = decode_decision_entry((*dec)->value());
    if (!e)
      return e.err();
    if (e->at >= first_bad) {
      if (auto st = (*dec)->del(); !st)
        return st;
    }
    more = (*dec)->next();
  }
  if (!more)
    return more.err();
  return (*txn)->commit(commit_mode::durable);
}

expected<std::uint64_t> journal::backfill_decisions(
  const std::vector<std::pair<tx_id, decision_entry>>& found) {
  {
    auto txn = env_->begin(false);
    if (!txn)
      return txn.err();
    auto raw = (*txn)->get(store_db::meta, meta_decisions_kept_from);
    if (!raw)
      return raw.err();
    if (raw->has_value()) {
      auto h = decode_u64(**raw, "meta decisions_kept_from");
      if (!h)
        return h.err();
      decisions_kept_from_ = *h;
      return std::uint64_t{0};
    }
  }
  // Written before the decision index: the log's decisions go in, and the
  // horizon says that decisions folded into the checkpoint are unknown.
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  std::uint64_t n = 0;
  for (const auto& [tx, e] : found) {
    if (auto put = (*txn)->put(store_db::decisions, encode_tx_key(tx),
                               encode_decision_entry(e));
        !put)
      return put.err();
    ++n;
  }
  const std::uint64_t h = checkpoint_.sequence > 0 ? clock_top(checkpoint_.time) + 1 : 0;
  if (auto put = (*txn)->put(store_db::meta, meta_decisions_kept_from, encode_u64(h)); !put)
    return put.err();
  if (auto st = (*txn)->commit(commit_mode::lazy); !st) // recovery syncs next
    return st.err();
  decisions_kept_from_ = h;
  return n;
}

status journal::sweep_decisions(storage_txn& txn, std::uint64_t& dropped) {
  if (decisions_kept_from_ == 0)
    return {};
  const std::uint64_t budget = std::max(decisions_sweep_min, 2 * decisions_added_);
  auto cur = txn.cursor(store_db::decisions);
  if (!cur)
    return cur.err();
  auto more = decisions_sweep_from_.empty() ? (*cur)->first()
                                            : (*cur)->seek(decisions_sweep_from_);
  std::uint64_t seen = 0;
  for (; more && *more && seen < budget; ++seen) {
    auto e = decode_decision_entry((*cur)->value());
    if (!e)
      return e.err();
    if (e->time < decisions_kept_from_) {
      if (auto st = (*cur)->del(); !st)
        return st;
      ++dropped;
    }
    more = (*cur)->next(); // after a del: the entry that followed it
  }
  if (!more)
    return more.err();
  // Where the next sweep starts: here, or from the first entry again.
  decisions_sweep_from_ = *more ? std::string{(*cur)->key()} : std::string{};
  decisions_added_ = 0;
  return {};
}

status journal::backfill_op_ids(const std::vector<recovered_op>& ops) {
  if (ops.empty())
    return {};
  // A store written by this code has an entry for every committed op id in
  // the log, so the db is non-empty whenever `ops` is; an empty db with ops
  // in the log is a store from before `opids` existed. (Checking emptiness,
  // not each id, keeps recovery at its cost for long logs.)
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  auto st = (*txn)->stats(store_db::opids);
  if (!st)
    return st.err();
  if (st->entries != 0)
    return {}; // the transaction aborts: nothing was written
  for (const auto& r : ops)
    if (auto put = (*txn)->put(store_db::opids, encode_op_key(r.op),
                               encode_u64(r.commit_lsn));
        !put)
      return put;
  return (*txn)->commit(commit_mode::lazy); // recovery syncs next
}

// ---- writing ---------------------------------------------------------------

error journal::stopped_error() const {
  return *stopped_;
}

error journal::stop_after(const std::string& failed, lsn at, const error& cause) {
  stopped_ = make_error(errc::io_error,
                        "journal at " + env_->path() + " stopped after a failed " + failed
                          + " at LSN " + std::to_string(at) + " (" + cause.to_string()
                          + "); it refuses writes until reopened, because the log's state "
                            "on disk is unknown");
  return *stopped_;
}

status journal::commit_or_stop(storage_txn& txn, lsn last, const char* what,
                               commit_mode mode) {
  auto st = txn.commit(mode);
  if (st)
    return {};
  // LMDB reports a full map while allocating pages, before anything is
  // written: the store is unchanged and the journal may continue.
  if (st.err().code() == errc::storage_full)
    return st;
  return stop_after(std::string{mode == commit_mode::durable ? "commit and sync" : "commit"}
                      + " of " + what,
                    last, st.err());
}

expected<journal::append_plan>
journal::plan_append(const std::vector<journal_record>& batch, bool with_entries) {
  append_plan plan{pending_};
  plan.max_commit = max_commit_;
  plan.last_bloom = last_bloom_;
  auto& new_decided = decided_scratch_; // its capacity is kept: no allocation per append
  new_decided.clear();
  if (with_entries)
    tail_buf_.clear();
  plan.first = next_;
  lsn at = plan.first;
  plan.puts.reserve(batch.size() * 3);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& rec = batch[i];
    encode_record(rec, scratch_);
    if (with_entries)
      append_tail_entry(tail_buf_, at, scratch_);
    plan.puts.push_back(planned_put{store_db::journal, lsn_key(at), scratch_, put_mode::append});
    if (auto* u = std::get_if<update_record>(&rec)) {
      plan.staged.touch(u->tx, at).updates.push_back(
        pending_update{at, u->key, u->op,
                       u->op ? op_digest(u->key, u->type, u->effect) : 0});
    } else if (auto* p = std::get_if<prepare_record>(&rec)) {
      auto& t = plan.staged.touch(p->tx, at);
      t.prepare_lsn = at;
      t.prepare_time = p->prepare_time;
    } else if (auto* c = std::get_if<commit_record>(&rec)) {
      plan.max_commit.merge(c->commit_time);
      plan.last_bloom = c->bloom_timestamp;
      plan.saw_commit = true;
      new_decided.emplace_back(at, clock_top(c->commit_time));
      // A late commit (checked by append): folded in the append, not indexed.
      const bool late_commit = checkpoint_.sequence > 0 && c->commit_time <= checkpoint_.time;
      if (late_commit)
        plan.lates.emplace_back(i, at);
      if (auto tx = plan.staged.take(c->tx)) {
        // Prepared here (two-phase): the other participants may ask.
        if (tx->prepare_lsn) {
          decision_entry d{tx_outcome::committed, at, clock_top(c->commit_time)};
          plan.decisions.emplace_back(encode_tx_key(c->tx), d);
          plan.puts.push_back(planned_put{store_db::decisions, plan.decisions.back().first,
                                          encode_decision_entry(d)});
          ++plan.decisions_added;
        }
        for (const auto& u : tx->updates) {
          auto k = encode_object_key(u.key); // checked when it was appended
          if (!k)
            return k.err();
          if (!late_commit) {
            plan.index_entries.emplace_back(*k, index_value{at, u.position});
            plan.puts.push_back(planned_put{store_db::index, std::move(*k),
                                            encode_index_value({at, u.position})});
          }
          // The exact record behind the FBF: this id committed at `at`.
          if (u.op) {
            op_entry e{at, u.digest};
            plan.op_ids.emplace_back(encode_op_key(*u.op), e);
            plan.puts.push_back(planned_put{store_db::opids, plan.op_ids.back().first,
                                            encode_op_entry(e)});
          }
        }
      }
    } else if (auto* tr = std::get_if<term_record>(&rec)) {
      plan.new_terms.emplace_back(at, tr->term());
    } else if (std::holds_alternative<fence_record>(rec)) {
      // Nothing to index: the partition keeps its fences in memory, and
      // recovery finds them in the log (recovery_result::fenced).
    } else {
      const auto& a = std::get<abort_record>(rec);
      new_decided.emplace_back(at, 0);
      if (auto tx = plan.staged.take(a.tx); tx && tx->prepare_lsn) {
        decision_entry d{tx_outcome::aborted, at, tx->prepare_time};
        plan.decisions.emplace_back(encode_tx_key(a.tx), d);
        plan.puts.push_back(planned_put{store_db::decisions, plan.decisions.back().first,
                                        encode_decision_entry(d)});
        ++plan.decisions_added;
      }
    }
    ++at;
  }
  plan.end = at;
  for (const auto& put : plan.puts)
    plan.put_bytes += put.key.size() + put.value.size();
  return plan;
}

void journal::take_into_tail(append_plan& plan, const std::vector<journal_record>& records) {
  if (tail_records_.empty())
    tail_first_ = plan.first;
  tail_records_.insert(tail_records_.end(), records.begin(), records.end());
  for (auto& put : plan.puts)
    tail_puts_.push_back(std::move(put));
  tail_put_bytes_ += plan.put_bytes;
  for (auto& [k, e] : plan.op_ids)
    tail_opids_[std::move(k)] = e;
  for (auto& [k, d] : plan.decisions)
    tail_decisions_[std::move(k)] = d;
  for (auto& [k, v] : plan.index_entries)
    tail_index_[std::move(k)].push_back(v);
}

void journal::note_lmdb_room() {
  auto st = env_->stats();
  if (st && st->map_size >= st->used_bytes)
    lmdb_room_ = st->map_size - st->used_bytes;
}

void journal::apply_plan(append_plan& plan) {
  plan.staged.apply_to(pending_);
  decisions_added_ += plan.decisions_added;
  for (auto& [pos, t] : plan.new_terms)
    terms_[pos] = std::move(t);
  decided_.insert(decided_.end(), decided_scratch_.begin(), decided_scratch_.end());
  next_ = plan.end;
  if (plan.saw_commit) {
    max_commit_ = std::move(plan.max_commit);
    last_bloom_ = std::move(plan.last_bloom);
  }
}

expected<lsn_range> journal::append(const std::vector<journal_record>& batch,
                                    const late_fold_fn& late) {
  if (stopped_)
    return stopped_error();
  if (batch.empty())
    return lsn_range{next_, next_ - 1};
  bool has_late = false;
  for (const auto& rec : batch) {
    if (auto* u = std::get_if<update_record>(&rec)) {
      if (auto k = encode_object_key(u->key); !k)
        return k.err();
    } else if (auto* c = std::get_if<commit_record>(&rec)) {
      // Such a commit would be invisible: readers take every commit <= the
      // checkpoint time from the checkpoint store. Its arrival means the
      // checkpoint time was set above the partition's safe time: allowed
      // only for a set-aside transaction prepared here, whose effects
      // `late` folds into the checkpoint store (issue 13).
      auto p = pending_.find(c->tx);
      const bool late_ok = late && p != pending_.end() && p->second.prepare_lsn;
      if (checkpoint_.sequence > 0 && c->commit_time <= checkpoint_.time) {
        if (!late_ok)
          return make_error(errc::invalid_argument,
                            "commit time " + to_string(c->commit_time)
                              + " is <= the checkpoint time "
                              + to_string(checkpoint_.time)
                              + ": the checkpoint time must not exceed the "
                                "partition's safe time");
        has_late = true;
      }
    }
  }
  if (!tail_on_)
    return append_direct(batch, late, mode_ == durability::full);
  // A late commit folds into the checkpoint store in its own transaction:
  // after the tail, durably (rare: a set-aside transaction's commit).
  if (has_late) {
    if (auto st = drain_tail(); !st)
      return st.err();
    return append_direct(batch, late, mode_ != durability::none);
  }
  // The write-ahead tail: bounded in memory even when drains fail.
  if (tail_records_.size() >= 4 * tail_drain_records_)
    if (auto st = drain_tail(); !st)
      return st.err();
  auto plan = plan_append(batch, true);
  if (!plan)
    return plan.err();
  // Near a full map the batch goes straight to LMDB, which says exactly
  // whether it fits: a write the map cannot take is refused at once, never
  // acknowledged from the tail. (Pages of overhead: twice the bytes.)
  if (2 * (tail_put_bytes_ + plan->put_bytes) + (std::uint64_t{1} << 20) > lmdb_room_) {
    if (auto st = drain_tail(); !st)
      return st.err();
    return append_direct(batch, late, mode_ != durability::none);
  }
  if (auto st = env_->tail_append(tail_buf_); !st) {
    if (st.err().code() == errc::storage_full)
      return st.err(); // nothing of the batch was kept
    return stop_after("write-ahead tail append", plan->end - 1, st.err());
  }
  tail_file_bytes_ += tail_buf_.size();
  if (mode_ == durability::full) {
    if (auto st = env_->tail_sync(); !st)
      return stop_after("sync", plan->end - 1, st.err());
  }
  take_into_tail(*plan, batch);
  const lsn first = plan->first;
  apply_plan(*plan);
  if (mode_ == durability::full)
    durable_ = next_ - 1;
  // The batch is in the tail file: a failed drain is the next call's
  // concern (a stopped journal refuses it; a full map keeps the tail).
  if (tail_records_.size() >= tail_drain_records_)
    (void)drain_tail();
  return lsn_range{first, next_ - 1};
}

expected<lsn_range> journal::append_direct(const std::vector<journal_record>& batch,
                                           const late_fold_fn& late, bool durable) {
  auto plan = plan_append(batch, false);
  if (!plan)
    return plan.err();
  if (!plan->lates.empty() && !late)
    return make_error(errc::invalid_argument,
                      "a commit at or below the checkpoint time with nothing to fold it");
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  for (const auto& [i, at] : plan->lates)
    if (auto st = late(**txn, std::get<commit_record>(batch[i]), at); !st)
      return st.err();
  if (auto st = put_all(**txn, plan->puts, plan->end); !st)
    return st.err();
  if (auto st = commit_or_stop(**txn, plan->end - 1, "an append",
                               durable ? commit_mode::durable : commit_mode::lazy);
      !st)
    return st.err();
  const lsn first = plan->first;
  apply_plan(*plan);
  // durable_lsn() rises at append in mode full only; in the other modes a
  // sync() or a sync job raises it, as for any append (the owner applies a
  // batch when the sync it waits for reports it: partition_core).
  if (mode_ == durability::full)
    durable_ = next_ - 1;
  if (tail_on_)
    note_lmdb_room();
  return lsn_range{first, next_ - 1};
}

status journal::put_all(storage_txn& txn, const std::vector<planned_put>& puts, lsn end) {
  for (const auto& put : puts)
    if (auto st = txn.put(put.db, put.key, put.value, put.mode); !st)
      return st;
  return txn.put(store_db::meta, meta_next_lsn, encode_u64(end));
}

status journal::drain_tail() {
  if (tail_records_.empty())
    return {};
  if (stopped_)
    return stopped_error();
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  if (auto st = put_all(**txn, tail_puts_, next_); !st)
    return st;
  // Lazily: the tail file holds these records until the databases are
  // synced (reset_tail_file).
  if (auto st = commit_or_stop(**txn, next_ - 1, "a move of the write-ahead tail into LMDB",
                               commit_mode::lazy);
      !st)
    return st;
  tail_records_.clear();
  tail_puts_.clear();
  tail_put_bytes_ = 0;
  tail_opids_.clear();
  tail_decisions_.clear();
  tail_index_.clear();
  note_lmdb_room();
  if (tail_file_bytes_ >= tail_file_limit_) {
    if (mode_ != durability::none) {
      if (auto st = env_->sync(); !st)
        return stop_after("sync", next_ - 1, st.err());
    }
    reset_tail_file();
  }
  return {};
}

void journal::reset_tail_file() {
  // A failed reset leaves entries LMDB holds already: replay skips them,
  // and the next checkpoint or drain tries again.
  if (tail_records_.empty() && env_->tail_truncate(0))
    tail_file_bytes_ = 0;
}

status journal::copy_to(const std::string& dir) {
  if (auto st = drain_tail(); !st)
    return st;
  return env_->copy_to(dir);
}

status journal::sync() {
  if (stopped_)
    return stopped_error();
  if ((mode_ != durability::batch && mode_ != durability::periodic)
      || durable_ + 1 >= next_)
    return {};
  if (auto st = tail_on_ ? env_->tail_sync() : env_->sync(); !st)
    return stop_after("sync", next_ - 1, st.err());
  durable_ = next_ - 1;
  return {};
}

std::optional<journal::sync_job> journal::background_sync() const {
  if (stopped_ || (mode_ != durability::batch && mode_ != durability::periodic)
      || durable_ + 1 >= next_ || !env_->sync_from_any_thread())
    return std::nullopt;
  return sync_job{next_ - 1, env_, tail_on_};
}

status journal::synced(lsn upto, const status& outcome) {
  if (stopped_)
    return stopped_error();
  if (!outcome)
    return stop_after("sync", upto, outcome.err());
  durable_ = std::max(durable_, std::min(upto, next_ - 1));
  return {};
}

status journal::apply_checkpoint(
  const truncation_plan& plan,
  const std::function<status(storage_txn&)>& writes) {
  if (stopped_)
    return stopped_error();
  // The checkpoint's transaction edits the index and the log: the tail's
  // records go in first.
  if (auto st = drain_tail(); !st)
    return st;
  relocated_.clear();
  const lsn t = plan.new_truncation_lsn;
  if (t < truncation_ || t > next_)
    return make_error(errc::invalid_argument,
                      "truncation LSN " + std::to_string(t) + " is not in ["
                        + std::to_string(truncation_) + ", "
                        + std::to_string(next_) + "]");
  std::unordered_map<tx_id, const std::vector<journal_record>*, tx_id_hash> moving;
  for (const auto& [tx, records] : plan.relocate) {
    auto p = pending_.find(tx);
    std::size_t updates = 0, prepares = 0;
    for (const auto& r : records) {
      if (record_tx(r) != tx)
        return make_error(errc::invalid_argument, "a relocated record of another transaction");
      updates += std::holds_alternative<update_record>(r) ? 1 : 0;
      prepares += std::holds_alternative<prepare_record>(r) ? 1 : 0;
    }
    if (p == pending_.end() || !p->second.prepare_lsn || prepares != 1
        || updates != p->second.updates.size() || updates + prepares != records.size())
      return make_error(errc::invalid_argument,
                        "relocation of <" + std::to_string(tx.origin) + ","
                          + std::to_string(tx.seq)
                          + ">: not a prepared transaction with exactly these records");
    moving.emplace(tx, &records);
  }
  for (const auto& [tx, p] : pending_)
    if (p.first_lsn < t && moving.count(tx) == 0)
      return make_error(errc::invalid_argument,
                        "truncation LSN " + std::to_string(t)
                          + " would drop records of undecided transaction "
                          + "<" + std::to_string(tx.origin) + ","
                          + std::to_string(tx.seq) + "> from LSN "
                          + std::to_string(p.first_lsn));
  if (checkpoint_.sequence > 0 && !(checkpoint_.time <= plan.checkpoint_time))
    return make_error(errc::invalid_argument,
                      "checkpoint time " + to_string(plan.checkpoint_time)
                        + " is not >= the previous one "
                        + to_string(checkpoint_.time));
  if (plan.decisions_kept_from > clock_top(plan.checkpoint_time) + 1)
    return make_error(errc::invalid_argument,
                      "decisions horizon " + std::to_string(plan.decisions_kept_from)
                        + " is above the checkpoint time "
                        + to_string(plan.checkpoint_time)
                        + ": decisions still in the log would be dropped");

  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  if (auto st = writes(**txn); !st)
    return st;
  for (const auto& [key, iv] : plan.unindex)
    if (auto d = (*txn)->del_dup(store_db::index, key, encode_index_value(iv));
        !d)
      return d.err();
  for (const auto& [id, commit] : plan.drop_op_ids) {
    auto k = encode_op_key(id);
    auto got = (*txn)->get(store_db::opids, k);
    if (!got)
      return got.err();
    if (!got->has_value())
      continue;
    auto e = decode_op_entry(**got);
    if (!e)
      return e.err();
    if (e->commit != commit)
      continue; // the id committed again later (another bucket): keep it
    if (auto d = (*txn)->del(store_db::opids, k); !d)
      return d.err();
  }
  if (t > truncation_) {
    auto cur = (*txn)->cursor(store_db::journal);
    if (!cur)
      return cur.err();
    auto more = (*cur)->seek(lsn_key(truncation_));
    while (more && *more) {
      auto at = decode_lsn_key((*cur)->key());
      if (!at)
        return at.err();
      if (*at >= t)
        break;
      if (auto st = (*cur)->del(); !st)
        return st;
      more = (*cur)->next();
    }
    if (!more)
      return more.err();
  }
  // Set-aside transactions below the cut: their records again at the end
  // (issue 13), so the prefix goes while they stay undecided.
  std::vector<relocation> moved;
  lsn end = next_;
  char lsn_buf[lsn_key_size];
  for (const auto& [tx, records] : plan.relocate) {
    relocation r{tx, {}, 0};
    for (const auto& rec : *moving.at(tx)) {
      encode_record(rec, scratch_);
      put_be64(lsn_buf, end);
      if (auto st = (*txn)->put(store_db::journal, std::string_view{lsn_buf, lsn_key_size},
                                scratch_, put_mode::append);
          !st)
        return st;
      if (std::holds_alternative<prepare_record>(rec))
        r.prepare = end;
      else
        r.updates.push_back(end);
      ++end;
    }
    moved.push_back(std::move(r));
  }
  if (end != next_)
    if (auto st = (*txn)->put(store_db::meta, meta_next_lsn, encode_u64(end)); !st)
      return st;
  // The decision index: the horizon rises, and a bounded sweep drops the
  // entries below it (docs/FORMAT.md, "Decision index").
  const std::uint64_t kept_before = decisions_kept_from_;
  std::uint64_t decisions_dropped = 0;
  if (plan.decisions_kept_from > decisions_kept_from_) {
    if (auto st = (*txn)->put(store_db::meta, meta_decisions_kept_from,
                              encode_u64(plan.decisions_kept_from));
        !st)
      return st;
    decisions_kept_from_ = plan.decisions_kept_from;
  }
  const std::string sweep_before = decisions_sweep_from_;
  const std::uint64_t added_before = decisions_added_;
  auto undo_decisions = [&] {
    decisions_kept_from_ = kept_before;
    decisions_sweep_from_ = sweep_before;
    decisions_added_ = added_before;
  };
  if (auto st = sweep_decisions(**txn, decisions_dropped); !st) {
    undo_decisions();
    return st;
  }
  checkpoint_state next_state;
  next_state.sequence = checkpoint_.sequence + 1;
  next_state.time = plan.checkpoint_time;
  next_state.max_commit_time = max_commit_;
  next_state.last_bloom_timestamp = last_bloom_;
  if (auto st = (*txn)->put(store_db::meta, meta_truncation_lsn, encode_u64(t));
      !st) {
    undo_decisions();
    return st;
  }
  // The term of the records folded now: term_at() answers for them (and for
  // the last record, once the whole log is folded) from meta.
  const copy_term folded = t > truncation_ ? term_at(t - 1) : folded_term_;
  if (folded != folded_term_)
    if (auto st = (*txn)->put(store_db::meta, meta_folded_term, encode_term_value(folded)); !st) {
      undo_decisions();
      return st;
    }
  if (auto st = (*txn)->put(store_db::meta, meta_checkpoint,
                            encode_checkpoint_state(next_state));
      !st) {
    undo_decisions();
    return st;
  }
  // A checkpoint is rare and replaces log records: make it durable (it also
  // covers earlier lazy appends), except in mode none.
  auto mode = mode_ == durability::none ? commit_mode::lazy
                                        : commit_mode::durable;
  if (auto st = (*txn)->commit(mode); !st) {
    undo_decisions();
    if (st.err().code() == errc::storage_full)
      return st;
    return stop_after("checkpoint commit and sync", next_ - 1, st.err());
  }
  truncation_ = t;
  folded_term_ = folded;
  terms_.erase(terms_.begin(), terms_.lower_bound(t));
  while (!decided_.empty() && decided_.front().first < t)
    decided_.pop_front();
  checkpoint_ = std::move(next_state);
  decisions_dropped_ += decisions_dropped;
  // The relocated transactions' records are where they were appended.
  for (const auto& m : moved) {
    auto& p = pending_.at(m.tx);
    p.first_lsn = m.updates.empty() ? m.prepare : std::min(m.updates.front(), m.prepare);
    p.prepare_lsn = m.prepare;
    for (std::size_t u = 0; u < m.updates.size(); ++u)
      p.updates[u].position = m.updates[u];
  }
  next_ = end;
  relocated_ = std::move(moved);
  if (mode == commit_mode::durable)
    durable_ = next_ - 1;
  // LMDB now holds every record durably (mode none promises nothing).
  if (tail_on_) {
    reset_tail_file();
    note_lmdb_room();
  }
  return {};
}

status journal::commit_synced_meta(storage_txn& txn, const char* what) {
  auto st = txn.commit(commit_mode::durable);
  if (!st && st.err().code() != errc::storage_full)
    stopped_ = make_error(errc::io_error, "journal at " + env_->path()
                                            + " stopped after a failed commit and sync of "
                                            + what + " (" + st.err().to_string()
                                            + "); it refuses writes until reopened");
  return st;
}

status journal::save_promised_term(const copy_term& t, std::uint64_t epoch) {
  if (stopped_)
    return stopped_error();
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  if (auto st = (*txn)->put(store_db::meta, meta_promised_term, encode_term_value(t)); !st)
    return st;
  if (auto st = (*txn)->put(store_db::meta, meta_promised_epoch, encode_u64(epoch)); !st)
    return st;
  // Synced whatever the durability mode: a promise is relied on by the
  // round that counted it, across a crash of this copy.
  if (auto st = commit_synced_meta(**txn, "its promised term"); !st)
    return st;
  promised_term_ = t;
  promised_epoch_ = epoch;
  return {};
}

status journal::save_led_set(const std::optional<led_copy_set>& s) {
  if (stopped_)
    return stopped_error();
  auto txn = env_->begin(true);
  if (!txn)
    return txn.err();
  if (s) {
    if (auto st = (*txn)->put(store_db::meta, meta_led_set, encode_led_set_value(*s)); !st)
      return st;
  } else if (auto gone = (*txn)->del(store_db::meta, meta_led_set); !gone) {
    return gone.err();
  }
  // Synced: a handoff's receiver relies on it (docs/REPLICATION.md).
  if (auto st = commit_synced_meta(**txn, "its led copy set"); !st)
    return st;
  led_set_ = s;
  return {};
}

// ---- reading ---------------------------------------------------------------

lsn journal::end_of_commits_within(const vector_clock& c) const {
  const std::uint64_t top = clock_top(c);
  for (auto it = decided_.rbegin(); it != decided_.rend(); ++it)
    if (it->second <= top)
      return it->first + 1;
  return truncation_;
}

copy_term journal::term_at(lsn at) const {
  auto it = terms_.upper_bound(at);
  if (it == terms_.begin())
    return folded_term_;
  return std::prev(it)->second;
}

expected<std::optional<lsn>> journal::find_committed_op(const op_id& id) {
  auto e = find_committed_op_entry(id);
  if (!e)
    return e.err();
  if (!*e)
    return std::optional<lsn>{};
  return std::optional<lsn>{(*e)->commit};
}

expected<std::optional<op_entry>>
journal::find_committed_op_entry(const op_id& id) {
  const std::string key = encode_op_key(id);
  if (auto t = tail_opids_.find(key); t != tail_opids_.end())
    return std::optional<op_entry>{t->second};
  auto txn = env_->begin(false);
  if (!txn)
    return txn.err();
  auto got = (*txn)->get(store_db::opids, key);
  if (!got)
    return got.err();
  if (!got->has_value())
    return std::optional<op_entry>{};
  auto e = decode_op_entry(**got);
  if (!e)
    return e.err();
  return std::optional<op_entry>{std::move(*e)};
}

expected<std::optional<decision_entry>> journal::find_decision(const tx_id& tx) {
  const std::string key = encode_tx_key(tx);
  if (auto t = tail_decisions_.find(key); t != tail_decisions_.end())
    return std::optional<decision_entry>{t->second};
  auto txn = env_->begin(false);
  if (!txn)
    return txn.err();
  auto got = (*txn)->get(store_db::decisions, key);
  if (!got)
    return got.err();
  if (!got->has_value())
    return std::optional<decision_entry>{};
  auto e = decode_decision_entry(**got);
  if (!e)
    return e.err();
  return std::optional<decision_entry>{*e};
}

expected<std::vector<committed_effect>>
journal::read_committed(const object_key& key, lsn after_lsn) {
  auto enc = encode_object_key(key);
  if (!enc)
    return enc.err();
  std::vector<committed_effect> out;
  if (after_lsn == std::numeric_limits<lsn>::max())
    return out;
  auto txn = env_->begin(false);
  if (!txn)
    return txn.err();
  auto cur = (*txn)->cursor(store_db::index);
  if (!cur)
    return cur.err();
  lsn commit_at = 0;
  commit_record commit;
  char key_buf[lsn_key_size];
  const bool has_checkpoint = checkpoint_.sequence > 0;
  auto fetch = [&](lsn at) -> expected<journal_record> {
    if (!tail_records_.empty() && at >= tail_first_ && at < next_)
      return tail_records_[at - tail_first_]; // the write-ahead tail's
    put_be64(key_buf, at);
    auto raw = (*txn)->get(store_db::journal,
                           std::string_view{key_buf, lsn_key_size});
    if (!raw)
      return raw.err();
    if (!raw->has_value())
      return make_error(errc::corrupt,
                        "index entry of " + key.bucket + "/" + key.key
                          + " points at LSN " + std::to_string(at)
                          + ", which the journal does not hold");
    auto rec = decode_record(**raw);
    if (!rec)
      return corrupt_at(at, rec.err());
    return rec;
  };
  // LMDB's index entries of the key, then the write-ahead tail's (their
  // commits come after every commit in LMDB).
  std::vector<index_value> entries;
  auto more = (*cur)->seek_dup(*enc, encode_index_value({after_lsn + 1, 0}));
  for (; more && *more; more = (*cur)->next_dup()) {
    auto iv = decode_index_value((*cur)->value());
    if (!iv)
      return iv.err();
    entries.push_back(*iv);
  }
  if (!more)
    return more.err();
  if (auto t = tail_index_.find(*enc); t != tail_index_.end())
    for (const auto& iv : t->second)
      if (iv.commit > after_lsn)
        entries.push_back(iv);
  for (const auto* iv = entries.data(); iv != entries.data() + entries.size(); ++iv) {
    if (iv->commit != commit_at) {
      auto rec = fetch(iv->commit);
      if (!rec)
        return rec.err();
      auto* c = std::get_if<commit_record>(&*rec);
      if (!c)
        return make_error(errc::corrupt, "index entry points at LSN "
                                           + std::to_string(iv->commit)
                                           + ", which is not a commit record");
      commit = std::move(*c);
      commit_at = iv->commit;
    }
    // Folded commits lose their index entries with the checkpoint; the
    // check keeps the promise even for one whose entry survived (a cut
    // tail, then a re-sent commit).
    if (has_checkpoint && commit.commit_time <= checkpoint_.time)
      continue;
    auto rec = fetch(iv->update);
    if (!rec)
      return rec.err();
    auto* u = std::get_if<update_record>(&*rec);
    if (!u || u->tx != commit.tx || u->key != key)
      return make_error(errc::corrupt,
                        "index entry points at LSN " + std::to_string(iv->update)
                          + ", which is not an update of " + key.bucket + "/"
                          + key.key + " by the committing transaction");
    out.push_back(committed_effect{iv->update, u->tx, commit.commit_time,
                                   std::move(u->effect), iv->commit, u->type});
  }
  return out;
}

expected<std::vector<committed_effect>>
journal::scan_committed(const object_key& key, lsn after_lsn) {
  struct open_update {
    lsn at;
    crdt_effect effect;
    crdt_type type;
  };
  std::unordered_map<tx_id, std::vector<open_update>, tx_id_hash> open;
  std::vector<committed_effect> out;
  const bool has_checkpoint = checkpoint_.sequence > 0;
  auto st = scan(truncation_, next_, [&](lsn at, const journal_record& rec) {
    if (auto* u = std::get_if<update_record>(&rec)) {
      if (u->key == key)
        open[u->tx].push_back({at, u->effect, u->type});
    } else if (auto* c = std::get_if<commit_record>(&rec)) {
      auto it = open.find(c->tx);
      if (it == open.end())
        return true;
      bool folded = has_checkpoint && c->commit_time <= checkpoint_.time;
      if (!folded && at > after_lsn)
        for (auto& ou : it->second)
          out.push_back(committed_effect{ou.at, c->tx, c->commit_time,
                                         std::move(ou.effect), at, ou.type});
      open.erase(it);
    } else if (auto* a = std::get_if<abort_record>(&rec)) {
      open.erase(a->tx);
    }
    return true;
  });
  if (!st)
    return st.err();
  return out;
}

status journal::scan(lsn from, lsn to,
                     const std::function<bool(lsn, const journal_record&)>& visit) {
  if (from >= to)
    return {};
  // The write-ahead tail's records are read in memory: [tail_first_, next_).
  const lsn lmdb_end = tail_records_.empty() ? to : std::min(to, tail_first_);
  if (from < lmdb_end) {
    bool stopped_early = false;
    if (auto st = scan_lmdb(from, lmdb_end, visit, stopped_early); !st || stopped_early)
      return st;
  }
  if (tail_records_.empty())
    return {};
  for (lsn at = std::max(from, tail_first_); at < to && at < next_; ++at)
    if (!visit(at, tail_records_[at - tail_first_]))
      break;
  return {};
}

status journal::scan_lmdb(lsn from, lsn to,
                          const std::function<bool(lsn, const journal_record&)>& visit,
                          bool& stopped_early) {
  auto txn = env_->begin(false);
  if (!txn)
    return txn.err();
  auto cur = (*txn)->cursor(store_db::journal);
  if (!cur)
    return cur.err();
  auto more = (*cur)->seek(lsn_key(from));
  for (; more && *more; more = (*cur)->next()) {
    auto at = decode_lsn_key((*cur)->key());
    if (!at)
      return at.err();
    if (*at >= to)
      break;
    auto rec = decode_record((*cur)->value());
    if (!rec)
      return corrupt_at(*at, rec.err());
    if (!visit(*at, *rec)) {
      stopped_early = true;
      break;
    }
  }
  if (!more)
    return more.err();
  return {};
}

expected<journal_stats> journal::stats() {
  auto txn = env_->begin(false);
  if (!txn)
    return txn.err();
  journal_stats out;
  auto j = (*txn)->stats(store_db::journal);
  if (!j)
    return j.err();
  auto i = (*txn)->stats(store_db::index);
  if (!i)
    return i.err();
  auto c = (*txn)->stats(store_db::checkpoint);
  if (!c)
    return c.err();
  auto o = (*txn)->stats(store_db::opids);
  if (!o)
    return o.err();
  auto d = (*txn)->stats(store_db::decisions);
  if (!d)
    return d.err();
  auto e = env_->stats();
  if (!e)
    return e.err();
  out.journal = *j;
  out.index = *i;
  out.checkpoint = *c;
  out.opids = *o;
  out.decisions = *d;
  out.env = *e;
  return out;
}

} // namespace tally
