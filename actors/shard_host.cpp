#include "actors/shard_host.hpp"

#include <utility>

#include <caf/resumable.hpp>

#include "server/shard_inbox.hpp"

namespace tally {

namespace {
// The unit of the hosted_on scope open on this thread (null: none).
thread_local std::shared_ptr<caf::execution_unit> spawning_home;
} // namespace

shard_unit::shard_unit(caf::actor_system& sys, std::shared_ptr<shard_inbox> tasks,
                       std::size_t max_throughput)
    : caf::execution_unit(&sys), tasks_(std::move(tasks)), max_throughput_(max_throughput) {}

void shard_unit::exec_later(caf::resumable* job) {
  // The reference CAF took for the scheduled job travels with the task; a
  // task dropped by a closed queue (the node is gone) keeps it, as a
  // stopped CAF scheduler would.
  tasks_->post([this, job] { run(job); });
}

// As a CAF scheduler worker runs a job (caf/scheduler/worker.hpp).
void shard_unit::run(caf::resumable* job) {
  switch (job->resume(this, max_throughput_)) {
    case caf::resumable::resume_later:
      exec_later(job); // more mail: after the others waiting now
      break;
    case caf::resumable::done:
    case caf::resumable::awaiting_message:
    case caf::resumable::shutdown_execution_unit:
      caf::intrusive_ptr_release(job);
      break;
  }
}

hosted_actor::hosted_actor(caf::actor_config& cfg)
    : caf::event_based_actor(cfg), home_(spawning_home) {}

void hosted_actor::enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* eu) {
  caf::event_based_actor::enqueue(std::move(ptr), home_ ? home_.get() : eu);
}

void hosted_actor::launch(caf::execution_unit* eu, bool lazy, bool hide) {
  caf::event_based_actor::launch(home_ ? home_.get() : eu, lazy, hide);
}

hosted_on::hosted_on(std::shared_ptr<caf::execution_unit> unit) noexcept
    : previous_(std::move(spawning_home)) {
  spawning_home = std::move(unit);
}

hosted_on::~hosted_on() {
  spawning_home = std::move(previous_);
}

} // namespace tally
