// Fencing of a partition's copies by terms (docs/REPLICATION.md,
// "Failover"): no two primaries of one partition get writes acknowledged at
// the same time, whatever the nodes' views of who leads.
//
// A copy becomes primary through a take-over round under a new term,
// greater than every term it knows of. Each copy promises at most once per
// term and only to rising terms: it answers a round (with its journal end)
// only when the round's term is above every term it promised before, and
// from then on it takes no batch of a lower term. A primary whose copy
// promised a higher term steps down. The round needs promises from n - w
// copies besides the promoter (n - w + 1 with it), and every write needs w
// copies: any set of w copies meets the promised ones, so
//   - every write acknowledged before the round is on a copy that answered
//     (the promoter pulls the longest answer), and
//   - no write of a lower term is acknowledged after it: it needs w copies,
//     one of them promised the higher term and refuses it.
// This is the ballot rule of Paxos (Lamport, "Paxos Made Simple", 2001,
// Sec. 2.2, phase 1: a promise not to accept proposals numbered less than
// n) and of Raft's terms (Ongaro and Ousterhout, 2014, Sec. 5.1); the
// membership actors' views only pick who tries to lead.
//
// Terms are compared by number, then by the promoting node's id, so two
// promoters never share a term. A new term's number is above every term
// the promoter has seen and at least the wall clock in microseconds: the
// clock plays no part in safety, but it puts a new round above promises
// a copy made long ago to a primary since gone (a copy that left the copy
// set and came back, a partition handed off to a node whose copy has
// promised nothing), which would otherwise fence the new primary until it
// learnt their terms. Promises outlive a restart (Raft keeps currentTerm
// and votedFor on stable storage for the same reason, Sec. 5.1 and Figure
// 2): the partition actor saves the promise with the copy's journal before
// it answers a round or takes a batch of a higher term, and a restarted
// copy restores it (restore()); it still starts as a replica of nobody
// (it takes batches only once its membership names a primary).
//
// Epochs (docs/REPLICATION.md, "Rounds across two copy sets"): every round
// and batch also carries the ring epoch of the view its sender's copy set
// came from. A copy that promised a round of epoch e refuses rounds and
// batches of every epoch below e, whatever their term numbers: once a
// round of a newer view has its promises, a copy still on an older view
// cannot gather promises or acknowledgements from them, however high a
// term its next attempt picks. Epochs only add refusals: the order of
// terms, which the rounds' election restriction relies on, is unchanged.
//
// Plain values: no actors, no clock, no I/O; one owner (the partition actor).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>

#include "common/copy_term.hpp"
#include "ring/claim.hpp"

namespace tally {

class copy_fence {
public:
  /// The highest term this copy promised (or led under).
  const copy_term& promised() const noexcept { return promised_; }
  /// The highest ring epoch of a round it promised or a batch it took.
  std::uint64_t promised_epoch() const noexcept { return promised_epoch_; }

  /// A take-over round under `t`, of a view of ring epoch `epoch`, asks for
  /// this copy's promise: true (and promised) when `t` is above every term
  /// promised before and `epoch` is not below the epoch promised.
  bool promise(const copy_term& t, std::uint64_t epoch = 0) {
    saw(t);
    if (epoch < promised_epoch_ || !(promised_ < t))
      return false;
    promised_ = t;
    promised_epoch_ = epoch;
    return true;
  }

  /// A batch (or a piece of a full copy) sent under term `t` by a primary
  /// whose view is of ring epoch `epoch`: true when this copy may take it
  /// (no higher term and no newer epoch promised); raises the promise to
  /// `t` and `epoch`.
  bool admits(const copy_term& t, std::uint64_t epoch = 0) {
    saw(t);
    if (epoch < promised_epoch_ || t < promised_)
      return false;
    promised_ = t;
    promised_epoch_ = epoch;
    return true;
  }

  /// Refuses every epoch below `epoch` from now on, without promising a
  /// term (a copy whose own view is at least that new, asked by a round it
  /// refuses, or asked from outside its copy set by a newer view:
  /// partition_replication's r_fence). A round under way keeps it
  /// if it is abandoned.
  void raise_epoch(std::uint64_t epoch) {
    promised_epoch_ = std::max(promised_epoch_, epoch);
    before_round_epoch_ = std::max(before_round_epoch_, epoch);
  }

  /// After a restart: what this copy promised before (saved with its
  /// journal, with its epoch) and the term of its last record; the promise
  /// becomes the higher of them if that is above the one it holds.
  void restore(const copy_term& saved, const copy_term& last_written,
               std::uint64_t saved_epoch = 0) {
    for (const auto* t : {&saved, &last_written})
      if (promised_ < *t) {
        promised_ = *t;
        saw(*t);
      }
    promised_epoch_ = std::max(promised_epoch_, saved_epoch);
  }

  /// A term heard of elsewhere (a refusal names the higher one it promised).
  void saw(const copy_term& t) {
    if (highest_ < t)
      highest_ = t;
  }

  /// Whether this copy may start a round, or lead, under a view of ring
  /// epoch `epoch`: not when it promised a round or took a batch of a newer
  /// view (its own view is behind; it waits until its view catches up).
  bool may_lead_in(std::uint64_t epoch) const noexcept { return promised_epoch_ <= epoch; }

  /// A new term for a round by `self` in a view of ring epoch `epoch`,
  /// above every term seen and at least `now_us`; promised here (the
  /// promoter is one of the copies that promise). The caller checks
  /// may_lead_in(epoch) first.
  copy_term start_round(const node_id& self, std::uint64_t now_us, std::uint64_t epoch = 0) {
    copy_term t{std::max(std::max(highest_.n, promised_.n) + 1, now_us), self};
    before_round_ = promised_;
    before_round_epoch_ = promised_epoch_;
    promised_ = t;
    promised_epoch_ = std::max(promised_epoch_, epoch);
    saw(t);
    return t;
  }

  /// The round under `t` did not get its promises: this copy's own promise
  /// to it is taken back (no primary ever leads under `t`, so nobody relies
  /// on it), unless it has promised a higher term since. Kept, it would
  /// refuse the batches of a primary that leads under a lower term, though
  /// that primary's round was sound (a copy whose view wrongly made it try
  /// to lead fenced the real primary that way).
  void abandon_round(const copy_term& t) {
    if (promised_ == t) {
      promised_ = before_round_;
      promised_epoch_ = before_round_epoch_;
    }
  }

private:
  copy_term promised_;
  copy_term highest_;
  copy_term before_round_; // promised_ when the last round started
  std::uint64_t promised_epoch_ = 0;
  std::uint64_t before_round_epoch_ = 0;
};

} // namespace tally
