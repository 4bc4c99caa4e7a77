// Session guarantees for clients that send no clock (DESIGN.md, "The
// request path": "Sessions"). Every connection is a session: the server
// keeps the latest commit time it acknowledged on it and the latest
// snapshot it served on it, and a request that names no snapshot is given
// that floor as if the client had sent it. So read-your-writes and
// monotonic reads hold for every plain AntidoteDB client (the TypeScript
// and Go clients never send a clock). A request with its own clock is left
// as it is: the client chose its causality.
#pragma once

#include "clock/vector_clock.hpp"
#include "protocol/messages.hpp"

namespace tally {

class session_floor {
public:
  /// Gives `req` the floor as its snapshot clock when it names none (static
  /// reads and updates, and StartTransaction; the others run inside a
  /// transaction whose snapshot is already fixed).
  void apply(request& req) const;
  /// Raises the floor to the commit time or snapshot `resp` reports.
  void observe(const response& resp);
  /// The clock of a response's commit time or snapshot, empty when it has
  /// none (errors, reads inside a transaction, foreign bytes).
  static vector_clock clock_of(const response& resp);
  /// Raises the floor to `seen` (entry-wise maximum).
  void raise(const vector_clock& seen);
  const vector_clock& clock() const noexcept { return floor_; }

private:
  vector_clock floor_;
};

} // namespace tally
