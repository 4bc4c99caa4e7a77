#include "crdt/g_set.hpp"

#include "crdt/set_elements.hpp"

namespace tally {

namespace {

void write_strings(byte_writer& out, const std::vector<std::string>& v) {
  out.varint(v.size());
  for (const auto& s : v)
    out.bytes(s);
}

std::vector<std::string> read_strings(byte_reader& in) {
  std::vector<std::string> out;
  const auto n = in.count(1);
  for (std::size_t i = 0; i < n && in.ok(); ++i) {
    auto s = in.bytes();
    check_increasing(in, out.empty(), out.empty() ? s : out.back(), s);
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace

void g_set_effect::encode(byte_writer& out) const {
  write_strings(out, elements);
}

g_set_effect g_set_effect::decode(byte_reader& in) {
  return {read_strings(in)};
}

expected<g_set_effect> g_set::prepare(const set_update& update,
                                      downstream_context&) const {
  const auto* a = std::get_if<set_add>(&update);
  if (!a)
    return make_error(errc::wrong_type,
                      "a grow-only set takes add and add_all only, not "
                      "remove, remove_all or reset");
  return g_set_effect{distinct_sorted(a->elements)};
}

status g_set::apply(const g_set_effect& effect) {
  elements_.insert(effect.elements.begin(), effect.elements.end());
  return {};
}

void g_set::encode(byte_writer& out) const { write_strings(out, value()); }

g_set g_set::decode(byte_reader& in) {
  auto v = read_strings(in);
  g_set s;
  s.elements_.insert(v.begin(), v.end());
  return s;
}

} // namespace tally
