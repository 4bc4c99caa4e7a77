#pragma once

#include <utility>

#include <caf/all.hpp>

namespace tally {

/// Spawns a function-based actor `f(self)` that takes no other argument.
/// CAF 0.17 keeps a function actor's arguments in a shared tuple and, when
/// there are none, passes a null pointer that it then dereferences anyway
/// (`*args_` in caf/detail/init_fun_factory.hpp): undefined behaviour (a
/// reference bound to null) on which UBSan stops tallyd (docs/RELIABILITY.md,
/// "Sanitizers"). One unused argument gives CAF a real tuple. `f` may
/// return the actor's behavior (or nothing).
template <class F>
caf::actor spawn_self_only(caf::actor_system& sys, F f) {
  return sys.spawn(
    [f = std::move(f)](caf::event_based_actor* self, caf::unit_t) { return f(self); },
    caf::unit);
}

} // namespace tally
