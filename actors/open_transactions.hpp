// The interactive transactions of a node (DESIGN.md, "Transactions";
// docs/NODE.md): start, read, update, commit and abort, run on the client
// server's threads with no coordinator actor in between.
//
//   StartTransaction  snapshot = max(client clock, stable time); answered at
//                     once with a descriptor that carries 64 random secret
//                     bits besides the (counting) sequence number: a client
//                     cannot name another client's transaction by counting;
//   ReadObjects       one part_read_call per partition touched, with the
//                     transaction's own updates (read your writes);
//   UpdateObjects     validated and buffered here, answered at once; a
//                     failed update aborts the transaction (AntidoteDB's
//                     rule): its commit then fails with errc::aborted;
//   CommitTransaction nothing written: commits at its snapshot; one
//                     partition: a one-step commit there; several: a
//                     short-lived coordinator runs two-phase commit;
//   AbortTransaction  dropped (nothing was sent to any partition).
// A transaction idle longer than node_limits::tx_idle_timeout is aborted by
// expire(), which the node calls about once a second. At most
// node_limits::max_open_transactions are open at once.
//
// Thread-safety: any thread may call anything; the table and each
// transaction have their own mutex (a transaction is normally used by one
// connection, so they are uncontended).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "actors/messages.hpp"
#include "server/request_handler.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

class open_transactions {
public:
  open_transactions(caf::actor_system& sys, std::shared_ptr<const node_context> ctx);

  /// `session`: the client connection; it may hold at most
  /// node_limits::max_tx_per_session open transactions.
  void start(std::uint64_t session, const start_transaction_req& req, reply_fn reply);
  void read(const read_objects_req& req, reply_fn reply);
  void update(const update_objects_req& req, reply_fn reply);
  void commit(const commit_transaction_req& req, reply_fn reply);
  void abort(const abort_transaction_req& req, reply_fn reply);

  /// Aborts every transaction idle since before now - tx_idle_timeout (and
  /// not committing); returns how many.
  std::size_t expire(std::chrono::steady_clock::time_point now);
  /// Aborts every open transaction started by `session` (its connection
  /// closed: nobody can commit them any more).
  void forget_session(std::uint64_t session);
  /// True while `session` has an open transaction.
  bool holds(std::uint64_t session) const;
  std::size_t size() const;

private:
  struct open_tx;
  expected<std::shared_ptr<open_tx>> find(const std::string& descriptor);
  void forget(std::uint64_t seq);
  // Under the transaction's mutex: an update of `t` failed with `why`, so
  // `t` is aborted (its buffered updates dropped; later requests refused).
  static void fail(open_tx& t, const error& why);
  // Under mu_: one open transaction of `session` fewer.
  void release_session(std::uint64_t session);

  caf::actor_system& sys_;
  std::shared_ptr<const node_context> ctx_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<open_tx>> open_;
  std::unordered_map<std::uint64_t, std::size_t> per_session_; // open count
  std::uint64_t last_seq_ = 0; // the last transaction's sequence number
};

} // namespace tally
