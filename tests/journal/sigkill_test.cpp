// A real process crash: a child appends in durability::full and reports each
// acknowledged batch; the parent kills it with SIGKILL at a seeded moment and
// checks the store it left behind.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crc32c.hpp"
#include "journal/codec.hpp"
#include "journal/journal.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::options;
using tally::test::temp_dir;

namespace {

// What the child writes to the pipe after each acknowledged append: the last
// LSN of the batch and a CRC-32C over the encodings of every record so far.
struct ack {
  std::uint64_t last_lsn;
  std::uint32_t digest;
};

// The child's deterministic workload: batches of 1..64 records, committed
// transactions of one or two updates each, every update with a unique op id.
class workload {
public:
  explicit workload(std::uint64_t seed) : gen_(seed) {}

  std::vector<journal_record> next_batch() {
    std::vector<journal_record> out;
    auto n = std::uniform_int_distribution<int>{1, 64}(gen_);
    while (static_cast<int>(out.size()) < n) {
      tx_id tx{2, ++seq_};
      auto updates = std::uniform_int_distribution<int>{1, 2}(gen_);
      for (int u = 0; u < updates; ++u)
        out.push_back(test::update(
          tx, test::key(std::uniform_int_distribution<int>{0, 15}(gen_)),
          std::uniform_int_distribution<std::int64_t>{-50, 50}(gen_),
          op_id{2, ++ops_}));
      out.push_back(test::commit(tx, seq_, seq_));
    }
    return out;
  }

private:
  std::mt19937_64 gen_;
  std::uint64_t seq_ = 0;
  std::uint64_t ops_ = 0;
};

// Never returns. No Boost.Test inside: this is the child process.
[[noreturn]] void child_main(const std::string& path, std::uint64_t seed,
                             int out_fd) {
  auto opened = tally::journal::open(options(path, durability::full));
  if (!opened)
    _exit(2);
  auto& j = *opened->log;
  workload w{seed};
  std::uint32_t digest = 0;
  // Bounded, so an orphaned child ends by itself (~a few seconds of syncs).
  for (int i = 0; i < 5000; ++i) {
    auto batch = w.next_batch();
    auto r = j.append(batch);
    if (!r)
      _exit(3);
    for (const auto& rec : batch) {
      auto bytes = encode_record(rec);
      digest = crc32c_extend(digest, bytes.data(), bytes.size());
    }
    ack a{r->last, digest};
    if (::write(out_fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a))
      _exit(4);
  }
  _exit(0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(sigkill_during_appends_loses_no_acknowledged_record) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 4; ++round) {
      const std::uint64_t child_seed = rng.uniform(0, ~0ull);
      const std::uint64_t kill_after = rng.uniform(1, 40);
      BOOST_TEST_MESSAGE("round " << round << ": child seed " << child_seed
                                  << ", SIGKILL after " << kill_after
                                  << " acknowledgements");
      temp_dir dir;
      auto path = dir.sub("p");
      int fds[2];
      BOOST_REQUIRE(::pipe(fds) == 0);
      pid_t pid = ::fork();
      BOOST_REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(fds[0]);
        child_main(path, child_seed, fds[1]);
      }
      ::close(fds[1]);
      ack last{0, 0};
      std::uint64_t acks = 0;
      while (acks < kill_after) {
        ack a{};
        auto n = ::read(fds[0], &a, sizeof a);
        if (n != static_cast<ssize_t>(sizeof a))
          break; // the child ended (it should not before the kill)
        last = a;
        ++acks;
      }
      ::kill(pid, SIGKILL);
      int wstatus = 0;
      ::waitpid(pid, &wstatus, 0);
      ::close(fds[0]);
      BOOST_TEST(acks == kill_after);
      BOOST_TEST(WIFSIGNALED(wstatus));

      auto o = test::open_ok(options(path));
      BOOST_TEST(o.recovery.cut_records == 0u); // LMDB commits are atomic
      BOOST_TEST(o.recovery.next_lsn > last.last_lsn);

      // Replay the child's workload: every stored record must be exactly the
      // next expected one (so nothing is torn, lost or applied twice), all
      // acknowledged ones must be there, and past them at most whole
      // batches that committed before the kill reached the child.
      workload w{child_seed};
      std::vector<std::string> expected;
      std::vector<lsn> batch_ends;
      while (expected.size() < o.recovery.next_lsn + 64) {
        for (const auto& rec : w.next_batch())
          expected.push_back(encode_record(rec));
        batch_ends.push_back(expected.size());
      }
      lsn next = 1;
      std::uint32_t digest = 0;
      bool in_order = true;
      auto st = o.log->scan(1, ~0ull, [&](lsn at, const journal_record& rec) {
        auto bytes = encode_record(rec);
        if (at != next || bytes != expected[at - 1]) {
          in_order = false;
          return false;
        }
        if (at <= last.last_lsn)
          digest = crc32c_extend(digest, bytes.data(), bytes.size());
        ++next;
        return true;
      });
      BOOST_REQUIRE(st.has_value());
      BOOST_TEST(in_order);
      const lsn stored_last = next - 1;
      BOOST_TEST(stored_last >= last.last_lsn);
      BOOST_TEST(digest == last.digest);
      BOOST_TEST(std::count(batch_ends.begin(), batch_ends.end(), stored_last)
                 == 1); // ends on a batch boundary: no half batch
      // Undecided transactions would mean a half-applied batch.
      BOOST_TEST(o.recovery.undecided.empty());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
