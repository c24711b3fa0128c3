// Shared helpers of the client-compatibility suite: the dev accounts, the
// test contract, and the result recorder. Each library file (viem.mjs,
// ethers.mjs, web3.mjs) exports run(ctx) and records one result per
// feature; run.mjs prints them all as one JSON line for the Go test.

import fs from 'node:fs';

const dir = new URL('.', import.meta.url).pathname;

// The well-known dev keys (mnemonic "test test ... junk", m/44'/60'/0'/0/i).
export const keys = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
];
export const addresses = [
  '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
  '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
  '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65',
  '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc',
  '0x976EA74026E726554dB657fA54763abd0C3a0aa9',
  '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955',
];

// The test contract (Counter.sol, compiled into Counter.json).
export const counter = JSON.parse(fs.readFileSync(dir + 'Counter.json', 'utf8'));

export const ZERO_HASH = '0x' + '00'.repeat(32);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// show is JSON.stringify that prints bigints.
export const show = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? x.toString() : x));

// check throws with msg unless cond.
export function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

// within rejects with a timeout error after ms.
export function within(ms, what, p) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]);
}

// poll calls fn every ms until it returns a value other than null or
// undefined (or throws), at most for limit ms.
export async function poll(what, fn, ms = 50, limit = 10_000) {
  const end = Date.now() + limit;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: nothing after ${limit} ms`);
    await sleep(ms);
  }
}

// rpc sends one raw JSON-RPC request (for what no library exposes: the
// seal of a block, observed through eth_getTransactionReceipt).
export async function rpc(url, method, params = []) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
  return body.result;
}

// sealed waits until the transaction's receipt carries a real block hash
// (its block was sealed) and returns that block number.
export async function sealed(url, hash) {
  const r = await poll(`seal of ${hash}`, async () => {
    const r = await rpc(url, 'eth_getTransactionReceipt', [hash]);
    return r && r.blockHash !== ZERO_HASH ? r : null;
  }, 100, 15_000);
  return BigInt(r.blockNumber);
}

// beforeSeal runs deploy (which returns a pre-confirmed receipt) until that
// receipt was caught before its block was sealed (block hash zero): a seal
// may land between the pre-confirmation and the first poll, and the point
// is to read the contract while only its pre-confirmation holds it. At most
// three attempts.
export async function beforeSeal(deploy) {
  for (let i = 1; ; i++) {
    const r = await deploy();
    if (r.blockHash === ZERO_HASH) return r;
    if (i === 3) throw new Error(`three deployments were sealed before their pre-confirmed receipt was read (block hash ${r.blockHash})`);
  }
}

// Recorder collects one result per (library, feature).
export class Recorder {
  constructor() { this.results = []; }

  async feature(lib, name, fn) {
    const t0 = Date.now();
    try {
      const detail = await within(30_000, name, Promise.resolve().then(fn));
      this.results.push({ lib, feature: name, ok: true, detail: detail ?? '', ms: Date.now() - t0 });
    } catch (e) {
      this.results.push({ lib, feature: name, ok: false, detail: describe(e), ms: Date.now() - t0 });
    }
  }
}

function describe(e) {
  const s = (e && (e.shortMessage || e.message)) || String(e);
  return s.split('\n').slice(0, 4).join(' | ').slice(0, 400);
}
