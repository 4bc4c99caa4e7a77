// Writes the seed corpora of the fuzz targets with the project's own
// encoders:  fuzz_gen_corpus <out-dir>   (scripts/fuzz.sh --gen-corpus runs it
// into fuzz/corpus/). One small valid input per file, a few per target.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "actors/wire.hpp"
#include "checkpoint/checkpoint_store.hpp"
#include "journal/journal.cpp" // encode_checkpoint_state() has internal linkage
#include "crdt/crdt_object.hpp"
#include "fuzz/crdt_corpus.hpp"
#include "journal/codec.hpp"
#include "protocol/descriptor.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "replication/replication_batch.hpp"
#include "ring/ring_state.hpp"

using namespace tally;
namespace fs = std::filesystem;

namespace {

fs::path out_root;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(out_root / target);
  std::ofstream f(out_root / target / name, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string with_code(std::uint8_t code, const std::string& body) {
  return std::string(1, static_cast<char>(code)) + body;
}

tx_descriptor sample_descriptor() {
  tx_descriptor d;
  d.tx = tx_id{0x1234, 7};
  d.owner = "tally@127.0.0.1:9100";
  d.owner_incarnation = 1'700'000'000'000'000ull;
  d.snapshot = vector_clock{{1, 42}, {2, 17}};
  d.secret = 0x5ec2e7ull;
  return d;
}

bound_object obj(const char* bucket, const char* key) {
  bound_object o;
  o.key = object_key{bucket, key};
  o.type = crdt_type::counter;
  return o;
}

update_op inc(const char* key, std::int64_t d, bool with_id) {
  update_op u;
  u.object = obj("b", key);
  counter_op c;
  c.update.delta = d;
  if (with_id) c.id = op_id{99, 5};
  u.op = c;
  return u;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <out-dir>\n", argv[0]);
    return 2;
  }
  out_root = argv[1];
  const std::string desc = encode_tx_descriptor(sample_descriptor());
  const std::string clk = encode_clock(vector_clock{{1, 42}, {2, 17}});

  // ---- requests --------------------------------------------------------
  std::vector<request> reqs;
  reqs.push_back(start_transaction_req{});
  reqs.push_back(start_transaction_req{clk});
  reqs.push_back(read_objects_req{{obj("b", "x"), obj("b", "y")}, desc});
  reqs.push_back(update_objects_req{{inc("x", 3, true), inc("y", -2, false)}, desc});
  reqs.push_back(abort_transaction_req{desc});
  reqs.push_back(commit_transaction_req{desc});
  reqs.push_back(static_update_objects_req{start_transaction_req{clk}, {inc("x", 1, true)}});
  reqs.push_back(static_read_objects_req{start_transaction_req{}, {obj("b", "x")}});
  std::string stream;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    frame f = encode_request(reqs[i]);
    put("fuzz_request", "req" + std::to_string(i), with_code(f.code, f.body));
    auto wire = encode_frame(f);
    if (wire) {
      stream += wire.value();
      put("fuzz_frame", "frame" + std::to_string(i), std::string(1, '\x02') + wire.value());
    }
  }
  put("fuzz_frame", "stream", std::string(1, '\x00') + stream);

  // ---- responses -------------------------------------------------------
  std::vector<response> resps;
  resps.push_back(operation_resp{});
  resps.push_back(operation_resp::failure(errc::aborted));
  resps.push_back(start_transaction_resp{true, desc, 0});
  {
    auto o = *crdt_object::make(crdt_type::counter);
    (void)o.apply(counter_effect{5});
    read_objects_resp r;
    r.values.push_back(o.value());
    resps.push_back(r);
    resps.push_back(static_read_objects_resp{r, commit_resp{true, clk, 0}});
  }
  resps.push_back(commit_resp{true, clk, 0});
  for (std::size_t i = 0; i < resps.size(); ++i) {
    frame f = encode_response(resps[i]);
    put("fuzz_response", "resp" + std::to_string(i), with_code(f.code, f.body));
  }

  // ---- descriptors and clocks -----------------------------------------
  put("fuzz_descriptor", "descriptor", desc);
  put("fuzz_descriptor", "clock", clk);
  put("fuzz_descriptor", "vector_clock", vector_clock{{1, 42}, {2, 17}}.encode());
  put("fuzz_descriptor", "vector_clock_empty", vector_clock{}.encode());

