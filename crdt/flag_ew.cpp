#include "crdt/flag_ew.hpp"

namespace tally {

void flag_ew_effect::encode(byte_writer& out) const {
  write_tokens(out, seen);
  out.boolean(enable.has_value());
  if (enable)
    write_token(out, *enable);
}

flag_ew_effect flag_ew_effect::decode(byte_reader& in) {
  flag_ew_effect e;
  e.seen = read_tokens(in);
  if (in.boolean())
    e.enable = read_token(in);
  return e;
}

expected<flag_ew_effect> flag_ew::prepare(flag_update update,
                                          downstream_context& ctx) const {
  flag_ew_effect e;
  e.seen = enables_;
  if (update == flag_update::enable)
    e.enable = ctx.tokens.next();
  return e;
}

status flag_ew::apply(const flag_ew_effect& effect) {
  if (effect.enable)
    enables_.insert(*effect.enable);
  erase_tokens(enables_, effect.seen);
  return {};
}

flag_ew flag_ew::decode(byte_reader& in) {
  flag_ew f;
  f.enables_ = read_tokens(in);
  return f;
}

} // namespace tally
