#!/usr/bin/env node
// antidote_ts_client's "can do big batch-reads" on its own, timed: 1,000
// registers of 165,537 bytes written in one update (one ~166 MB frame) and
// read back in one batch read. For measuring tallyd's memory while it runs
// (docs/SECURITY.md, "Big frames and the request memory budget"):
//
//   node tests/interop/big_batch.js PORT [HOST]
//
// Exit 0 when every value reads back equal, 1 otherwise.
'use strict';
process.noDeprecation = true;
const antidote = require('antidote_ts_client');

const port = Number(process.argv[2]);
const host = process.argv[3] || '127.0.0.1';
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node big_batch.js PORT [HOST]');
  process.exit(2);
}

async function main() {
  const connection = antidote.connect(port, host);
  connection.setTimeout(120000);
  const registers = [];
  for (let i = 0; i < 1000; i++) registers.push(connection.register(`big-batch-reg-${i}`));
  const longStr = 'a'.repeat(165537);
  let t = Date.now();
  await connection.update(registers.map(r => r.set(longStr)));
  console.log(`update of 1000 registers: ${Date.now() - t} ms`);
  t = Date.now();
  const vals = await connection.readBatch(registers);
  console.log(`batch read of 1000 registers: ${Date.now() - t} ms`);
  let bad = vals.length === registers.length ? 0 : 1;
  for (const v of vals) if (v !== longStr) bad++;
  connection.close();
  if (bad) {
    console.log(`FAIL: ${bad} values differ`);
    process.exit(1);
  }
  console.log('ok: every value read back');
}
main().catch(err => { console.log(`FAIL: ${err && err.stack ? err.stack : err}`); process.exit(1); });
