#include "crdt/rw_set.hpp"

#include "crdt/set_elements.hpp"

namespace tally {

void rw_set_effect::encode(byte_writer& out) const {
  out.varint(elements.size());
  for (const auto& e : elements) {
    out.bytes(e.value);
    write_tokens(out, e.seen);
    write_tokens(out, e.added);
    write_tokens(out, e.removed);
  }
}

rw_set_effect rw_set_effect::decode(byte_reader& in) {
  rw_set_effect out;
  const auto n = in.count(4);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    element e;
    e.value = in.bytes();
    check_increasing(in, i == 0, i == 0 ? e.value : out.elements.back().value,
                     e.value);
    e.seen = read_tokens(in);
    e.added = read_tokens(in);
    e.removed = read_tokens(in);
    out.elements.push_back(std::move(e));
  }
  return out;
}

expected<rw_set_effect> rw_set::prepare(const set_update& update,
                                        downstream_context& ctx) const {
  std::vector<std::string> targets;
  if (const auto* a = std::get_if<set_add>(&update))
    targets = distinct_sorted(a->elements);
  else if (const auto* r = std::get_if<set_remove>(&update))
    targets = distinct_sorted(r->elements);
  else
    for (const auto& [v, t] : elements_)
      targets.push_back(v);
  rw_set_effect out;
  out.elements.reserve(targets.size());
  for (auto& v : targets) {
    rw_set_effect::element e;
    if (auto it = elements_.find(v); it != elements_.end()) {
      e.seen = it->second.adds;
      e.seen.insert(it->second.removes.begin(), it->second.removes.end());
    }
    if (std::holds_alternative<set_add>(update))
      e.added.insert(ctx.tokens.next());
    else if (std::holds_alternative<set_remove>(update))
      e.removed.insert(ctx.tokens.next());
    e.value = std::move(v);
    out.elements.push_back(std::move(e));
  }
  return out;
}

status rw_set::apply(const rw_set_effect& effect) {
  for (const auto& e : effect.elements) {
    auto it = elements_.find(e.value);
    if (it == elements_.end()) {
      if (e.added.empty() && e.removed.empty())
        continue;
      it = elements_.emplace(e.value, tokens{}).first;
    }
    it->second.adds.insert(e.added.begin(), e.added.end());
    it->second.removes.insert(e.removed.begin(), e.removed.end());
    erase_tokens(it->second.adds, e.seen);
    erase_tokens(it->second.removes, e.seen);
    if (it->second.adds.empty() && it->second.removes.empty())
      elements_.erase(it);
  }
  return {};
}

std::vector<std::string> rw_set::value() const {
  std::vector<std::string> out;
  for (const auto& [v, t] : elements_)
    if (t.removes.empty() && !t.adds.empty())
      out.push_back(v);
  return out;
}

void rw_set::encode(byte_writer& out) const {
  out.varint(elements_.size());
  for (const auto& [v, t] : elements_) {
    out.bytes(v);
    write_tokens(out, t.adds);
    write_tokens(out, t.removes);
  }
}

rw_set rw_set::decode(byte_reader& in) {
  rw_set s;
  const auto n = in.count(3);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto v = in.bytes();
    check_increasing(in, s.elements_.empty(),
                     s.elements_.empty() ? v : s.elements_.rbegin()->first, v);
    tokens t;
    t.adds = read_tokens(in);
    t.removes = read_tokens(in);
    if (in.ok() && t.adds.empty() && t.removes.empty())
      in.fail("rwset element without tokens");
    s.elements_.emplace_hint(s.elements_.end(), std::move(v), std::move(t));
  }
  return s;
}

} // namespace tally
