#!/usr/bin/env node
// Runs the npm AntidoteDB client antidote_ts_client (0.2.2, pinned in
// package.json) against an already running tallyd. Starts nothing itself:
// run_test.sh starts tallyd on a free port and passes it here.
//
//   node antidote_ts_client_test.js [port] [host]
//   (or TALLY_PORT / TALLY_HOST; host defaults to 127.0.0.1)
//
// Every check prints "ok" or "FAIL"; the exit code is 0 only when all pass,
// 1 on any failure, 2 on bad usage. The whole run is bounded by
// TALLY_INTEROP_TIMEOUT_MS (default 30000); each request is also bounded by
// the client's own request timeout (1000 ms, the package default).
'use strict';

// The package calls the deprecated `new Buffer(n)` on every request; the
// DEP0005 warning says nothing about Tally.
process.noDeprecation = true;

const antidote = require('antidote_ts_client');

const port = Number(process.argv[2] || process.env.TALLY_PORT);
const host = process.argv[3] || process.env.TALLY_HOST || '127.0.0.1';
const overallMs = Number(process.env.TALLY_INTEROP_TIMEOUT_MS || 30000);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node antidote_ts_client_test.js PORT [HOST] (or TALLY_PORT)');
  process.exit(2);
}

// Keys unique to this run, so a reused data dir cannot make a check pass.
const run = `${process.pid}-${Date.now()}`;
const key = (name) => `interop-${run}-${name}`;

const results = [];

async function check(name, body) {
  try {
    await body();
    results.push({ name, ok: true });
    console.log(`ok    ${name}`);
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`FAIL  ${name}: ${err && err.stack ? err.stack : err}`);
  }
}

function expectEqual(what, actual, expected) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

