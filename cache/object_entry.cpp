#include "cache/object_entry.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "cache/materializer.hpp"

namespace tally {

namespace {

error zero_commit_time(const committed_effect& e) {
  return make_error(errc::invalid_argument,
                    "committed effect at journal position "
                      + std::to_string(e.position)
                      + " has a zero commit time; every commit has one");
}

// base + every effect, in the given (commit) order.
expected<object_version> fold_all(const object_version& base,
                                  const std::vector<committed_effect>& effects) {
  object_version v = base;
  for (const auto& e : effects) {
    if (auto st = v.object.apply(e.effect); !st)
      return st.err();
    v.time.merge(e.commit_time);
  }
  return v;
}

} // namespace

bool effect_order_less(const committed_effect& a,
                       const committed_effect& b) noexcept {
  int c = commit_order(a.commit_time, b.commit_time);
  return c != 0 ? c < 0 : a.position < b.position;
}

expected<object_entry> object_entry::make(crdt_type type) {
  auto bottom = crdt_object::make(type);
  if (!bottom)
    return bottom.err();
  object_version base{std::move(*bottom), vector_clock{}};
  object_version latest = base;
  return object_entry{std::move(base), std::move(latest), {}};
}

expected<object_entry> object_entry::make(crdt_object base,
                                          vector_clock base_time,
                                          std::vector<committed_effect> effects) {
  for (const auto& e : effects)
    if (e.commit_time.empty())
      return zero_commit_time(e);
  effects.erase(std::remove_if(effects.begin(), effects.end(),
                               [&](const committed_effect& e) {
                                 return e.commit_time <= base_time;
                               }),
                effects.end());
  std::sort(effects.begin(), effects.end(), effect_order_less);
  // Equal positions sort next to each other (one position, one commit time).
  effects.erase(std::unique(effects.begin(), effects.end(),
                            [](const committed_effect& a,
                               const committed_effect& b) {
                              return a.position == b.position;
                            }),
                effects.end());
  object_version b{std::move(base), std::move(base_time)};
  auto latest = fold_all(b, effects);
  if (!latest)
    return latest.err();
  return object_entry{std::move(b), std::move(*latest), std::move(effects)};
}

status object_entry::add(committed_effect effect) {
  if (effect.commit_time.empty())
    return zero_commit_time(effect);
  // Covered by the base: a re-delivery of a commit the checkpoint holds.
  if (effect.commit_time <= base_.time)
    return {};
  // Commits usually arrive in commit order: check the end before searching.
  auto pos = effects_.empty() || !effect_order_less(effect, effects_.back())
               ? effects_.end()
               : std::upper_bound(effects_.begin(), effects_.end(), effect,
                                  effect_order_less);
  if (pos != effects_.begin() && std::prev(pos)->position == effect.position)
    return {}; // already held: re-delivery is harmless
  if (pos == effects_.end()) {
    // The common case: commits arrive in commit order. One apply.
    crdt_object next = latest_.object;
    if (auto st = next.apply(effect.effect); !st)
      return st;
    latest_.object = std::move(next);
    latest_.time.merge(effect.commit_time);
    effects_.push_back(std::move(effect));
    return {};
  }
  // Out of commit-time order (two-phase commit): the latest version is
  // rebuilt in commit order, so types whose effects do not commute, and
  // counters near their limits, see exactly the order every replica sees.
  auto at = effects_.insert(pos, std::move(effect));
  auto latest = fold_all(base_, effects_);
  if (!latest) {
    effects_.erase(at);
    return latest.err();
  }
  latest_ = std::move(*latest);
  return {};
}

expected<std::size_t> object_entry::rebase(crdt_object new_base,
                                           vector_clock new_time) {
  if (new_base.type() != type())
    return make_error(errc::wrong_type,
                      "rebase: new base is a "
                        + std::string{to_string(new_base.type())}
                        + ", the entry holds a "
                        + std::string{to_string(type())});
  auto own = rebase_to_check(new_time);
  if (!own)
    return own.err();
  // A checkpoint is a materialization of the same history; a mismatch is a
  // bug upstream, and accepting it would change every later read.
  if (!(*own == new_base))
    return make_error(errc::invalid_argument,
                      "rebase: the new base at " + to_string(new_time)
                        + " disagrees with the cached committed effects");
  return commit_rebase(std::move(new_base), std::move(new_time));
}

expected<std::size_t> object_entry::rebase_to(const vector_clock& new_time) {
  auto own = rebase_to_check(new_time);
  if (!own)
    return own.err();
  return commit_rebase(std::move(*own), new_time);
}

expected<crdt_object>
object_entry::rebase_to_check(const vector_clock& new_time) const {
  if (!(base_.time <= new_time))
    return make_error(errc::invalid_argument,
                      "rebase: new base time " + to_string(new_time)
                        + " is not >= the current base time "
                        + to_string(base_.time));
  return materialize_stable(base_, effects_, new_time);
}

std::size_t object_entry::commit_rebase(crdt_object new_base,
                                        vector_clock new_time) {
  auto covered = [&](const committed_effect& e) {
    return e.commit_time <= new_time;
  };
  auto first_kept = std::remove_if(effects_.begin(), effects_.end(), covered);
  std::size_t dropped =
    static_cast<std::size_t>(std::distance(first_kept, effects_.end()));
  effects_.erase(first_kept, effects_.end()); // remove_if keeps commit order
  // The latest object already holds every effect; its time only moves up to
  // include the new base time (every dropped commit time is <= it).
  latest_.time.merge(new_time);
  base_ = object_version{std::move(new_base), std::move(new_time)};
  return dropped;
}

} // namespace tally
