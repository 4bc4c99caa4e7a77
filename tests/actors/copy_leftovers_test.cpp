// What an interrupted full copy leaves is tidied at the start
// (actors/copy_leftovers.hpp): scratch folders go, a store moved aside is
// deleted once its replacement is in place and put back when it is not;
// the node's start does it before the partitions are read (a stop between
// the swap's two renames used to leave the node refusing to start).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "actors/copy_leftovers.hpp"
#include "actors/node_startup.hpp"
#include "journal/partition_manifest.hpp"

using namespace tally;
namespace fs = std::filesystem;

namespace {

struct data_dir_fixture {
  fs::path root;
  data_dir_fixture() {
    std::random_device rd;
    root = fs::temp_directory_path() / ("tally-copy-leftovers-" + std::to_string(rd()));
    fs::remove_all(root);
  }
  ~data_dir_fixture() { fs::remove_all(root); }

  // A folder holding one file whose content says which store it is.
  void store(const std::string& rel, const std::string& tag) {
    fs::create_directories(root / rel);
    std::ofstream{root / rel / "data.mdb"} << tag;
  }
  std::string tag_of(const std::string& rel) {
    std::ifstream in{root / rel / "data.mdb"};
    std::string tag;
    in >> tag;
    return tag;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(copy_leftovers_tests, data_dir_fixture)

BOOST_AUTO_TEST_CASE(scratch_goes_a_finished_swap_drops_the_old_store_a_cut_one_puts_it_back) {
  store("partitions/1", "new1");
  store("partitions/1.replaced", "old1");     // swap finished, not yet deleted
  store("replicas/2.replaced", "old2");       // stopped between the renames
  store("replicas/2.copy-in", "received2");
  store("replicas/3", "live3");
  store("replicas/3.copy-for-12345", "sent3");
  store("partitions/4", "live4");             // untouched
  auto r = tidy_copy_leftovers(root.string());
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : r.err().to_string()));
  BOOST_TEST(tag_of("partitions/1") == "new1");
  BOOST_TEST(!fs::exists(root / "partitions/1.replaced"));
  BOOST_TEST(tag_of("replicas/2") == "old2"); // the store before that copy
  BOOST_TEST(!fs::exists(root / "replicas/2.replaced"));
  BOOST_TEST(!fs::exists(root / "replicas/2.copy-in"));
  BOOST_TEST(tag_of("replicas/3") == "live3");
  BOOST_TEST(!fs::exists(root / "replicas/3.copy-for-12345"));
  BOOST_TEST(tag_of("partitions/4") == "live4");
  BOOST_TEST(r->removed.size() == 3u);
  BOOST_REQUIRE(r->restored.size() == 1u);
  BOOST_TEST(r->restored[0] == "replicas/2");
  // Nothing left: a second pass changes nothing.
  auto again = tidy_copy_leftovers(root.string());
  BOOST_REQUIRE(again);
  BOOST_TEST(again->removed.empty());
  BOOST_TEST(again->restored.empty());
}

// A retired copy that is dropped (actors/copy_retirement.hpp): deleted, or
// moved to stale/ whole; a half-deleted one (<p>.dropped) is scratch at
// the next start; a copy that is not there is an error, and nothing else
// is touched.
BOOST_AUTO_TEST_CASE(a_dropped_copy_is_deleted_or_kept_aside_and_a_half_dropped_one_is_scratch) {
  store("replicas/5", "live5");
  store("replicas/6", "live6");
  store("replicas/7", "live7");
  store("partitions/5", "owner5");
  auto gone = drop_copy_folder(root.string(), 5, false, 111);
  BOOST_REQUIRE_MESSAGE(gone, (gone ? "" : gone.err().to_string()));
  BOOST_TEST(*gone == "deleted");
  BOOST_TEST(!fs::exists(root / "replicas/5"));
  BOOST_TEST(!fs::exists(root / "replicas/5.dropped"));
  BOOST_TEST(tag_of("partitions/5") == "owner5"); // the owner's copy is not a replica's
  auto aside = drop_copy_folder(root.string(), 6, true, 222);
  BOOST_REQUIRE_MESSAGE(aside, (aside ? "" : aside.err().to_string()));
  BOOST_TEST(*aside == (root / "stale/6.replicas.222").string());
  BOOST_TEST(!fs::exists(root / "replicas/6"));
  BOOST_TEST(tag_of("stale/6.replicas.222") == "live6");
  auto missing = drop_copy_folder(root.string(), 8, false, 333);
  BOOST_REQUIRE(!missing);
  BOOST_TEST(missing.err().code() == errc::not_found);
  // A stop between the rename and the deletion leaves <p>.dropped.
  store("replicas/9.dropped", "half9");
  auto r = tidy_copy_leftovers(root.string());
  BOOST_REQUIRE(r);
  BOOST_TEST(!fs::exists(root / "replicas/9.dropped"));
  BOOST_TEST(tag_of("replicas/7") == "live7");
  BOOST_TEST(tag_of("stale/6.replicas.222") == "live6");
}

// Copies kept in stale/ are deleted once older than the keep time, by the
// time in their name; a name tallyd did not give is left alone, and so is
// everything younger.
BOOST_AUTO_TEST_CASE(stale_copies_older_than_the_keep_time_are_deleted) {
  const std::uint64_t hour = 3600ull * 1000 * 1000;
  const std::uint64_t now = 1000 * hour;
  store("stale/3.replicas." + std::to_string(now - 2 * hour), "old3");
  store("stale/4.partitions." + std::to_string(now - 2 * hour - 1), "old4");
  store("stale/5.replicas." + std::to_string(now - hour / 2), "young5");
  store("stale/notes", "operator");
  store("stale/6.replicas.soon", "operator");
  auto gone = expire_stale_copies(root.string(), hour, now);
  BOOST_REQUIRE_MESSAGE(gone, (gone ? "" : gone.err().to_string()));
  BOOST_TEST(gone->size() == 2u);
  BOOST_TEST(!fs::exists(root / ("stale/3.replicas." + std::to_string(now - 2 * hour))));
  BOOST_TEST(!fs::exists(root / ("stale/4.partitions." + std::to_string(now - 2 * hour - 1))));
  BOOST_TEST(tag_of("stale/5.replicas." + std::to_string(now - hour / 2)) == "young5");
  BOOST_TEST(tag_of("stale/notes") == "operator");
  BOOST_TEST(tag_of("stale/6.replicas.soon") == "operator");
  // No stale/ folder at all: nothing to do.
  fs::remove_all(root / "stale");
  auto none = expire_stale_copies(root.string(), hour, now);
  BOOST_REQUIRE(none);
  BOOST_TEST(none->empty());
}

BOOST_AUTO_TEST_CASE(a_data_dir_without_copy_folders_is_fine) {
  fs::create_directories(root);
  auto r = tidy_copy_leftovers(root.string());
  BOOST_REQUIRE(r);
  BOOST_TEST(r->removed.empty());
}

// The node's start (step 1) tidies them before step 3 reads the partitions:
// an owner's store cut off mid-swap, listed in the manifest, is back and
// the start goes on (it used to stop: "listed in the manifest, but its
// folder ... is missing").
BOOST_AUTO_TEST_CASE(the_start_puts_back_a_store_cut_off_mid_swap) {
  node_config cfg;
  cfg.data_dir = root.string();
  cfg.partitions = 2;
  {
    auto lock = lock_data_dir(cfg);
    BOOST_REQUIRE_MESSAGE(lock, (lock ? "" : lock.err().to_string()));
    ::close(*lock);
  }
  store("partitions/0", "zero");
  store("partitions/1", "one");
  BOOST_REQUIRE(manifest_add(cfg.data_dir, 0));
  BOOST_REQUIRE(manifest_add(cfg.data_dir, 1));
  auto before = read_partitions_on_disk(cfg);
  BOOST_REQUIRE_MESSAGE(before, (before ? "" : before.err().to_string()));
  // Partition 1 swapped halfway: moved aside, its copy not yet in place.
  fs::rename(root / "partitions/1", root / "partitions/1.replaced");
  store("partitions/1.copy-in", "copy");
  BOOST_TEST(!read_partitions_on_disk(cfg)); // what a start met before
  auto lock = lock_data_dir(cfg);
  BOOST_REQUIRE_MESSAGE(lock, (lock ? "" : lock.err().to_string()));
  ::close(*lock);
  auto after = read_partitions_on_disk(cfg);
  BOOST_REQUIRE_MESSAGE(after, (after ? "" : after.err().to_string()));
  BOOST_TEST(tag_of("partitions/1") == "one");
  BOOST_TEST(!fs::exists(root / "partitions/1.copy-in"));
}

BOOST_AUTO_TEST_SUITE_END()