async function main(connection) {
  await check('counter: 5 static increments (1+2+3+4+5), read is 15', async () => {
    const c = connection.counter(key('counter'));
    for (const n of [1, 2, 3, 4, 5]) {
      const r = await connection.update(c.increment(n));
      if (!r || !r.commitTime) throw new Error('update returned no commit time');
    }
    expectEqual('counter value', await c.read(), 15);
  });

  await check('counter: a negative increment (-7) decrements, read is 8', async () => {
    const c = connection.counter(key('counter'));
    await connection.update(c.increment(-7));
    expectEqual('counter value', await c.read(), 8);
  });

  await check('counter: one update with 3 increments is atomic, read is 30', async () => {
    const c = connection.counter(key('counter-array'));
    await connection.update([c.increment(10), c.increment(15), c.increment(5)]);
    expectEqual('counter value', await c.read(), 30);
  });

  await check('fat counter: 4 static increments (10+20+30-5), read is 55', async () => {
    const f = connection.fatCounter(key('fat'));
    for (const n of [10, 20, 30, -5]) await connection.update(f.increment(n));
    expectEqual('fat counter value', await f.read(), 55);
  });

  await check('never-written counter and fat counter read 0', async () => {
    expectEqual('counter value', await connection.counter(key('never-c')).read(), 0);
    expectEqual('fat counter value', await connection.fatCounter(key('never-f')).read(), 0);
  });

  await check('static batch read of 4 keys (written in one update) returns all values in order', async () => {
    const objs = [
      connection.counter(key('batch-a')),
      connection.counter(key('batch-b')),
      connection.fatCounter(key('batch-c')),
      connection.counter(key('batch-never')),
    ];
    await connection.update([objs[0].increment(1), objs[1].increment(2), objs[2].increment(3)]);
    expectEqual('batch values', await connection.readBatch(objs), [1, 2, 3, 0]);
    const named = await connection.readObjectsBatch({ a: objs[0], b: objs[1], c: objs[2] });
    expectEqual('readObjectsBatch values', named, { a: 1, b: 2, c: 3 });
  });

  await check('interactive transaction: update 2 keys, read own writes, commit; a later read sees both', async () => {
    const x = connection.counter(key('tx-x'));
    const y = connection.fatCounter(key('tx-y'));
    await connection.update(x.increment(100)); // x exists before the transaction
    const tx = await connection.startTransaction();
    const tx_x = tx.counter(key('tx-x'));
    const tx_y = tx.fatCounter(key('tx-y'));
    await tx.update(tx_x.increment(11));
    await tx.update([tx_y.increment(22), tx_y.increment(20)]);
    expectEqual('values read inside the transaction', await tx.readBatch([tx_x, tx_y]), [111, 42]);
    expectEqual('values read outside before commit', await connection.readBatch([x, y]), [100, 0]);
    const r = await tx.commit();
    if (!r || !r.commitTime) throw new Error('commit returned no commit time');
    expectEqual('values read after commit', await connection.readBatch([x, y]), [111, 42]);
  });

  await check('interactive transaction: abort discards its updates', async () => {
    const z = connection.counter(key('tx-abort'));
    const tx = await connection.startTransaction();
    await tx.update(tx.counter(key('tx-abort')).increment(9));
    await tx.abort();
    expectEqual('value after abort', await z.read(), 0);
  });

  await check('monotonic snapshots: the commit time Tally sent back is accepted as a snapshot', async () => {
    const m = connection.counter(key('monotonic'));
    connection.monotonicSnapshots = true;
    try {
      await connection.update(m.increment(4));
      if (!connection.getLastCommitTimestamp()) throw new Error('no commit time kept');
      connection.minSnapshotTime = connection.getLastCommitTimestamp();
      expectEqual('static read at that snapshot', await m.read(), 4);
      const tx = await connection.startTransaction();
      expectEqual('transaction read at that snapshot', await tx.counter(key('monotonic')).read(), 4);
      await tx.commit();
    } finally {
      connection.monotonicSnapshots = false;
      connection.minSnapshotTime = undefined;
    }
  });

  // ---- every other AntidoteDB type (docs/DATATYPES.md) ----

  await check('add-wins set: add, addAll, remove, removeAll; read is sorted', async () => {
    const s = connection.set(key('orset'));
    await connection.update(s.add('b'));
    await connection.update(s.addAll(['a', 'c', 'd']));
    await connection.update(s.remove('c'));
    await connection.update(s.removeAll(['d', 'never-there']));
    expectEqual('set value', (await s.read()).sort(), ['a', 'b']);
  });

  await check('remove-wins set: an add and a remove of one element in one update', async () => {
    const s = connection.set_removeWins(key('rwset'));
    await connection.update([s.addAll(['x', 'y'])]);
    await connection.update([s.remove('x'), s.add('z')]);
    expectEqual('rwset value', (await s.read()).sort(), ['y', 'z']);
  });

  await check('last-writer-wins register: the later assign wins; a new key reads as empty', async () => {
    const r = connection.register(key('lww'));
    await connection.update(r.set({ v: 1 }));
    await connection.update(r.set({ v: 2 }));
    expectEqual('register value', await r.read(), { v: 2 });
    expectEqual('never-written register', await connection.register(key('lww-never')).read(), null);
  });

  await check('multi-value register: one value after sequential assigns', async () => {
    const r = connection.multiValueRegister(key('mv'));
    await connection.update(r.set('first'));
    await connection.update(r.set('second'));
    expectEqual('mvreg value', await r.read(), ['second']);
  });

  await check('enable-wins and disable-wins flags: set true, then false', async () => {
    for (const f of [connection.flag_ew(key('few')), connection.flag_dw(key('fdw'))]) {
      expectEqual('never-written flag', await f.read(), false);
      await connection.update(f.set(true));
      expectEqual('flag after enable', await f.read(), true);
      await connection.update(f.set(false));
      expectEqual('flag after disable', await f.read(), false);
    }
  });

  await check('remove-resets map: nested counter, mv register, set; remove an entry', async () => {
    const m = connection.rrmap(key('rrmap'));
    await connection.update([
      m.counter('hits').increment(3),
      m.multiValueRegister('name').set('tally'),
      m.set('tags').addAll(['a', 'b']),
    ]);
    let v = (await m.read()).toJsObject();
    expectEqual('map hits', v.hits, 3);
    expectEqual('map name', v.name, ['tally']);
    expectEqual('map tags', v.tags.sort(), ['a', 'b']);
    // An mvreg entry resets to bottom and goes (AntidoteDB's lwwreg has no
    // reset, so an lwwreg entry would stay).
    await connection.update(m.remove(m.multiValueRegister('name')));
    v = (await m.read()).toJsObject();
    expectEqual('map after remove', Object.keys(v).sort(), ['hits', 'tags']);
  });

  await check('grow-only map: a nested gmap and flag', async () => {
    const m = connection.gmap(key('gmap'));
    await connection.update([m.gmap('inner').counter('n').increment(2), m.flag_ew('on').set(true)]);
    const v = (await m.read()).toJsObject();
    expectEqual('gmap value', v, { inner: { n: 2 }, on: true });
  });

  await check('interactive transaction over a set, a register and a flag: own writes, then commit', async () => {
    const tx = await connection.startTransaction();
    const s = tx.set(key('tx-set'));
    const r = tx.register(key('tx-reg'));
    const f = tx.flag_dw(key('tx-flag'));
    await tx.update([s.addAll([1, 2, 3]), r.set('x'), f.set(true)]);
    await tx.update(s.remove(2));
    expectEqual('read inside', await tx.readBatch([s, r, f]), [[1, 3], 'x', true]);
    expectEqual('read outside before commit',
                await connection.readBatch([connection.set(key('tx-set')), connection.register(key('tx-reg'))]),
                [[], null]);
    await tx.commit();
    expectEqual('read after commit',
                await connection.readBatch([connection.set(key('tx-set')), connection.register(key('tx-reg')),
                                            connection.flag_dw(key('tx-flag'))]),
                [[1, 3], 'x', true]);
  });

  await check('a set operation on a counter key is refused with an error, nothing stored', async () => {
    const c = connection.counter(key('typed'));
    await connection.update(c.increment(1));
    let refused = false;
    try {
      await connection.update(connection.set(key('typed')).add('x'));
    } catch (err) {
      refused = /is a counter|holds a counter|cached as a counter/.test(String(err));
      if (!refused) throw err;
    }
    if (!refused) throw new Error('the update was accepted');
    expectEqual('counter value', await c.read(), 1);
  });
}

const timer = setTimeout(() => {
  console.log(`FAIL  overall timeout: not done after ${overallMs} ms`);
  process.exit(1);
}, overallMs);

const connection = antidote.connect(port, host);
main(connection)
  .catch((err) => {
    results.push({ name: 'test driver', ok: false });
    console.log(`FAIL  test driver: ${err && err.stack ? err.stack : err}`);
  })
  .finally(() => {
    clearTimeout(timer);
    connection.close();
    const failed = results.filter((r) => !r.ok).length;
    console.log(`antidote_ts_client against ${host}:${port}: ${results.length - failed} passed, ${failed} failed`);
    process.exitCode = failed === 0 && results.length > 0 ? 0 : 1;
  });
