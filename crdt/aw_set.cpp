#include "crdt/aw_set.hpp"

#include "crdt/set_elements.hpp"

namespace tally {

void aw_set_effect::encode(byte_writer& out) const {
  out.varint(elements.size());
  for (const auto& e : elements) {
    out.bytes(e.value);
    write_tokens(out, e.added);
    write_tokens(out, e.removed);
  }
}

aw_set_effect aw_set_effect::decode(byte_reader& in) {
  aw_set_effect out;
  const auto n = in.count(3);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    element e;
    e.value = in.bytes();
    check_increasing(in, i == 0, i == 0 ? e.value : out.elements.back().value,
                     e.value);
    e.added = read_tokens(in);
    e.removed = read_tokens(in);
    out.elements.push_back(std::move(e));
  }
  return out;
}

expected<aw_set_effect> aw_set::prepare(const set_update& update,
                                        downstream_context& ctx) const {
  std::vector<std::string> targets;
  const bool adding = std::holds_alternative<set_add>(update);
  if (const auto* a = std::get_if<set_add>(&update))
    targets = distinct_sorted(a->elements);
  else if (const auto* r = std::get_if<set_remove>(&update))
    targets = distinct_sorted(r->elements);
  else
    targets = value();
  aw_set_effect out;
  out.elements.reserve(targets.size());
  for (auto& v : targets) {
    aw_set_effect::element e;
    if (auto it = elements_.find(v); it != elements_.end())
      e.removed = it->second;
    if (adding)
      e.added.insert(ctx.tokens.next());
    e.value = std::move(v);
    out.elements.push_back(std::move(e));
  }
  return out;
}

status aw_set::apply(const aw_set_effect& effect) {
  for (const auto& e : effect.elements) {
    auto it = elements_.find(e.value);
    if (it == elements_.end()) {
      if (e.added.empty())
        continue;
      it = elements_.emplace(e.value, token_set{}).first;
    }
    it->second.insert(e.added.begin(), e.added.end());
    erase_tokens(it->second, e.removed);
    if (it->second.empty())
      elements_.erase(it);
  }
  return {};
}

std::vector<std::string> aw_set::value() const {
  std::vector<std::string> out;
  out.reserve(elements_.size());
  for (const auto& [v, tokens] : elements_)
    out.push_back(v);
  return out;
}

void aw_set::encode(byte_writer& out) const {
  out.varint(elements_.size());
  for (const auto& [v, tokens] : elements_) {
    out.bytes(v);
    write_tokens(out, tokens);
  }
}

aw_set aw_set::decode(byte_reader& in) {
  aw_set s;
  const auto n = in.count(2);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto v = in.bytes();
    check_increasing(in, s.elements_.empty(),
                     s.elements_.empty() ? v : s.elements_.rbegin()->first, v);
    auto tokens = read_tokens(in);
    if (in.ok() && tokens.empty())
      in.fail("orset element without tokens");
    s.elements_.emplace_hint(s.elements_.end(), std::move(v), std::move(tokens));
  }
  return s;
}

} // namespace tally
