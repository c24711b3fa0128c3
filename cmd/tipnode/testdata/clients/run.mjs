// Runs the client-compatibility suite against a tipnode dev node:
//
//   node run.mjs http://127.0.0.1:PORT [viem,ethers,web3]
//
// With TIPNODE_REPLICA_URL set (a read replica of that node), viem also
// sends through the replica.
// and prints one JSON line {"results":[{lib,feature,ok,detail,ms}...]} for
// cmd/tipnode/clients_test.go, which starts the node and judges the results.
// Each library uses its own dev accounts, so they do not share nonces.

import { Recorder } from './common.mjs';

const url = process.argv[2];
const only = (process.argv[3] || 'viem,ethers,web3').split(',');
if (!url) {
  console.error('usage: node run.mjs RPC_URL [libraries]');
  process.exit(2);
}
const wsUrl = url.replace(/^http/, 'ws');
const replicaUrl = process.env.TIPNODE_REPLICA_URL || '';
const rec = new Recorder();
for (const name of only) {
  const mod = await import(`./${name}.mjs`);
  try {
    await mod.run({ url, wsUrl, replicaUrl, rec });
  } catch (e) {
    rec.results.push({ lib: name, feature: 'suite', ok: false, detail: String(e && e.stack || e).slice(0, 400), ms: 0 });
  }
}
console.log(JSON.stringify({ results: rec.results }));
// Libraries may keep sockets and timers alive.
process.exit(0);
