#include "crdt/flag_dw.hpp"

namespace tally {

namespace {

void write_optional_token(byte_writer& out, const std::optional<unique_token>& t) {
  out.boolean(t.has_value());
  if (t)
    write_token(out, *t);
}

std::optional<unique_token> read_optional_token(byte_reader& in) {
  if (in.boolean())
    return read_token(in);
  return std::nullopt;
}

} // namespace

void flag_dw_effect::encode(byte_writer& out) const {
  write_tokens(out, seen);
  write_optional_token(out, enable);
  write_optional_token(out, disable);
}

flag_dw_effect flag_dw_effect::decode(byte_reader& in) {
  flag_dw_effect e;
  e.seen = read_tokens(in);
  e.enable = read_optional_token(in);
  e.disable = read_optional_token(in);
  if (e.enable && e.disable)
    in.fail("a flag_dw effect both enables and disables");
  return e;
}

expected<flag_dw_effect> flag_dw::prepare(flag_update update,
                                          downstream_context& ctx) const {
  flag_dw_effect e;
  e.seen = enables_;
  e.seen.insert(disables_.begin(), disables_.end());
  if (update == flag_update::enable)
    e.enable = ctx.tokens.next();
  else if (update == flag_update::disable)
    e.disable = ctx.tokens.next();
  return e;
}

status flag_dw::apply(const flag_dw_effect& effect) {
  if (effect.enable)
    enables_.insert(*effect.enable);
  if (effect.disable)
    disables_.insert(*effect.disable);
  erase_tokens(enables_, effect.seen);
  erase_tokens(disables_, effect.seen);
  return {};
}

void flag_dw::encode(byte_writer& out) const {
  write_tokens(out, enables_);
  write_tokens(out, disables_);
}

flag_dw flag_dw::decode(byte_reader& in) {
  flag_dw f;
  f.enables_ = read_tokens(in);
  f.disables_ = read_tokens(in);
  return f;
}

} // namespace tally
