#include "checkpoint/checkpoint_store.hpp"

#include "common/bounded_input_archive.hpp"

#include <algorithm>
#include <istream>
#include <map>
#include <ostream>
#include <unordered_map>
#include <vector>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>

#include "cache/materializer.hpp"
#include "journal/codec.hpp"
#include "common/membuf.hpp"

namespace tally {

const char* to_string(truncation_limit l) noexcept {
  switch (l) {
    case truncation_limit::log_end: return "log_end";
    case truncation_limit::replicated: return "replicated";
    case truncation_limit::undecided: return "undecided";
    case truncation_limit::unfolded_commit: return "unfolded_commit";
    case truncation_limit::fbf_window: return "fbf_window";
  }
  return "unknown";
}

std::string encode_checkpoint_entry(const checkpoint_entry& e) {
  std::string payload;
  {
    detail::string_sink sink{payload};
    std::ostream os{&sink};
    cereal::PortableBinaryOutputArchive ar{os};
    ar(e.version.time, e.version.object.encode(), e.base_commit_lsn);
  }
  std::string out;
  append_frame(out, checkpoint_entry_version, payload);
  return out;
}

expected<checkpoint_entry> decode_checkpoint_entry(std::string_view bytes) {
  auto payload = open_frame(bytes, checkpoint_entry_version, "checkpoint entry");
  if (!payload)
    return payload.err();
  vector_clock time;
  std::string object_bytes;
  lsn base = 0;
  std::size_t trailing = 0;
  try {
    bounded_input_archive ar{*payload}; // lengths checked before allocating
    ar(time, object_bytes, base);
    trailing = ar.remaining();
  } catch (const std::exception& e) {
    return make_error(errc::corrupt,
                      std::string{"checkpoint entry: undecodable payload: "}
                        + e.what());
  }
  if (trailing != 0)
    return make_error(errc::corrupt, "checkpoint entry: trailing bytes");
  auto object = crdt_object::decode(object_bytes);
  if (!object)
    return make_error(errc::corrupt,
                      "checkpoint entry: " + object.err().message());
  return checkpoint_entry{object_version{std::move(*object), std::move(time)},
                          base};
}

namespace {

// What the checkpoint scan keeps of one transaction found in the log.
struct scanned_update {
  lsn at = 0;
  object_key key;
  crdt_type type = crdt_type::counter;
  crdt_effect effect;
  std::optional<op_id> op;
};

struct scanned_tx {
  lsn first = 0;
  lsn last = 0;   // its last record in the log
  lsn commit = 0; // 0: no commit record in the log
  bool aborted = false;
  bool has_op = false;
  vector_clock commit_time;
  std::uint64_t wall_time_us = 0;
  std::vector<scanned_update> updates;
  std::vector<journal_record> records; // set-aside ones only: to relocate
};

// The commits folded into one key's entry.
struct key_fold {
  crdt_type type = crdt_type::counter;
  std::vector<committed_effect> effects;
  lsn last_commit = 0;
};

// The checkpoint entry of the encoded key `enc`, or the bottom object of
// `type` (at the empty clock, base LSN 0) when the store has none yet.
expected<checkpoint_entry> entry_or_bottom(storage_txn& txn, std::string_view enc,
                                           crdt_type type) {
  auto raw = txn.get(store_db::checkpoint, enc);
  if (!raw)
    return raw.err();
  if (raw->has_value())
    return decode_checkpoint_entry(**raw);
  auto bottom = crdt_object::make(type);
  if (!bottom)
    return bottom.err();
  return checkpoint_entry{object_version{std::move(*bottom), vector_clock{}}, 0};
}

} // namespace

expected<checkpoint_report>
checkpoint_store::checkpoint(const checkpoint_bounds& bounds) {
  if (log_.stopped())
    return make_error(errc::io_error,
                      "the journal is stopped after a failed write; reopen it "
                      "before checkpointing");
  const checkpoint_state& prev = log_.checkpoint();
  const bool had_checkpoint = prev.sequence > 0;
  const vector_clock& cp_time = bounds.checkpoint_time;
  if (had_checkpoint && !(prev.time <= cp_time))
    return make_error(errc::invalid_argument,
                      "checkpoint time " + to_string(cp_time)
                        + " is not >= the previous checkpoint time "
                        + to_string(prev.time)
                        + "; checkpoints only move forward");

  // 1. Read the log once: what each transaction did and how it ended, up
  //    to the last commit that may be <= C, or the last abort
  //    (journal::end_of_commits_within): every commit to fold and every
  //    aborted transaction to drop lies below it, and what lies above stays
  //    (the cut is kept at or below it). The log holds the retention window's
  //    records (60 s by default), of which a checkpoint folds one interval's
  //    (10 s): reading it all took 2-7 ms per partition at half of a node's
  //    peak load (docs/PERFORMANCE.md, "Latency at half load"). With
  //    set-aside transactions the whole log is read: they move only whole.
  const lsn scan_to = bounds.set_aside.empty() ? log_.end_of_commits_within(cp_time)
                                               : log_.next_lsn();
  std::unordered_map<tx_id, scanned_tx, tx_id_hash> txs;
  std::vector<lsn> positions;
  auto st = log_.scan(log_.truncation_lsn(), scan_to,
                      [&](lsn at, const journal_record& rec) {
                        positions.push_back(at);
                        // A term record belongs to no transaction: it
                        // holds nothing back (its term is in meta
                        // folded_term once folded, journal::term_at).
                        if (std::holds_alternative<term_record>(rec))
                          return true;
                        // Nor does a fence: it may name a transaction with
                        // no other record here (never prepared here), which
                        // would look undecided for ever. It does not move
                        // with a set-aside transaction either (relocation
                        // moves its updates and prepare only): the
                        // partition keeps the fence in memory
                        // (partition_core::fenced), the record only serves
                        // a restart before it is truncated.
                        if (std::holds_alternative<fence_record>(rec))
                          return true;
                        auto& t = txs[record_tx(rec)];
                        if (t.first == 0)
                          t.first = at;
                        t.last = at;
                        if (bounds.set_aside.count(record_tx(rec)) != 0)
                          t.records.push_back(rec);
                        if (auto* u = std::get_if<update_record>(&rec)) {
                          t.has_op = t.has_op || u->op.has_value();
                          t.updates.push_back(
                            scanned_update{at, u->key, u->type, u->effect,
                                           u->op});
                        } else if (auto* c = std::get_if<commit_record>(&rec)) {
                          t.commit = at;
                          t.commit_time = c->commit_time;
                          t.wall_time_us = c->wall_time_us;
                        } else if (std::holds_alternative<abort_record>(rec)) {
                          t.aborted = true;
                        }
                        return true;
                      });
  if (!st)
    return st.err();

  // 2. The truncation LSN: the smallest bound (see the header).
  checkpoint_report report;
  report.checkpoint_time = cp_time;
  lsn cut = log_.next_lsn();
  report.limited_at = cut;
  auto lower = [&](lsn at, truncation_limit why) {
    if (at < cut) {
      cut = at;
      report.limited_by = why;
      report.limited_at = at;
    }
  };
  if (bounds.replicated_lsn < cut - 1)
    lower(bounds.replicated_lsn + 1, truncation_limit::replicated);
  // Not read: records of transactions that commit above C, or later.
  lower(scan_to, truncation_limit::unfolded_commit);
  std::map<std::string, key_fold> folds; // by encoded key: deterministic
  truncation_plan plan;
  for (auto& [tx, t] : txs) {
    if (t.aborted)
      continue;
    if (t.commit == 0) {
      if (bounds.set_aside.count(tx) == 0)
        lower(t.first, truncation_limit::undecided);
      continue;
    }
    bool folded_before = had_checkpoint && t.commit_time <= prev.time;
    bool fold_now = !folded_before && t.commit_time <= cp_time;
    if (!folded_before && !fold_now) {
      lower(t.first, truncation_limit::unfolded_commit);
      continue;
    }
    if (t.has_op && t.wall_time_us >= bounds.fbf_horizon_us)
      lower(t.first, truncation_limit::fbf_window);
    if (!fold_now)
      continue;
    ++report.transactions_folded;
    for (auto& u : t.updates) {
      auto enc = encode_object_key(u.key);
      if (!enc)
        return enc.err();
      auto& f = folds[*enc];
      f.type = u.type;
      f.effects.push_back(
        committed_effect{u.at, tx, t.commit_time, std::move(u.effect), t.commit,
                         u.type});
      f.last_commit = std::max(f.last_commit, t.commit);
      plan.unindex.emplace_back(std::move(*enc), index_value{t.commit, u.at});
      ++report.effects_folded;
    }
  }
  // A set-aside transaction moves only whole: one with records on both
  // sides of the cut holds it back to its first (until the fix point).
  for (bool lowered = true; lowered;) {
    lowered = false;
    for (const auto& tx : bounds.set_aside) {
      auto t = txs.find(tx);
      if (t == txs.end() || t->second.commit != 0 || t->second.aborted)
        continue;
      if (t->second.first < cut && t->second.last >= cut) {
        lower(t->second.first, truncation_limit::undecided);
        lowered = true;
      }
    }
  }
  if (cut < log_.truncation_lsn()) { // the bounds cannot undo a truncation
    cut = log_.truncation_lsn();
    report.limited_at = cut;
  }
  plan.new_truncation_lsn = cut;
  plan.checkpoint_time = cp_time;
  plan.decisions_kept_from = bounds.decisions_kept_from;
  for (const auto& tx : bounds.set_aside) {
    auto t = txs.find(tx);
    if (t == txs.end() || t->second.commit != 0 || t->second.aborted || t->second.last >= cut)
      continue;
    report.records_relocated += t->second.records.size();
    plan.relocate.emplace_back(tx, std::move(t->second.records));
  }
  // The `opids` entries of committed updates that leave the log. (Ids of
  // commits inside the FBF window are at or above T by the fbf_window bound.)
  for (const auto& [tx, t] : txs) {
    if (t.aborted || t.commit == 0 || !t.has_op)
      continue;
    for (const auto& u : t.updates)
      if (u.op && u.at < cut)
        plan.drop_op_ids.emplace_back(*u.op, t.commit);
  }
  report.truncation_lsn = cut;
  report.records_dropped = static_cast<std::uint64_t>(
    std::lower_bound(positions.begin(), positions.end(), cut)
    - positions.begin());
  report.index_entries_dropped = plan.unindex.size();
  report.op_ids_dropped = plan.drop_op_ids.size();
  report.keys_written = folds.size();

  if (cut == log_.truncation_lsn() && folds.empty() && had_checkpoint
      && cp_time == prev.time && plan.relocate.empty()) {
    report.sequence = prev.sequence; // nothing would change
    return report;
  }

  // 3. Materialize and write every touched key, truncate, update meta: one
  //    transaction (journal::apply_checkpoint).
  auto writes = [&](storage_txn& txn) -> status {
    for (auto& [enc, f] : folds) {
      auto found = entry_or_bottom(txn, enc, f.type);
      if (!found)
        return found.err();
      auto base = std::move(found->version);
      const lsn base_commit = found->base_commit_lsn;
      // The cache's commit order, so a checkpoint and a cache replay apply
      // the same effects in the same order (cache/object_entry.hpp).
      std::sort(f.effects.begin(), f.effects.end(), effect_order_less);
      auto object = materialize_stable(base, f.effects, cp_time);
      if (!object) {
        auto key = decode_object_key(enc);
        return make_error(object.err().code(),
                          "checkpoint of "
                            + (key ? key->bucket + "/" + key->key
                                   : std::string{"?"})
                            + " refused: " + object.err().message());
      }
      checkpoint_entry next{object_version{std::move(*object), cp_time},
                            std::max(base_commit, f.last_commit)};
      if (auto put = txn.put(store_db::checkpoint, enc,
                             encode_checkpoint_entry(next));
          !put)
        return put;
    }
    return {};
  };
  const std::uint64_t dropped_before = log_.decisions_dropped();
  if (auto applied = log_.apply_checkpoint(plan, writes); !applied)
    return applied.err();
  report.sequence = log_.checkpoint().sequence;
  report.decisions_dropped = log_.decisions_dropped() - dropped_before;
  return report;
}

expected<std::optional<checkpoint_entry>>
checkpoint_store::get(const object_key& key) {
  auto enc = encode_object_key(key);
  if (!enc)
    return enc.err();
  auto txn = log_.env().begin(false);
  if (!txn)
    return txn.err();
  auto raw = (*txn)->get(store_db::checkpoint, *enc);
  if (!raw)
    return raw.err();
  if (!raw->has_value())
    return std::optional<checkpoint_entry>{};
  auto entry = decode_checkpoint_entry(**raw);
  if (!entry)
    return entry.err();
  return std::optional<checkpoint_entry>{std::move(*entry)};
}

expected<entry_image> checkpoint_store::load(const object_key& key) {
  auto entry = get(key);
  if (!entry)
    return entry.err();
  auto effects = log_.read_committed(key, 0);
  if (!effects)
    return effects.err();
  entry_image image;
  if (*entry)
    image.base = std::move((*entry)->version);
  image.effects = std::move(*effects);
  return image;
}

status checkpoint_store::fold_late(
  storage_txn& txn, const std::vector<std::pair<object_key, committed_effect>>& effects) {
  const vector_clock& cp_time = log_.checkpoint().time;
  std::map<std::string, key_fold> folds; // by encoded key, as checkpoint()
  for (const auto& [key, e] : effects) {
    auto enc = encode_object_key(key);
    if (!enc)
      return enc.err();
    auto& f = folds[*enc];
    f.type = e.type;
    f.effects.push_back(e);
    f.last_commit = std::max(f.last_commit, e.commit_position);
  }
  for (auto& [enc, f] : folds) {
    auto found = entry_or_bottom(txn, enc, f.type);
    if (!found)
      return found.err();
    auto base = std::move(found->version);
    const lsn base_commit = found->base_commit_lsn;
    // Every other commit <= C of the key is in the entry already (entries
    // hold exactly the commits <= the checkpoint time, whatever time they
    // were last written at); this one joins them, and the entry is at C.
    crdt_object object = base.object;
    std::sort(f.effects.begin(), f.effects.end(), effect_order_less);
    for (const auto& e : f.effects)
      if (auto st = object.apply(e.effect); !st)
        return st.err();
    checkpoint_entry next{object_version{std::move(object), cp_time},
                          std::max(base_commit, f.last_commit)};
    if (auto put = txn.put(store_db::checkpoint, enc, encode_checkpoint_entry(next)); !put)
      return put;
  }
  return {};
}

expected<std::uint64_t> checkpoint_store::size() {
  auto txn = log_.env().begin(false);
  if (!txn)
    return txn.err();
  auto st = (*txn)->stats(store_db::checkpoint);
  if (!st)
    return st.err();
  return st->entries;
}

expected<entry_image> checkpoint_source::fetch(const object_key& key,
                                               crdt_type /* type */) {
  // The cache checks the base's type against the one it was asked for.
  return store_.load(key);
}

} // namespace tally
