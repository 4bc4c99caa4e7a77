// Partition actors on the client server's shard threads (docs/PERFORMANCE.md,
// "The request path"; DESIGN.md: "many partitions share one shard thread,
// and the thread that reads a request runs it itself when it owns the
// partition").
//
// A partition stays a CAF actor with its own mailbox and state, owned by
// exactly one thread at a time: CAF's mailbox guarantees that. What changes
// is where it runs. An actor derived from hosted_actor schedules itself on
// a shard_unit (a caf::execution_unit over one shard's task queue,
// server/shard_inbox.hpp) whatever thread sends to it: a request that a
// shard reads for a partition it hosts is handled on that same thread in
// the same wake-up, and the reply is written from there too, with no
// thread hand-off at all. Messages from elsewhere (the membership, a peer
// node through the middleman, the CAF clock's timers, another shard) post
// the actor to its shard's queue: one hop, batched per wake-up.
//
// Cost of the trick: two overrides of CAF's scheduled_actor (enqueue and
// launch pass the actor's home unit instead of the sender's); CAF's own
// code does the rest (scheduled_actor::enqueue calls unit->exec_later when
// a message wakes an idle actor, as a scheduler worker's unit would).
#pragma once

#include <cstddef>
#include <memory>

#include <caf/event_based_actor.hpp>
#include <caf/execution_unit.hpp>

namespace tally {

class shard_inbox;

/// One shard thread as a CAF execution unit: exec_later posts the actor to
/// the shard's task queue, which resumes it on the shard's thread for at
/// most `max_throughput` messages at a time (then it goes to the back of
/// the queue, so one busy partition cannot starve the shard's I/O).
class shard_unit final : public caf::execution_unit {
public:
  shard_unit(caf::actor_system& sys, std::shared_ptr<shard_inbox> tasks,
             std::size_t max_throughput = 256);
  /// Any thread (CAF's own units take only their own thread's calls).
  void exec_later(caf::resumable* job) override;

private:
  void run(caf::resumable* job);

  std::shared_ptr<shard_inbox> tasks_;
  std::size_t max_throughput_;
};

/// An event-based actor that runs on a shard_unit when it was spawned
/// inside a `hosted_on` scope, and as any CAF actor otherwise (detached or
/// on the scheduler, as the spawn says).
class hosted_actor : public caf::event_based_actor {
public:
  explicit hosted_actor(caf::actor_config& cfg);

  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* eu) override;
  void launch(caf::execution_unit* eu, bool lazy, bool hide) override;

  /// The unit this actor runs on (null: wherever CAF puts it).
  caf::execution_unit* home() const noexcept { return home_.get(); }

private:
  // Shared: the unit lives as long as an actor that may post to it.
  std::shared_ptr<caf::execution_unit> home_;
};

/// Actors derived from hosted_actor that are spawned while this object is
/// alive (on this thread) run on `unit`, and keep it alive.
class hosted_on {
public:
  explicit hosted_on(std::shared_ptr<caf::execution_unit> unit) noexcept;
  ~hosted_on();
  hosted_on(const hosted_on&) = delete;
  hosted_on& operator=(const hosted_on&) = delete;

private:
  std::shared_ptr<caf::execution_unit> previous_;
};

} // namespace tally
