#include "crdt/b_counter.hpp"

#include <limits>
#include <string>

namespace tally {

namespace {

// Every sum stays within int64 so that value() is exact.
constexpr std::uint64_t max_sum = std::numeric_limits<std::int64_t>::max();

bool fits(std::uint64_t a, std::uint64_t b) noexcept {
  return a <= max_sum && b <= max_sum - a;
}

} // namespace

void b_counter_effect::encode(byte_writer& out) const {
  out.u8(static_cast<std::uint8_t>(what));
  out.varint(amount);
  out.varint(replica);
  if (what == kind::transfer)
    out.varint(to);
}

b_counter_effect b_counter_effect::decode(byte_reader& in) {
  b_counter_effect e;
  const auto k = in.u8();
  if (k > 2)
    in.fail("unknown bcounter effect kind " + std::to_string(k));
  e.what = static_cast<kind>(k);
  e.amount = in.varint();
  e.replica = in.varint();
  if (e.what == kind::transfer)
    e.to = in.varint();
  if (in.ok() && (e.amount == 0 || e.amount > max_sum))
    in.fail("bcounter effect amount " + std::to_string(e.amount)
            + " is outside [1, 2^63-1]");
  if (in.ok() && e.what == kind::transfer && e.to == e.replica)
    in.fail("bcounter transfer from a replica to itself");
  return e;
}

expected<b_counter_effect>
b_counter::prepare(const b_counter_update& update) const {
  b_counter_effect e;
  if (const auto* i = std::get_if<b_counter_increment>(&update)) {
    e = {b_counter_effect::kind::increment, i->amount, i->replica, 0};
  } else if (const auto* d = std::get_if<b_counter_decrement>(&update)) {
    e = {b_counter_effect::kind::decrement, d->amount, d->replica, 0};
  } else {
    const auto& t = std::get<b_counter_transfer>(update);
    if (t.from == t.to)
      return make_error(errc::invalid_argument,
                        "bcounter transfer from replica " + std::to_string(t.from)
                          + " to itself");
    e = {b_counter_effect::kind::transfer, t.amount, t.from, t.to};
  }
  if (e.amount == 0 || e.amount > max_sum)
    return make_error(errc::invalid_argument,
                      "bcounter amount " + std::to_string(e.amount)
                        + " is outside [1, 2^63-1]");
  if (e.what != b_counter_effect::kind::increment) {
    const auto held = rights(e.replica);
    if (held < 0 || static_cast<std::uint64_t>(held) < e.amount)
      return make_error(errc::no_permissions,
                        "bcounter replica " + std::to_string(e.replica)
                          + " holds " + std::to_string(held)
                          + " rights; it cannot spend "
                          + std::to_string(e.amount)
                          + " (increment there, or transfer rights to it)");
  }
  b_counter probe = *this;
  if (auto st = probe.apply(e); !st)
    return st.err();
  return e;
}

status b_counter::apply(const b_counter_effect& effect) {
  const bool decrement = effect.what == b_counter_effect::kind::decrement;
  std::uint64_t total = 0; // the sum the effect adds to
  if (decrement)
    for (const auto& [r, v] : decrements_)
      total += v;
  else
    for (const auto& [k, v] : transfers_)
      total += v;
  if (!fits(total, effect.amount))
    return make_error(errc::overflow,
                      "bcounter sums would pass 2^63-1; effect not applied");
  if (decrement)
    decrements_[effect.replica] += effect.amount;
  else if (effect.what == b_counter_effect::kind::increment)
    transfers_[{effect.replica, effect.replica}] += effect.amount;
  else
    transfers_[{effect.replica, effect.to}] += effect.amount;
  return {};
}

std::int64_t b_counter::value() const noexcept {
  std::int64_t inc = 0, dec = 0;
  for (const auto& [k, v] : transfers_)
    if (k.first == k.second)
      inc += static_cast<std::int64_t>(v);
  for (const auto& [r, v] : decrements_)
    dec += static_cast<std::int64_t>(v);
  return inc - dec;
}

std::int64_t b_counter::rights(replica_id r) const noexcept {
  // Each sum is at most 2^63-1, but received - given - decremented can pass
  // -2^63 in a state no correct history reaches (decoded from hostile
  // bytes): compute wide, clamp.
  __extension__ typedef __int128 wide; // no -Wpedantic warning
  wide held = 0;
  for (const auto& [k, v] : transfers_) {
    if (k.second == r)
      held += v;
    else if (k.first == r)
      held -= v;
  }
  if (auto it = decrements_.find(r); it != decrements_.end())
    held -= it->second;
  constexpr wide lowest = std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(held < lowest ? lowest : held);
}

void b_counter::encode(byte_writer& out) const {
  out.varint(transfers_.size());
  for (const auto& [k, v] : transfers_) {
    out.varint(k.first);
    out.varint(k.second);
    out.varint(v);
  }
  out.varint(decrements_.size());
  for (const auto& [r, v] : decrements_) {
    out.varint(r);
    out.varint(v);
  }
}

b_counter b_counter::decode(byte_reader& in) {
  b_counter c;
  std::uint64_t total = 0;
  auto add = [&](std::uint64_t v) {
    if (v == 0 || !fits(total, v))
      in.fail("bcounter sum of 0 or past 2^63-1");
    else
      total += v;
  };
  const auto nt = in.count(3);
  for (std::size_t i = 0; i < nt && in.ok(); ++i) {
    std::pair<replica_id, replica_id> k{in.varint(), in.varint()};
    const auto v = in.varint();
    if (!c.transfers_.empty() && !(c.transfers_.rbegin()->first < k))
      in.fail("bcounter transfers out of order or repeated");
    add(v);
    c.transfers_.emplace_hint(c.transfers_.end(), k, v);
  }
  total = 0;
  const auto nd = in.count(2);
  for (std::size_t i = 0; i < nd && in.ok(); ++i) {
    const replica_id r = in.varint();
    const auto v = in.varint();
    if (!c.decrements_.empty() && !(c.decrements_.rbegin()->first < r))
      in.fail("bcounter decrements out of order or repeated");
    add(v);
    c.decrements_.emplace_hint(c.decrements_.end(), r, v);
  }
  return c;
}

} // namespace tally
