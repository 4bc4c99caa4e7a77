#include "actors/open_transactions.hpp"

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/node_context.hpp"
#include "actors/transactions.hpp"
#include "common/log.hpp"
#include "protocol/descriptor.hpp"

namespace tally {

struct open_transactions::open_tx {
  std::mutex mu;
  tx_id id;
  std::uint64_t secret = 0; // tx_descriptor::secret
  std::uint64_t snapshot = 0;
  std::map<std::uint32_t, std::vector<tx_update>> writes; // by partition
  std::map<object_key, std::vector<crdt_effect>> own;
  std::size_t updates = 0; // buffered, for --max-tx-updates
  std::uint64_t session = 0; // the connection that started it
  bool committing = false;
  // An update is being prepared (its objects read first): reads, updates
  // and the commit that follow it wait in `queued`, in arrival order, so
  // they see its effects (clients pipeline them without waiting).
  bool preparing = false;
  std::deque<std::function<void()>> queued;
  // An update of it failed: it is aborted, and every later request of it
  // (a read, an update, the commit) gets this error, as on AntidoteDB,
  // whose coordinator aborts on a failed update (clocksi_interactive_coord,
  // receive_logging_responses). Committed without the failed update, it
  // would store less than the client asked for: antidote_ts_client ignores
  // an update's reply, and a client that pipelines the commit behind the
  // update sends it before the reply comes.
  std::optional<error> failed;
  std::chrono::steady_clock::time_point last_used;
};

namespace {

error aborted_by_failed_update(const error& why) {
  return make_error(errc::aborted,
                    "the transaction is aborted: one of its updates failed ("
                      + why.message() + "); start a new transaction");
}

} // namespace

open_transactions::open_transactions(caf::actor_system& sys,
                                     std::shared_ptr<const node_context> ctx)
    : sys_(sys), ctx_(std::move(ctx)) {}

std::size_t open_transactions::size() const {
  std::lock_guard<std::mutex> g{mu_};
  return open_.size();
}

void open_transactions::start(std::uint64_t session, const start_transaction_req& req,
                              reply_fn reply) {
  auto snap = snapshot_for(*ctx_, req);
  if (!snap)
    return reply(error_resp{snap.err()});
  auto tx = std::make_shared<open_tx>();
  tx->snapshot = *snap;
  tx->last_used = std::chrono::steady_clock::now();
  tx->session = session;
  {
    std::lock_guard<std::mutex> g{mu_};
    if (open_.size() >= ctx_->limits.max_open_transactions)
      return reply(error_resp{make_error(
        errc::unavailable, "too many open transactions (limit "
                             + std::to_string(ctx_->limits.max_open_transactions)
                             + "): commit or abort some first")});
    auto& mine = per_session_[session];
    if (mine >= ctx_->limits.max_tx_per_session)
      return reply(error_resp{make_error(
        errc::unavailable, "this connection has " + std::to_string(mine)
                             + " open transactions, its limit (--max-tx-per-connection "
                             + std::to_string(ctx_->limits.max_tx_per_session)
                             + "): commit or abort some first")});
    ++mine;
    // Sequence numbers count up (from 1, far below the static ids, which
    // count down from 2^64), so this node's transactions reach each
    // partition's `decisions` database in key order: its inserts stay at
    // the right edge of the B-tree instead of dirtying a random leaf each
    // (docs/PERFORMANCE.md, "Steady state"). What makes a descriptor
    // unguessable is its secret: 64 bits from the kernel's CSPRNG (a seeded
    // mt19937 could be predicted from a few hundred of one's own
    // descriptors), never 0.
    const std::uint64_t seq = ++last_seq_;
    do
      tx->secret = random_u64();
    while (tx->secret == 0);
    tx->id = tx_id{ctx_->incarnation, seq};
    open_.emplace(seq, tx);
  }
  tx_descriptor d;
  d.tx = tx->id;
  d.owner = ctx_->owner;
  d.owner_incarnation = ctx_->incarnation;
  d.snapshot = vector_clock{{local_dc, *snap}};
  d.secret = tx->secret;
  reply(start_transaction_resp{true, encode_tx_descriptor(d), 0});
}

expected<std::shared_ptr<open_transactions::open_tx>>
open_transactions::find(const std::string& descriptor) {
  auto d = decode_tx_descriptor(descriptor);
  if (!d)
    return d.err();
  if (d->owner != ctx_->owner || d->owner_incarnation != ctx_->incarnation
      || d->tx.origin != ctx_->incarnation)
    return make_error(errc::aborted,
                      "stale transaction descriptor: it was issued by " + d->owner
                        + " before a restart or by another node; start a new "
                          "transaction");
  std::lock_guard<std::mutex> g{mu_};
  auto i = open_.find(d->tx.seq);
  // A wrong secret gets the same answer as a sequence number never issued:
  // a forger learns nothing about which transactions are open.
  if (i == open_.end() || i->second->secret != d->secret)
    return make_error(errc::aborted, "unknown transaction: it committed, aborted or "
                                     "timed out; start a new transaction");
  return i->second;
}

void open_transactions::forget(std::uint64_t seq) {
  std::lock_guard<std::mutex> g{mu_};
  auto i = open_.find(seq);
  if (i == open_.end())
    return;
  release_session(i->second->session);
  open_.erase(i);
}

void open_transactions::release_session(std::uint64_t session) {
  auto s = per_session_.find(session);
  if (s != per_session_.end() && --s->second == 0)
    per_session_.erase(s);
}

bool open_transactions::holds(std::uint64_t session) const {
  std::lock_guard<std::mutex> g{mu_};
  return per_session_.count(session) != 0;
}

void open_transactions::forget_session(std::uint64_t session) {
  std::lock_guard<std::mutex> g{mu_};
  if (per_session_.count(session) == 0)
    return;
  for (auto i = open_.begin(); i != open_.end();) {
    // `keep` outlives `lock`: erase() drops the map's reference, and the
    // transaction (with the mutex `lock` holds) must not be freed before
    // `lock` unlocks it (ThreadSanitizer: heap-use-after-free in unlock,
    // docs/RELIABILITY.md "TSan").
    auto keep = i->second;
    std::lock_guard<std::mutex> lock{keep->mu};
    if (keep->session == session && !keep->committing) {
      release_session(session);
      i = open_.erase(i);
    } else {
      ++i;
    }
  }
}

void open_transactions::read(const read_objects_req& req, reply_fn reply) {
  auto tx = find(req.transaction_descriptor);
  if (!tx)
    return reply(error_resp{tx.err()});
  auto& t = **tx;
  std::uint64_t snapshot = 0;
  auto own = std::make_shared<std::map<object_key, std::vector<crdt_effect>>>();
  {
    std::lock_guard<std::mutex> g{t.mu};
    if (t.committing)
      return reply(error_resp{make_error(errc::invalid_argument,
                                         "the transaction is already committing")});
    if (t.preparing) {
      t.queued.push_back([this, req, reply] { read(req, reply); });
      return;
    }
    if (t.failed)
      return reply(error_resp{aborted_by_failed_update(*t.failed)});
    t.last_used = std::chrono::steady_clock::now();
    snapshot = t.snapshot;
    for (const auto& o : req.objects)
      if (auto it = t.own.find(o.key); it != t.own.end())
        own->emplace(o.key, it->second);
  }
  read_at(sys_, ctx_, snapshot, req.objects,
          [own](const object_key& k) {
            auto it = own->find(k);
            return it == own->end() ? std::vector<crdt_effect>{} : it->second;
          },
          [reply, types = types_of(req.objects)](expected<std::vector<crdt_value>> v) {
            if (!v)
              reply(error_resp{v.err()});
            else
              reply(read_objects_resp{true, std::move(*v), 0, types});
          });
}

void open_transactions::update(const update_objects_req& req, reply_fn reply) {
  auto tx = find(req.transaction_descriptor);
  if (!tx)
    return reply(error_resp{tx.err()});
  auto& t = **tx;
  std::uint64_t snapshot = 0;
  auto own = std::make_shared<std::map<object_key, std::vector<crdt_effect>>>();
  {
    std::lock_guard<std::mutex> g{t.mu};
    if (t.committing)
      return reply(error_resp{make_error(errc::invalid_argument,
                                         "the transaction is already committing")});
    if (t.preparing) {
      t.queued.push_back([this, req, reply] { update(req, reply); });
      return;
    }
    if (t.failed)
      return reply(error_resp{aborted_by_failed_update(*t.failed)});
    if (t.updates + req.updates.size() > ctx_->limits.max_tx_updates) {
      auto e = make_error(
        errc::invalid_argument,
        "the transaction would buffer " + std::to_string(t.updates + req.updates.size())
          + " updates, over the limit of " + std::to_string(ctx_->limits.max_tx_updates)
          + " (--max-tx-updates): commit it and start another");
      fail(t, e);
      return reply(error_resp{std::move(e)});
    }
    t.last_used = std::chrono::steady_clock::now();
    snapshot = t.snapshot;
    // Only the objects read before write need the transaction's own effects.
    for (const auto& u : req.updates)
      if (std::holds_alternative<crdt_op>(u.op))
        if (auto it = t.own.find(u.object.key); it != t.own.end())
          own->emplace(u.object.key, it->second);
    t.preparing = true;
  }
  // Validated and prepared first: nothing is buffered on an error.
  prepare_writes(
    sys_, ctx_, snapshot, req.updates,
    [own](const object_key& k) {
      auto it = own->find(k);
      return it == own->end() ? std::vector<crdt_effect>{} : it->second;
    },
    [txp = *tx, n = req.updates.size(), reply](expected<writes_by_partition> grouped) {
      std::deque<std::function<void()>> next;
      {
        std::lock_guard<std::mutex> g{txp->mu};
        txp->preparing = false;
        next.swap(txp->queued);
        if (!grouped)
          fail(*txp, grouped.err());
        if (grouped) {
          txp->updates += n;
          txp->last_used = std::chrono::steady_clock::now();
          for (auto& [p, ups] : *grouped)
            for (auto& u : ups) {
              txp->own[u.key].push_back(u.effect);
              txp->writes[p].push_back(std::move(u));
            }
        }
      }
      if (grouped)
        reply(operation_resp{true, 0});
      else
        reply(error_resp{grouped.err()});
      for (auto& f : next)
        f();
    });
}

void open_transactions::fail(open_tx& t, const error& why) {
  // Under t.mu. Nothing of it is written anywhere yet (updates are buffered
  // here until the commit): dropping the buffer is the whole abort.
  if (t.failed)
    return;
  t.failed = why;
  t.writes.clear();
  t.own.clear();
}

void open_transactions::commit(const commit_transaction_req& req, reply_fn reply) {
  auto tx = find(req.transaction_descriptor);
  if (!tx)
    return reply(error_resp{tx.err()});
  auto& t = **tx;
  std::map<std::uint32_t, std::vector<tx_update>> writes;
  std::optional<error> refused;
  {
    std::lock_guard<std::mutex> g{t.mu};
    if (t.committing)
      return reply(error_resp{make_error(errc::invalid_argument,
                                         "the transaction is already committing")});
    if (t.preparing) {
      t.queued.push_back([this, req, reply] { commit(req, reply); });
      return;
    }
    t.committing = true;
    if (t.failed)
      refused = aborted_by_failed_update(*t.failed);
    else
      writes = std::move(t.writes);
  }
  if (refused) {
    forget(t.id.seq);
    return reply(error_resp{std::move(*refused)});
  }
  auto id = t.id;
  auto snapshot = t.snapshot;
  forget(id.seq);
  commit_writes(sys_, ctx_, id, snapshot, std::move(writes),
                [reply](expected<std::uint64_t> at) {
                  if (!at)
                    reply(error_resp{at.err()});
                  else
                    reply(commit_resp{true, clock_bytes(*at), 0});
                });
}

void open_transactions::abort(const abort_transaction_req& req, reply_fn reply) {
  auto tx = find(req.transaction_descriptor);
  if (!tx)
    return reply(error_resp{tx.err()});
  {
    std::lock_guard<std::mutex> g{(*tx)->mu};
    if ((*tx)->committing)
      return reply(error_resp{make_error(errc::invalid_argument,
                                         "the transaction is already committing")});
  }
  // Updates are buffered here until commit: nothing to undo elsewhere.
  forget((*tx)->id.seq);
  reply(operation_resp{true, 0});
}

std::size_t open_transactions::expire(std::chrono::steady_clock::time_point now) {
  std::vector<tx_id> gone;
  {
    std::lock_guard<std::mutex> g{mu_};
    for (auto i = open_.begin(); i != open_.end();) {
      auto keep = i->second; // outlives `lock`, as in forget_session
      auto& t = *keep;
      std::lock_guard<std::mutex> lock{t.mu};
      if (!t.committing && now - t.last_used > ctx_->limits.tx_idle_timeout) {
        gone.push_back(t.id);
        release_session(t.session);
        i = open_.erase(i);
      } else {
        ++i;
      }
    }
  }
  for (const auto& id : gone)
    log(log_level::info, "transaction ", id,
        " aborted: idle longer than the transaction timeout");
  return gone.size();
}

} // namespace tally
