#include "server/session_floor.hpp"

#include "protocol/descriptor.hpp"

namespace tally {

namespace {

void fill(start_transaction_req& t, const vector_clock& floor) {
  if (!t.timestamp && !floor.empty())
    t.timestamp = encode_clock(floor);
}

vector_clock decoded(const std::string& bytes) {
  auto c = decode_clock(bytes);
  return c ? std::move(*c) : vector_clock{};
}

} // namespace

void session_floor::apply(request& req) const {
  if (floor_.empty())
    return;
  if (auto* s = std::get_if<static_read_objects_req>(&req))
    fill(s->transaction, floor_);
  else if (auto* u = std::get_if<static_update_objects_req>(&req))
    fill(u->transaction, floor_);
  else if (auto* t = std::get_if<start_transaction_req>(&req))
    fill(*t, floor_);
}

vector_clock session_floor::clock_of(const response& resp) {
  if (const auto* c = std::get_if<commit_resp>(&resp))
    return c->success ? decoded(c->commit_time) : vector_clock{};
  if (const auto* s = std::get_if<static_read_objects_resp>(&resp))
    return s->commit.success ? decoded(s->commit.commit_time) : vector_clock{};
  return {};
}

void session_floor::observe(const response& resp) {
  raise(clock_of(resp));
}

void session_floor::raise(const vector_clock& seen) {
  if (!seen.empty())
    floor_.merge(seen);
}

} // namespace tally
