// The protocol side of the load generator: one driver per connection (and
// thread). A driver sends static requests pipelined (send, then receive the
// replies in order) and runs interactive transactions synchronously.
//
// - antidote_driver: AntidoteDB's protocol-buffer interface over
//   client/connection.hpp (tallyd or a real AntidoteDB node). Op ids (Tally's
//   extension field) only when workload::op_ids; otherwise only standard
//   messages are sent.
// - redis_driver: hiredis. GET/INCRBY for static-single, MGET for a
//   multi-key read, MULTI/INCRBY.../EXEC for a multi-key update; interactive
//   transactions are one GET round trip per read, then MULTI/INCRBY.../EXEC.
//   Counters only (run() refuses --type set|register for a redis target).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/load/workload.hpp"

namespace tally::load {

/// What a set or register update does to one key: a set adds (or
/// removes) the element element_of(item); a register is assigned
/// register_value_of(item).
struct typed_write {
  bool remove = false;
  std::uint64_t item = 0;
};

/// One operation of the workload.
struct op {
  enum class type : std::uint8_t { read = 0, update = 1, txn = 2 };
  type kind = type::read;
  std::vector<std::uint64_t> read_keys;
  std::vector<std::uint64_t> update_keys; // counters: each gets +workload::inc
  std::vector<typed_write> writes; // sets, registers: one per update key
  bool dup = false; // an update sent twice, same op ids (simulated lost ack)
};

constexpr unsigned op_type_count = 3;
const char* to_string(op::type t) noexcept;

/// The result of one request (or transaction).
struct outcome {
  bool ok = true;
  std::string error; // kind, e.g. "aborted", "timeout", "io:unavailable"
  bool connection_lost = false; // the driver must reconnect
};

class driver {
public:
  virtual ~driver() = default;
  /// Connects; empty on success, else the reason.
  virtual std::string connect() = 0;
  /// Queues and sends one static request (read or update).
  virtual std::string send(const op& o) = 0;
  /// Sends the previous request again, the same bytes (same op ids).
  virtual std::string send_again() = 0;
  /// The reply of the oldest request sent and not yet received.
  virtual outcome receive() = 0;
  /// Runs one interactive transaction (start, reads, updates, commit); with
  /// o.dup, runs its updates a second time with the same op ids.
  virtual outcome transact(const op& o) = 0;
  /// Reads the counters (static reads in batches); empty on success.
  virtual std::string read_values(const std::vector<std::uint64_t>& keys,
                                  std::vector<std::int64_t>& out) = 0;
  /// Reads the sets (sorted elements) or registers (one value each) of
  /// workload::type, in batches; empty on success.
  virtual std::string read_typed(const std::vector<std::uint64_t>& keys,
                                 std::vector<std::vector<std::string>>& out) = 0;
  virtual void close() = 0;
};

/// The bucket and key of key index `k` (bucket "<bucket>" or
/// "<bucket>-<k % buckets>", key "k<k>").
std::string bucket_of(const workload& w, std::uint64_t k);
std::string key_of(std::uint64_t k);
/// A set workload's element `i` ("e<i>") and a register workload's value
/// `id` ("v<id>").
std::string element_of(std::uint64_t i);
std::string register_value_of(std::uint64_t id);

/// `salt` makes op-id client ids differ between the drivers of one run.
std::unique_ptr<driver> make_driver(const target& t, const workload& w,
                                    std::uint64_t salt);

/// Whether this build has the redis driver (hiredis found).
bool have_redis() noexcept;

} // namespace tally::load
