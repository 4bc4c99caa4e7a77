// Transaction coordinators and the transaction manager (DESIGN.md,
// "Transactions"; docs/NODE.md).
//
// Protocol, all client_request -> client_reply (actors/messages.hpp):
//   static coordinator (spawn_static_coordinator): one per static request
//     (122 StaticUpdateObjects, 123 StaticReadObjects); answers it and quits.
//   tx manager (spawn_tx_manager): one per node; answers 119
//     StartTransaction by spawning an interactive coordinator and returning
//     its descriptor, and delegates 116/118/120/121 to the coordinator the
//     descriptor names (stale or foreign descriptors get an ErrorResp).
//   interactive coordinator: one per open transaction; buffers updates,
//     reads with its own updates, commits or aborts, then quits; aborted
//     when idle longer than node_limits::tx_idle_timeout.
// Commit: one partition -> one-step commit; several -> two-phase (durable
// prepares, commit time = max prepare time, commit records), acknowledged
// once every commit record is durable.
#pragma once

#include <memory>

namespace caf {
class actor;
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

caf::actor spawn_static_coordinator(caf::actor_system& sys,
                                    std::shared_ptr<const node_context> ctx);

caf::actor spawn_tx_manager(caf::actor_system& sys,
                            std::shared_ptr<const node_context> ctx);

} // namespace tally
