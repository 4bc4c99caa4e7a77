#include "crdt/mv_register.hpp"

#include <algorithm>

namespace tally {

void mv_effect::encode(byte_writer& out) const {
  write_tokens(out, overwritten);
  out.boolean(assigned.has_value());
  if (assigned) {
    write_token(out, assigned->first);
    out.bytes(assigned->second);
  }
}

mv_effect mv_effect::decode(byte_reader& in) {
  mv_effect e;
  e.overwritten = read_tokens(in);
  if (in.boolean()) {
    auto token = read_token(in);
    e.assigned.emplace(token, in.bytes());
  }
  return e;
}

expected<mv_effect> mv_register::prepare(const register_update& update,
                                         downstream_context& ctx) const {
  mv_effect e;
  for (const auto& [token, value] : values_)
    e.overwritten.insert(e.overwritten.end(), token);
  if (const auto* a = std::get_if<register_assign>(&update)) {
    if (a->timestamp)
      return make_error(errc::invalid_argument,
                        "an mvreg assign takes no timestamp (only lwwreg "
                        "orders assigns by time)");
    e.assigned.emplace(ctx.tokens.next(), a->value);
  }
  return e;
}

status mv_register::apply(const mv_effect& effect) {
  for (const auto& t : effect.overwritten)
    values_.erase(t);
  if (effect.assigned && !effect.overwritten.count(effect.assigned->first))
    values_.insert(*effect.assigned);
  return {};
}

std::vector<std::string> mv_register::value() const {
  std::vector<std::string> out;
  out.reserve(values_.size());
  for (const auto& [token, value] : values_)
    out.push_back(value);
  std::sort(out.begin(), out.end());
  return out;
}

void mv_register::encode(byte_writer& out) const {
  out.varint(values_.size());
  for (const auto& [token, value] : values_) {
    write_token(out, token);
    out.bytes(value);
  }
}

mv_register mv_register::decode(byte_reader& in) {
  mv_register r;
  const auto n = in.count(min_token_bytes + 1);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto token = read_token(in);
    if (!r.values_.empty() && !(r.values_.rbegin()->first < token)) {
      in.fail("mvreg tokens out of order or repeated");
      break;
    }
    r.values_.emplace_hint(r.values_.end(), token, in.bytes());
  }
  return r;
}

} // namespace tally
