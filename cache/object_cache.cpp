#include "cache/object_cache.hpp"

#include <sstream>
#include <string>
#include <utility>

#include "cache/materializer.hpp"

namespace tally {

namespace {

error wrong_type(const object_key& key, crdt_type cached, crdt_type asked) {
  std::ostringstream msg;
  msg << "key " << key << " is cached as a " << cached << ", not a " << asked;
  return make_error(errc::wrong_type, msg.str());
}

} // namespace

expected<object_cache> object_cache::make(object_cache_config cfg) {
  auto t = std::make_unique<tallies>();
  tallies* counters = t.get();
  auto cache = lru::make(
    lru::config{cfg.segments, cfg.entries_per_segment},
    [counters](const object_key&, object_entry& entry) {
      counters->effects_held -= entry.effects().size();
    });
  if (!cache)
    return cache.err();
  return object_cache{std::move(*cache), std::move(t)};
}

expected<object_entry*> object_cache::find_typed(const object_key& key,
                                                 crdt_type type) {
  object_entry* entry = lru_.find(key);
  if (entry && entry->type() != type) {
    // A key never written has no type yet: its bottom entry, cached by a
    // read (or a type check) as one type, must not refuse another.
    if (entry->effects().empty() && entry->base().time.empty()
        && is_bottom(entry->base().object.state())) {
      lru_.erase(key);
      return nullptr;
    }
    return wrong_type(key, entry->type(), type);
  }
  return entry;
}

expected<crdt_value>
object_cache::value_at(const object_entry& entry, const vector_clock& snapshot,
                       const std::vector<crdt_effect>& own_effects) {
  // The fast path reads the eagerly materialized latest object in place.
  if (is_latest(entry, snapshot) && own_effects.empty()) {
    ++tallies_->latest_reads;
    return entry.latest().object.value();
  }
  auto obj = object_at(entry, snapshot, own_effects);
  if (!obj)
    return obj.err();
  return obj->value();
}

expected<crdt_object>
object_cache::object_at(const object_entry& entry, const vector_clock& snapshot,
                        const std::vector<crdt_effect>& own_effects) {
  if (is_latest(entry, snapshot)) {
    ++tallies_->latest_reads;
    if (own_effects.empty())
      return entry.latest().object;
  } else {
    ++tallies_->replayed_reads;
  }
  return materialize_interactive(entry, snapshot, own_effects);
}

expected<std::optional<crdt_value>>
object_cache::read(const object_key& key, crdt_type type,
                   const vector_clock& snapshot) {
  static const std::vector<crdt_effect> none;
  return read_interactive(key, type, snapshot, none);
}

expected<std::optional<crdt_value>>
object_cache::read_interactive(const object_key& key, crdt_type type,
                               const vector_clock& snapshot,
                               const std::vector<crdt_effect>& own_effects) {
  auto entry = find_typed(key, type);
  if (!entry)
    return entry.err();
  if (!*entry)
    return std::optional<crdt_value>{};
  auto value = value_at(**entry, snapshot, own_effects);
  if (!value)
    return value.err();
  return std::optional<crdt_value>{std::move(*value)};
}

expected<crdt_value>
object_cache::read_or_load(const object_key& key, crdt_type type,
                           const vector_clock& snapshot,
                           const std::vector<crdt_effect>& own_effects,
                           entry_source& source) {
  auto hit = read_interactive(key, type, snapshot, own_effects);
  if (!hit)
    return hit.err();
  if (*hit)
    return std::move(**hit);
  if (auto st = load(key, type, source); !st)
    return st.err();
  // Read the entry just loaded without a second lookup, so that one read
  // counts as one miss and not also as a hit.
  const object_entry* entry = lru_.peek(key);
  if (!entry)
    return make_error(errc::unavailable, "load did not cache the key");
  return value_at(*entry, snapshot, own_effects);
}

expected<crdt_object>
object_cache::object_or_load(const object_key& key, crdt_type type,
                             const vector_clock& snapshot,
                             const std::vector<crdt_effect>& own_effects,
                             entry_source& source) {
  auto entry = find_typed(key, type);
  if (!entry)
    return entry.err();
  if (*entry)
    return object_at(**entry, snapshot, own_effects);
  if (auto st = load(key, type, source); !st)
    return st.err();
  const object_entry* loaded = lru_.peek(key);
  if (!loaded)
    return make_error(errc::unavailable, "load did not cache the key");
  return object_at(*loaded, snapshot, own_effects);
}

status object_cache::load(const object_key& key, crdt_type type,
                          entry_source& source) {
  auto image = source.fetch(key, type);
  if (!image)
    return image.err();
  return load(key, type, std::move(*image));
}

status object_cache::load(const object_key& key, crdt_type type,
                          entry_image image) {
  expected<object_entry> entry = [&]() -> expected<object_entry> {
    if (!image.base) {
      auto bottom = crdt_object::make(type);
      if (!bottom)
        return bottom.err();
      return object_entry::make(std::move(*bottom), vector_clock{},
                                std::move(image.effects));
    }
    if (image.base->object.type() != type) {
      std::ostringstream msg;
      msg << "load of " << key << ": the source's base is a "
          << image.base->object.type() << ", not a " << type;
      return make_error(errc::wrong_type, msg.str());
    }
    return object_entry::make(std::move(image.base->object),
                              std::move(image.base->time),
                              std::move(image.effects));
  }();
  if (!entry)
    return entry.err();
  if (const object_entry* old = lru_.peek(key))
    tallies_->effects_held -= old->effects().size();
  std::size_t held = entry->effects().size();
  lru_.insert(key, std::move(*entry)); // may evict: the listener subtracts
  tallies_->effects_held += held;
  ++tallies_->loads;
  return {};
}

status object_cache::on_commit(const object_key& key, crdt_type type,
                               committed_effect effect) {
  object_entry* entry = lru_.peek(key);
  if (!entry) {
    ++tallies_->commits_skipped;
    return {};
  }
  if (entry->type() != type)
    return wrong_type(key, entry->type(), type);
  std::size_t before = entry->effects().size();
  if (auto st = entry->add(std::move(effect)); !st) {
    // The entry is unchanged but now lacks a committed effect: serving it
    // would return versions that miss a commit, so forget it instead.
    erase(key);
    return st;
  }
  tallies_->effects_held += entry->effects().size() - before;
  ++tallies_->commits_applied;
  return {};
}

expected<std::size_t> object_cache::rebase(const object_key& key,
                                           crdt_object new_base,
                                           vector_clock new_base_time) {
  object_entry* entry = lru_.peek(key);
  if (!entry)
    return std::size_t{0};
  auto dropped = entry->rebase(std::move(new_base), std::move(new_base_time));
  if (dropped)
    tallies_->effects_held -= *dropped;
  return dropped;
}

truncate_report object_cache::truncate_below(const vector_clock& checkpoint_time) {
  truncate_report report;
  lru_.for_each([&](const object_key&, object_entry& entry) {
    if (!(entry.base().time <= checkpoint_time)) {
      ++report.skipped;
      return;
    }
    auto dropped = entry.rebase_to(checkpoint_time);
    if (!dropped) {
      ++report.failed;
      return;
    }
    ++report.rebased;
    report.effects_dropped += *dropped;
  });
  tallies_->effects_held -= report.effects_dropped;
  return report;
}

bool object_cache::erase(const object_key& key) {
  const object_entry* entry = lru_.peek(key);
  if (!entry)
    return false;
  tallies_->effects_held -= entry->effects().size();
  return lru_.erase(key);
}

object_cache_stats object_cache::stats() const noexcept {
  const auto& c = lru_.stats();
  object_cache_stats s;
  s.hits = c.hits;
  s.misses = c.misses;
  s.evictions = c.evictions;
  s.latest_reads = tallies_->latest_reads;
  s.replayed_reads = tallies_->replayed_reads;
  s.loads = tallies_->loads;
  s.commits_applied = tallies_->commits_applied;
  s.commits_skipped = tallies_->commits_skipped;
  s.entries = lru_.size();
  s.effects_held = tallies_->effects_held;
  return s;
}

} // namespace tally
