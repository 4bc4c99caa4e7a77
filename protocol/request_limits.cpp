#include "protocol/request_limits.hpp"

#include <string>
#include <type_traits>

#include "protocol/descriptor.hpp"

namespace tally {

namespace {

// Far above any wall clock in microseconds (year 294,000) and far below
// 2^64: a commit time above an accepted clock never wraps, whatever the
// skew setting.
constexpr std::uint64_t max_clock_value = static_cast<std::uint64_t>(INT64_MAX);

error refuse(const std::string& what) {
  return make_error(errc::invalid_argument, "request refused: " + what);
}

status check_key(const object_key& k, const request_limits& l) {
  const auto n = k.bucket.size() + k.key.size();
  if (n > l.max_object_key_bytes)
    return refuse("object " + k.bucket.substr(0, 32) + "/" + k.key.substr(0, 32)
                  + "...: bucket and key use " + std::to_string(n)
                  + " bytes, at most " + std::to_string(l.max_object_key_bytes)
                  + " (max_object_key_bytes)");
  return {};
}

status check_count(std::size_t n, const char* what, const request_limits& l) {
  if (n > l.max_objects_per_request)
    return refuse(std::to_string(n) + " " + what + " in one request, at most "
                  + std::to_string(l.max_objects_per_request)
                  + " (max_objects_per_request)");
  return {};
}

status check_objects(const std::vector<bound_object>& objects,
                     const request_limits& l) {
  if (auto c = check_count(objects.size(), "objects", l); !c)
    return c;
  for (const auto& o : objects)
    if (auto k = check_key(o.key, l); !k)
      return k;
  return {};
}

status check_updates(const std::vector<update_op>& updates,
                     const request_limits& l) {
  if (auto c = check_count(updates.size(), "updates", l); !c)
    return c;
  for (const auto& u : updates) {
    if (auto k = check_key(u.object.key, l); !k)
      return k;
    const auto* op = std::get_if<counter_op>(&u.op);
    if (!op)
      continue; // check_supported() refuses it later, with its own message
    const std::int64_t d = op->update.delta;
    // |INT64_MIN| does not fit an int64: refused whatever the limit.
    const std::uint64_t magnitude =
      d == INT64_MIN ? static_cast<std::uint64_t>(INT64_MAX) + 1
      : d < 0        ? static_cast<std::uint64_t>(-d)
                     : static_cast<std::uint64_t>(d);
    if (d == INT64_MIN || magnitude > l.max_increment)
      return refuse("increment " + std::to_string(d) + " of "
                    + u.object.key.bucket.substr(0, 32) + "/"
                    + u.object.key.key.substr(0, 32) + " is outside [-"
                    + std::to_string(l.max_increment) + ", "
                    + std::to_string(l.max_increment) + "] (max_increment)");
  }
  return {};
}

status check_clock(const vector_clock& c, const char* what,
                   const request_limits& l, std::uint64_t now_us) {
  for (const auto& e : c.entries()) {
    if (e.time > max_clock_value)
      return refuse(std::string{what} + " entry " + std::to_string(e.time)
                    + " is beyond 2^63-1 microseconds: no node issued it");
    if (l.max_clock_skew_us != 0 && e.time > now_us
        && e.time - now_us > l.max_clock_skew_us)
      return refuse(std::string{what} + " is " + std::to_string(e.time - now_us)
                    + " us ahead of this node's clock, at most "
                    + std::to_string(l.max_clock_skew_us)
                    + " (max_clock_skew, tallyd --max-clock-skew-ms): a clock "
                      "from the future would delay every later commit");
  }
  return {};
}

status check_start(const start_transaction_req& s, const request_limits& l,
                   std::uint64_t now_us) {
  if (!s.timestamp)
    return {};
  if (s.timestamp->size() > l.max_descriptor_bytes)
    return refuse("timestamp of " + std::to_string(s.timestamp->size())
                  + " bytes, at most " + std::to_string(l.max_descriptor_bytes)
                  + " (max_descriptor_bytes)");
  auto c = decode_clock(*s.timestamp);
  if (!c)
    return c.err();
  return check_clock(*c, "the start timestamp", l, now_us);
}

status check_descriptor(const std::string& bytes, const request_limits& l,
                        std::uint64_t now_us) {
  if (bytes.size() > l.max_descriptor_bytes)
    return refuse("transaction descriptor of " + std::to_string(bytes.size())
                  + " bytes, at most " + std::to_string(l.max_descriptor_bytes)
                  + " (max_descriptor_bytes)");
  auto d = decode_tx_descriptor(bytes);
  if (!d)
    return d.err();
  if (d->owner.size() > l.max_owner_bytes)
    return refuse("descriptor owner of " + std::to_string(d->owner.size())
                  + " bytes, at most " + std::to_string(l.max_owner_bytes)
                  + " (max_owner_bytes)");
  return check_clock(d->snapshot, "the descriptor's snapshot", l, now_us);
}

} // namespace

status validate_request(const request& req, const request_limits& l,
                        std::uint64_t now_us) {
  return std::visit(
    [&](const auto& r) -> status {
      using T = std::decay_t<decltype(r)>;
      if constexpr (std::is_same_v<T, read_objects_req>) {
        if (auto d = check_descriptor(r.transaction_descriptor, l, now_us); !d)
          return d;
        return check_objects(r.objects, l);
      } else if constexpr (std::is_same_v<T, update_objects_req>) {
        if (auto d = check_descriptor(r.transaction_descriptor, l, now_us); !d)
          return d;
        return check_updates(r.updates, l);
      } else if constexpr (std::is_same_v<T, start_transaction_req>) {
        return check_start(r, l, now_us);
      } else if constexpr (std::is_same_v<T, abort_transaction_req>
                           || std::is_same_v<T, commit_transaction_req>) {
        return check_descriptor(r.transaction_descriptor, l, now_us);
      } else if constexpr (std::is_same_v<T, static_update_objects_req>) {
        if (auto s = check_start(r.transaction, l, now_us); !s)
          return s;
        return check_updates(r.updates, l);
      } else if constexpr (std::is_same_v<T, static_read_objects_req>) {
        if (auto s = check_start(r.transaction, l, now_us); !s)
          return s;
        return check_objects(r.objects, l);
      } else {
        return {}; // admin_req: check_admin_req() at decode
      }
    },
    req);
}

expected<request> decode_valid_request(std::uint8_t code, std::string_view body,
                                       const request_limits& limits,
                                       std::uint64_t now_us) {
  auto req = decode_request(code, body);
  if (!req)
    return req;
  if (auto ok = validate_request(*req, limits, now_us); !ok)
    return ok.err();
  return req;
}

} // namespace tally
