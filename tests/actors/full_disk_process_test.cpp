// Issue 18, "a full disk", through the real tallyd: writes that find no
// room fail with a clear error and change nothing, reads keep being served,
// and writes resume by themselves once there is room again, without a
// restart; a node restarted while there is no room still starts and
// serves reads. "No room" is a file size limit (RLIMIT_FSIZE) put on the
// running tallyd with prlimit(2): the kernel then refuses every write that
// would grow a file (EFBIG), which tallyd treats like ENOSPC. It needs no
// privileges, unlike a small tmpfs; scripts/full_disk_check.sh runs the
// same cycle on a real full tmpfs (root only; docs/NODE.md).
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>

#include <filesystem>
#include <string>

#include "ring/partition.hpp"
#include "tests/actors/node_process_support.hpp"

using namespace tally;
using namespace tally::test;
namespace fs = std::filesystem;

namespace {

bound_object counter(const std::string& k) {
  return bound_object{object_key{"bucket", k}, crdt_type::counter};
}

// One increment; the error text, or "" when committed.
std::string increment(wire_client& c, const std::string& key) {
  static_update_objects_req up;
  up.updates.push_back(update_op{counter(key), counter_op{counter_update{1}, {}}});
  auto r = c.call(up);
  if (!r)
    return "no answer: " + c.last_error;
  if (auto* ok = std::get_if<commit_resp>(&*r); ok && ok->success)
    return "";
  if (auto* e = std::get_if<error_resp>(&*r))
    return e->err.to_string();
  return "refused without a message";
}

std::int64_t value_of(wire_client& c, const std::string& key) {
  static_read_objects_req rd;
  rd.objects.push_back(counter(key));
  auto r = c.call(rd);
  BOOST_REQUIRE(r && std::holds_alternative<static_read_objects_resp>(*r));
  const auto& resp = std::get<static_read_objects_resp>(*r);
  BOOST_REQUIRE(resp.objects.success);
  return std::get<std::int64_t>(resp.objects.values.at(0));
}

// The largest data file of the node: a limit at its size leaves no room to
// grow any file.
std::uint64_t largest_data_file(const std::string& dir) {
  std::uint64_t out = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir + "/partitions"))
    if (e.path().filename() == "data.mdb")
      out = std::max<std::uint64_t>(out, e.file_size());
  return out;
}

void limit_file_size(pid_t pid, rlim_t bytes) {
  rlimit lim{bytes, RLIM_INFINITY};
  BOOST_REQUIRE(::prlimit(pid, RLIMIT_FSIZE, &lim, nullptr) == 0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(full_disk)

BOOST_AUTO_TEST_CASE(writes_fail_clearly_reads_go_on_and_writes_resume_without_a_restart) {
  temp_dir d;
  server s{d.path, "batch"};
  BOOST_REQUIRE(s.start({"--partitions", "1"}));
  wire_client c{s.port};
  BOOST_REQUIRE(increment(c, "before").empty());
  // No room from now on.
  limit_file_size(s.pid, largest_data_file(d.path));
  // Writes go on while pages freed inside the file are reused; new keys
  // with long names soon need the file to grow. Bounded.
  std::string refused;
  std::uint64_t acked = 0;
  for (int i = 0; i < 20000 && refused.empty(); ++i) {
    auto err = increment(c, "grow-" + std::to_string(i) + std::string(300, 'x'));
    if (err.empty())
      ++acked;
    else
      refused = err;
  }
  BOOST_TEST_MESSAGE("acknowledged before the disk was full: " << acked);
  BOOST_REQUIRE_MESSAGE(!refused.empty(), "no write was refused");
  BOOST_TEST(refused.find("storage_full") != std::string::npos, refused);
  BOOST_TEST(refused.find("file size limit or disk quota") != std::string::npos, refused);
  // Refused writes changed nothing; reads are served.
  BOOST_TEST(value_of(c, "before") == 1);
  BOOST_TEST(!increment(c, "during").empty());
  BOOST_TEST(value_of(c, "during") == 0);
  // Room again: the next write commits, no restart.
  limit_file_size(s.pid, RLIM_INFINITY);
  BOOST_TEST(increment(c, "after").empty());
  BOOST_TEST(increment(c, "during").empty());
  BOOST_TEST(value_of(c, "after") == 1);
  BOOST_TEST(value_of(c, "during") == 1);
  BOOST_TEST(value_of(c, "before") == 1);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_CASE(a_node_restarted_without_room_starts_and_serves_reads) {
  temp_dir d;
  {
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start({"--partitions", "2"}));
    wire_client c{s.port};
    BOOST_REQUIRE(increment(c, "kept").empty());
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
  // The restarted node inherits a limit of 0 bytes: no file may grow at
  // all (its stderr is not a file here). Used to fail at start, writing an
  // unchanged ring file.
  rlimit old{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  rlimit none{0, old.rlim_max};
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &none) == 0);
  ::signal(SIGXFSZ, SIG_IGN); // the test's own process, meanwhile
  server s{d.path, "batch"};
  bool started = s.start({"--partitions", "2"});
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &old) == 0);
  BOOST_REQUIRE_MESSAGE(started, "tallyd must start without room");
  wire_client c{s.port};
  BOOST_TEST(value_of(c, "kept") == 1);
  auto refused = increment(c, "new" + std::string(400, 'y'));
  BOOST_TEST(refused.find("storage_full") != std::string::npos, refused);
  limit_file_size(s.pid, RLIM_INFINITY);
  BOOST_TEST(increment(c, "new" + std::string(400, 'y')).empty());
  BOOST_TEST(value_of(c, "kept") == 1);
  BOOST_TEST(s.stop(SIGTERM) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