  // ---- journal ---------------------------------------------------------
  {
    update_record u;
    u.tx = tx_id{1, 2};
    u.key = object_key{"b", "k"};
    u.effect = counter_effect{-5};
    u.op = op_id{3, 4};
    put("fuzz_journal", "rec_update", with_code(0, encode_record(journal_record{u})));
    put("fuzz_journal", "rec_prepare",
        with_code(0, encode_record(journal_record{
                       prepare_record{tx_id{1, 2}, 77, {0, 3, 5}, "tally@127.0.0.1:9100"}})));
    { // A prepare record of class version 1 (before issue 13), still read.
      std::string payload{"\x01\x01\x01\x00\x00\x00", 6};
      for (std::uint64_t v : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{77}})
        for (int i = 0; i < 8; ++i)
          payload.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
      std::string framed;
      append_frame(framed, record_frame_version, payload);
      put("fuzz_journal", "rec_prepare_v1", with_code(0, framed));
    }
    commit_record c;
    c.tx = tx_id{1, 2};
    c.commit_time = vector_clock{{1, 80}};
    c.bloom_timestamp = "bloom";
    c.wall_time_us = 123456;
    put("fuzz_journal", "rec_commit", with_code(0, encode_record(journal_record{c})));
    put("fuzz_journal", "rec_abort", with_code(0, encode_record(journal_record{abort_record{tx_id{1, 2}}})));
    put("fuzz_journal", "rec_fence", with_code(0, encode_record(journal_record{fence_record{tx_id{1, 2}}})));
    put("fuzz_journal", "rec_term",
        with_code(0, encode_record(journal_record{term_record{copy_term{1764157412000000,
                                                                        "tally@127.0.0.1:7001"}}})));
    put("fuzz_journal", "folded_term",
        with_code(8, encode_term_value(copy_term{1764157412000000, "tally@127.0.0.1:7001"})));
    put("fuzz_journal", "lsn_key", with_code(1, encode_u64(42)));
    auto key = encode_object_key(object_key{"bucket", "key"});
    if (key) put("fuzz_journal", "object_key", with_code(2, key.value()));
    put("fuzz_journal", "index_value", with_code(3, encode_index_value(index_value{10, 7})));
    put("fuzz_journal", "op_entry", with_code(4, encode_op_entry(op_entry{10, 0xabcdefull})));
    put("fuzz_journal", "op_entry_old", with_code(4, encode_op_entry(op_entry{10, std::nullopt})));
    put("fuzz_journal", "u64", with_code(5, encode_u64(1234567)));
    put("fuzz_journal", "decision_commit",
        with_code(6, encode_decision_entry(decision_entry{tx_outcome::committed, 12, 80})));
    put("fuzz_journal", "decision_abort",
        with_code(6, encode_decision_entry(decision_entry{tx_outcome::aborted, 13, 77})));
    put("fuzz_journal", "tx_key", with_code(7, encode_tx_key(tx_id{1, 2})));
  }

  // ---- checkpoint ------------------------------------------------------
  {
    auto o = *crdt_object::make(crdt_type::counter);
    (void)o.apply(counter_effect{-77});
    put("fuzz_checkpoint", "counter",
        encode_checkpoint_entry(checkpoint_entry{object_version{o, vector_clock{{1, 5}, {2, 9}}}, 42}));
    auto f = *crdt_object::make(crdt_type::fatcounter);
    (void)f.apply(counter_effect{3});
    put("fuzz_checkpoint", "fatcounter",
        encode_checkpoint_entry(checkpoint_entry{object_version{f, vector_clock{{1, 1}}}, 1}));
  }

  // ---- journal meta "checkpoint" ---------------------------------------
  {
    checkpoint_state s;
    s.sequence = 3;
    s.time = vector_clock{{1, 40}, {2, 12}};
    s.max_commit_time = vector_clock{{1, 45}, {2, 12}};
    s.last_bloom_timestamp = "bloom";
    put("fuzz_checkpoint_meta", "state", encode_checkpoint_state(s));
    put("fuzz_checkpoint_meta", "state_empty", encode_checkpoint_state(checkpoint_state{}));
  }

  // ---- node-to-node messages (fuzz_wire: byte 0 picks the decoder) ------
  {
    downstream_context ctx{token_source{5}, 100};
    auto set = *crdt_object::make(crdt_type::orset);
    auto add = *set.prepare(crdt_update{set_update{set_add{{"a", "b"}}}}, ctx);
    (void)set.apply(add);
    const tx_update counter_update{object_key{"b", "c"}, crdt_type::counter,
                                   counter_effect{3}, op_id{1, 1}};
    const tx_update set_update_{object_key{"b", "s"}, crdt_type::orset, add, std::nullopt};

    part_read_req rq;
    rq.snapshot = vector_clock{{1, 9}};
    rq.items = {read_item{object_key{"b", "s"}, crdt_type::orset, {add}, true},
                read_item{object_key{"b", "c"}, crdt_type::counter, {counter_effect{1}}, false}};
    put("fuzz_wire", "read_req", with_code(0, encode_wire(rq)));
    part_read_resp rs;
    rs.values = {set.value(), crdt_value{std::int64_t{-4}}};
    rs.states = {set.encode(), ""};
    put("fuzz_wire", "read_resp", with_code(1, encode_wire(rs)));
    part_read_resp rs_err;
    rs_err.err = error{errc::unavailable, "partition 3 is on node x, which is down"};
    put("fuzz_wire", "read_resp_err", with_code(1, encode_wire(rs_err)));
    part_prepare_req p;
    p.tx = tx_id{1, 2};
    p.updates = {counter_update, set_update_};
    p.snapshot_time = 77;
    p.two_phase = true;
    p.participants = {0, 3, 5};
    p.coordinator = "tally@127.0.0.1:9100";
    put("fuzz_wire", "prepare_req", with_code(2, encode_wire(p)));
    put("fuzz_wire", "time_resp", with_code(3, encode_wire(part_time_resp{std::nullopt, 80, 1})));
    put("fuzz_wire", "commit_req", with_code(4, encode_wire(part_commit_req{tx_id{1, 2}, 81})));
    put("fuzz_wire", "abort_req", with_code(5, encode_wire(part_abort_req{tx_id{1, 2}})));
    put("fuzz_wire", "ack", with_code(6, encode_wire(part_ack{})));
    put("fuzz_wire", "tx_id", with_code(7, encode_wire(tx_id{9, 10})));
    put("fuzz_wire", "find_resp", with_code(8, encode_wire(part_find_resp{std::nullopt, 81, 40})));
    put("fuzz_wire", "find_resp_aborted",
        with_code(8, encode_wire(part_find_resp{std::nullopt, 0, 40, true})));
    part_stale_resp st;
    st.txs = {tx_id{1, 2}, tx_id{3, 4}};
    st.prepare_times = {70, 71};
    st.participants = {{0, 3}, {}};
    st.coordinators = {"tally@127.0.0.1:9100", ""};
    put("fuzz_wire", "stale_resp", with_code(9, encode_wire(st)));
    put("fuzz_wire", "u64", with_code(10, encode_wire(std::uint64_t{123456})));

    replication_batch b;
    b.first = 41;
    update_record u;
    u.tx = tx_id{1, 2};
    u.key = object_key{"b", "c"};
    u.effect = counter_effect{3};
    u.op = op_id{1, 1};
    commit_record c;
    c.tx = tx_id{1, 2};
    c.commit_time = vector_clock{{1, 81}};
    c.wall_time_us = 99;
    b.records = {journal_record{u}, journal_record{c}};
    put("fuzz_wire", "batch", with_code(11, encode_batch(b)));
    put("fuzz_wire", "batch_empty", with_code(11, encode_batch(replication_batch{})));

    if (auto r = ring_state::create("tally@127.0.0.1:9100", 8, 3))
      put("fuzz_wire", "ring", with_code(12, r->encode()));
    put("fuzz_wire", "decide_req", with_code(13, encode_wire(tx_decide_req{tx_id{1, 2}, true})));
    put("fuzz_wire", "decide_resp", with_code(14, encode_wire(tx_decide_resp{1, 81})));
  }

  // ---- every CRDT type's state and effect --------------------------------
  for (const auto& [name, bytes] : tally::fuzz::crdt_corpus())
    put("fuzz_crdt", name, bytes);
  return 0;
}
