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
