// viem against tipnode dev.

import {
  createPublicClient, createWalletClient, createTestClient, defineChain, http, webSocket, parseEther, parseEventLogs,
  BaseError, ContractFunctionRevertedError, TransactionReceiptNotFoundError, verifyMessage, verifyTypedData,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { keys, addresses, counter, ZERO_HASH, beforeSeal, check, poll, sealed, show, sleep, within } from './common.mjs';

const lib = 'viem';

// revertedError finds viem's typed revert error in an error chain.
function revertedError(e) {
  check(e instanceof BaseError, `not a viem error: ${e}`);
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError);
  check(r, `no ContractFunctionRevertedError in: ${e.shortMessage}`);
  return r;
}

async function expectRevert(p) {
  try {
    await p;
  } catch (e) {
    return revertedError(e);
  }
  throw new Error('did not revert');
}

export async function run({ url, wsUrl, replicaUrl, rec }) {
  const chain = defineChain({
    id: 1337, name: 'tipnode dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url], webSocket: [wsUrl] } },
  });
  let batches = 0;
  // methods: every JSON-RPC method sent through a counting transport.
  const methods = new Set();
  const record = async (req) => {
    const body = await req.clone().json();
    for (const r of Array.isArray(body) ? body : [body]) methods.add(r.method);
    return body;
  };
  const transport = http(url, {
    batch: true,
    onFetchRequest: async (req) => { if (Array.isArray(await record(req))) batches++; },
  });
  // (onFetchRequest must return nothing: a value replaces the request.)
  const countingHttp = (u) => http(u, { onFetchRequest: async (req) => { await record(req); } });
  const client = createPublicClient({ chain, transport, pollingInterval: 100 });
  const account = privateKeyToAccount(keys[1]);
  const wallet = createWalletClient({ chain, transport: http(url), account, pollingInterval: 100 });
  const { abi, bytecode } = counter;

  // preconfirmed polls for a transaction's receipt and returns it as soon
  // as it is pre-confirmed (before the seal: block hash zero).
  const preconfirmed = (hash) => poll(`receipt of ${hash}`, async () => {
    try {
      return await client.getTransactionReceipt({ hash });
    } catch (e) {
      if (e instanceof TransactionReceiptNotFoundError) return null;
      throw e;
    }
  });

  await rec.feature(lib, 'three sends in a row', async () => {
    const hashes = [];
    for (let i = 1n; i <= 3n; i++) {
      hashes.push(await wallet.sendTransaction({ to: addresses[0], value: i })); // only the hash is awaited
    }
    const rs = await Promise.all(hashes.map((hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 100 })));
    check(rs.every((r) => r.status === 'success'), 'a send failed');
    const txs = await Promise.all(hashes.map((hash) => client.getTransaction({ hash })));
    check(new Set(txs.map((t) => t.nonce)).size === 3, `nonces ${txs.map((t) => t.nonce)}`);
    return `nonces ${txs.map((t) => t.nonce).join(',')}`;
  });

  await rec.feature(lib, 'sendTransactionSync (eth_sendRawTransactionSync)', async () => {
    const sync = createWalletClient({ chain, transport: countingHttp(url), account });
    const t0 = Date.now();
    const r = await sync.sendTransactionSync({ to: addresses[0], value: 1n });
    const ms = Date.now() - t0;
    check(methods.has('eth_sendRawTransactionSync'), 'eth_sendRawTransactionSync was not called');
    check(r.status === 'success' && r.transactionHash && r.from.toLowerCase() === account.address.toLowerCase(), `receipt ${show(r)}`);
    return `receipt in ${ms} ms (block ${r.blockNumber}${r.blockHash === ZERO_HASH ? ', pre-confirmed' : ''})`;
  });

  // Through a read replica (forwarded to this node, answered when the
  // pre-confirmation stream brings the receipt). Before the dev methods,
  // whose evm_revert unwinds the chain under the replica.
  await rec.feature(lib, 'sendTransactionSync through a read replica', async () => {
    check(replicaUrl, 'no replica URL (TIPNODE_REPLICA_URL)');
    const racct = privateKeyToAccount(keys[7]);
    const sync = createWalletClient({ chain, transport: countingHttp(replicaUrl), account: racct });
    const t0 = Date.now();
    const r = await sync.sendTransactionSync({ to: addresses[0], value: 1n });
    const ms = Date.now() - t0;
    check(r.status === 'success' && r.from.toLowerCase() === racct.address.toLowerCase(), `receipt ${show(r)}`);
    const onSeq = await client.getTransactionReceipt({ hash: r.transactionHash });
    check(onSeq.status === 'success', 'the sequencer has no receipt');
    return `receipt in ${ms} ms through the replica`;
  });

  await rec.feature(lib, 'watchBlocks over HTTP polling', async () => {
    // viem emits the head it finds first (the genesis when no block was
    // sealed yet); the feature is a block sealed while polling, after it.
    let first;
    const b = await within(10_000, 'watchBlocks', new Promise((resolve, reject) => {
      const un = client.watchBlocks({ poll: true, pollingInterval: 100, onBlock: (b) => {
        if (first === undefined) { first = b; return; }
        un(); resolve(b);
      }, onError: reject });
    }));
    check(b.number > 0n && b.hash, 'block without number/hash');
    check(b.number > first.number, `block ${b.number} after ${first.number}`);
    return `block ${b.number} after ${first.number}`;
  });

  await rec.feature(lib, 'watchPendingTransactions over HTTP (eth_newPendingTransactionFilter)', async () => {
    const seen = new Set();
    let failed;
    const un = client.watchPendingTransactions({ poll: true, pollingInterval: 100, onTransactions: (hs) => hs.forEach((h) => seen.add(h)), onError: (e) => { failed = e; } });
    try {
      await poll('filter installed', () => (methods.has('eth_newPendingTransactionFilter') ? true : null));
      const hash = await wallet.sendTransaction({ to: addresses[0], value: 1n });
      await poll(`${hash} from the filter`, () => { if (failed) throw failed; return seen.has(hash) ? true : null; });
      check(methods.has('eth_getFilterChanges'), 'no eth_getFilterChanges');
      return `${seen.size} hash(es) through eth_getFilterChanges`;
    } finally {
      un();
    }
  });

  let contract;
  await rec.feature(lib, 'deploy, read at pending after the pre-confirmed receipt, at latest after the seal', async () => {
    const r = await beforeSeal(async () => preconfirmed(await wallet.deployContract({ abi, bytecode, args: [7n] })));
    check(r.status === 'success' && r.contractAddress, 'deployment failed');
    check(r.effectiveGasPrice > 0n, `effectiveGasPrice ${r.effectiveGasPrice}`);
    contract = r.contractAddress;
    const v = await client.readContract({ address: contract, abi, functionName: 'value', blockTag: 'pending' });
    check(v === 7n, `pending value ${v}`);
    const set = await wallet.writeContract({ address: contract, abi, functionName: 'set', args: [42n] });
    const sr = await preconfirmed(set);
    const [log] = parseEventLogs({ abi, logs: sr.logs, eventName: 'Set' });
    check(log && log.args.value === 42n, 'Set log not decoded from the pre-confirmed receipt');
    check(await client.readContract({ address: contract, abi, functionName: 'value', blockTag: 'pending' }) === 42n, 'pending after set');
    await sealed(url, set);
    const latest = await client.readContract({ address: contract, abi, functionName: 'value', blockTag: 'latest' });
    check(latest === 42n, `latest value after the seal ${latest}`);
    const final = await client.waitForTransactionReceipt({ hash: set, pollingInterval: 100 });
    check(final.blockHash !== ZERO_HASH, 'sealed receipt without block hash');
    return `contract ${contract}`;
  });

  await rec.feature(lib, 'revert reason and custom error decoded', async () => {
    const boom = await expectRevert(client.readContract({ address: contract, abi, functionName: 'boom' }));
    check(boom.reason === 'boom', `reason ${boom.reason}`);
    const custom = await expectRevert(client.readContract({ address: contract, abi, functionName: 'custom', args: [5n], account: account.address }));
    check(custom.data?.errorName === 'Custom' && custom.data.args[0] === 5n && custom.data.args[1] === account.address, `custom error ${show(custom.data)}`);
    const sim = await expectRevert(client.simulateContract({ address: contract, abi, functionName: 'boom', account }));
    check(sim.reason === 'boom', `simulateContract reason ${sim.reason}`);
    return 'ContractFunctionRevertedError: boom / Custom(5, sender)';
  });

  await rec.feature(lib, 'estimateGas of a revert', async () => {
    const e = await expectRevert(client.estimateContractGas({ address: contract, abi, functionName: 'boom', account }));
    check(e.reason === 'boom', `reason ${e.reason}`);
    const c = await expectRevert(client.estimateContractGas({ address: contract, abi, functionName: 'custom', args: [9n], account }));
    check(c.data?.errorName === 'Custom', `custom ${c.data?.errorName}`);
    return 'ContractFunctionRevertedError';
  });

  await rec.feature(lib, 'simulateBlocks with overrides and traceTransfers', async () => {
    const fresh = '0x00000000000000000000000000000000c0ffee01';
    const [block] = await client.simulateBlocks({
      blocks: [{
        stateOverrides: [{ address: fresh, balance: parseEther('10') }],
        calls: [
          { account: fresh, to: addresses[6], value: parseEther('1') },
          { abi, to: contract, functionName: 'value' },
          { abi, to: contract, functionName: 'boom' },
        ],
      }],
      traceTransfers: true,
    });
    const [transfer, read, fail] = block.calls;
    check(transfer.status === 'success', `transfer ${transfer.status}`);
    const t = transfer.logs.find((l) => l.address.toLowerCase() === '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee');
    check(t, `no traced transfer log in ${show(transfer.logs)}`);
    check(read.status === 'success' && read.result === 42n, `read ${read.status} ${read.result}`);
    check(fail.status === 'failure' && fail.error, `boom ${fail.status}`);
    return `${block.calls.length} calls, transfer traced`;
  });

  await rec.feature(lib, 'JSON-RPC batch', async () => {
    const before = batches;
    const [bal, n, id, nonce] = await Promise.all([
      client.getBalance({ address: addresses[0] }), client.getBlockNumber(), client.getChainId(), client.getTransactionCount({ address: account.address }),
    ]);
    check(bal > 0n && n > 0n && id === 1337 && nonce >= 3, `answers ${bal} ${n} ${id} ${nonce}`);
    check(batches > before, 'the requests were not sent as a batch');
    return `${batches - before} batch(es)`;
  });

  await rec.feature(lib, 'watchContractEvent over HTTP (eth_newFilter)', async () => {
    const logs = [];
    let failed;
    const before = methods.has('eth_newFilter');
    const un = client.watchContractEvent({ address: contract, abi, eventName: 'Set', poll: true, pollingInterval: 100, onLogs: (ls) => logs.push(...ls), onError: (e) => { failed = e; } });
    try {
      await poll('filter installed', () => (methods.has('eth_newFilter') ? true : null));
      await sleep(150);
      await wallet.writeContract({ address: contract, abi, functionName: 'set', args: [77n] });
      const log = await poll('Set(77) from the filter', () => { if (failed) throw failed; return logs.find((l) => l.args.value === 77n) ?? null; }, 50, 15_000);
      check(!before || methods.has('eth_getFilterChanges'), 'no eth_getFilterChanges');
      return `Set(${log.args.value}) in block ${log.blockNumber}`;
    } finally {
      un();
    }
  });

  const ws = createPublicClient({ chain, transport: webSocket(wsUrl) });
  try {
    await rec.feature(lib, 'websocket newHeads', async () => {
      const head = await within(10_000, 'newHeads', new Promise((resolve, reject) => {
        const un = ws.watchBlocks({ onBlock: (b) => { un(); resolve(b); }, onError: reject });
      }));
      check(head.number > 0n && head.hash, 'block without number/hash');
      return `block ${head.number}`;
    });

    await rec.feature(lib, 'websocket logs', async () => {
      const got = new Promise((resolve, reject) => {
        const un = ws.watchContractEvent({ address: contract, abi, eventName: 'Set', onLogs: (logs) => { un(); resolve(logs[0]); }, onError: reject });
      });
      await new Promise((r) => setTimeout(r, 200)); // let the subscription start
      await wallet.writeContract({ address: contract, abi, functionName: 'set', args: [99n] });
      const log = await within(10_000, 'logs', got);
      check(log.args.value === 99n, `log value ${log.args.value}`);
      return 'Set(99)';
    });

    await rec.feature(lib, 'websocket newPreconfirmations', async () => {
      let hash;
      const seen = [];
      const got = new Promise((resolve, reject) => {
        ws.transport.subscribe({
          params: ['newPreconfirmations'],
          onData: (d) => { seen.push(d.result); if (hash && d.result.transactions.includes(hash)) resolve(d.result); },
          onError: reject,
        }).catch(reject);
      });
      await new Promise((r) => setTimeout(r, 200));
      hash = await wallet.sendTransaction({ to: addresses[0], value: 1n });
      const p = await within(10_000, 'newPreconfirmations', got);
      check(BigInt(p.index) > 0n, `index ${p.index}`);
      return `block ${BigInt(p.blockNumber)} index ${BigInt(p.index)}`;
    });
  } finally {
    await ws.transport.getRpcClient?.().then((c) => c.close()).catch(() => {});
  }

  await rec.feature(lib, 'node-held accounts + eth_sendTransaction + signing methods', async () => {
    const nodeAccount = addresses[4];
    const nodeWallet = createWalletClient({ chain, transport: http(url), account: nodeAccount });
    const all = await nodeWallet.getAddresses();
    check(all.map((a) => a.toLowerCase()).includes(nodeAccount.toLowerCase()), `eth_accounts ${all}`);
    const hashes = [];
    for (let i = 0; i < 2; i++) hashes.push(await nodeWallet.sendTransaction({ to: addresses[0], value: 1n }));
    const rs = await Promise.all(hashes.map((hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 100 })));
    check(rs.every((r) => r.status === 'success' && r.from.toLowerCase() === nodeAccount.toLowerCase()), 'eth_sendTransaction');
    const message = 'hello tipnode';
    const sig = await nodeWallet.signMessage({ message });
    check(await verifyMessage({ address: nodeAccount, message, signature: sig }), 'personal_sign signature does not verify');
    const typed = {
      domain: { name: 'tipnode', version: '1', chainId: 1337, verifyingContract: contract },
      types: { Mail: [{ name: 'to', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'note', type: 'string' }] },
      primaryType: 'Mail',
      message: { to: addresses[0], amount: 2n ** 200n, note: 'hi' },
    };
    const tsig = await nodeWallet.signTypedData(typed);
    check(await verifyTypedData({ address: nodeAccount, signature: tsig, ...typed }), 'eth_signTypedData_v4 signature does not verify');
    const raw = await nodeWallet.signTransaction({ to: addresses[0], value: 1n });
    check(/^0x02/.test(raw), `eth_signTransaction ${raw.slice(0, 10)}`);
    return 'getAddresses (eth_accounts), sendTransaction x2, signMessage, signTypedData, signTransaction';
  });

  // The dev chain's methods through viem's test actions, in both modes
  // (anvil_* and hardhat_* names; evm_* in both).
  for (const mode of ['anvil', 'hardhat']) {
    await rec.feature(lib, `dev methods (test client, mode ${mode})`, async () => {
      const test = createTestClient({ chain, mode, transport: http(url) });
      const who = mode === 'anvil' ? '0x00000000000000000000000000000000000a0001' : '0x00000000000000000000000000000000000a0002';
      // The node also seals every 2 s on its own: block numbers and
      // timestamps are checked as lower bounds.
      const n0 = await client.getBlockNumber({ cacheTime: 0 });
      const id = await test.snapshot();
      await test.setBalance({ address: who, value: parseEther('5') });
      check(await client.getBalance({ address: who, blockTag: 'pending' }) === parseEther('5'), 'setBalance not on pending at once');
      await test.setNonce({ address: who, nonce: 7 });
      check(await client.getTransactionCount({ address: who, blockTag: 'pending' }) === 7, 'setNonce');
      await test.setCode({ address: who, bytecode: '0x602a60005260206000f3' });
      check(await client.getCode({ address: who, blockTag: 'pending' }) === '0x602a60005260206000f3', 'setCode');
      const slotValue = '0x' + '00'.repeat(31) + '2a';
      await test.setStorageAt({ address: who, index: 1, value: slotValue });
      check(await client.getStorageAt({ address: who, slot: '0x1', blockTag: 'pending' }) === slotValue, 'setStorageAt');
      await test.mine({ blocks: 2 });
      check(await client.getBlockNumber({ cacheTime: 0 }) >= n0 + 2n, 'mine 2 blocks');
      check(await client.getBalance({ address: who }) === parseEther('5'), 'setBalance not on latest after the seal');
      const latest = await client.getBlock();
      await test.setNextBlockTimestamp({ timestamp: latest.timestamp + 1000n });
      await test.mine({ blocks: 1 });
      check((await client.getBlock()).timestamp >= latest.timestamp + 1000n, 'setNextBlockTimestamp + mine');
      await test.increaseTime({ seconds: 3600 });
      check((await client.getBlock({ blockTag: 'pending' })).timestamp >= latest.timestamp + 4600n, 'increaseTime');
      // Impersonation: a wallet client with a JSON-RPC account sends from
      // an address whose key nobody has.
      const whale = mode === 'anvil' ? '0x00000000000000000000000000000000000b0001' : '0x00000000000000000000000000000000000b0002';
      await test.setBalance({ address: whale, value: parseEther('1') });
      await test.impersonateAccount({ address: whale });
      const wallet = createWalletClient({ chain, transport: http(url), account: whale });
      const hash = await wallet.sendTransaction({ to: addresses[0], value: 1n });
      const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
      check(r.status === 'success' && r.from.toLowerCase() === whale, `impersonated receipt ${show(r.from)}`);
      await test.stopImpersonatingAccount({ address: whale });
      let refused = false;
      try { await wallet.sendTransaction({ to: addresses[0], value: 1n }); } catch { refused = true; }
      check(refused, 'send after stopImpersonatingAccount was accepted');
      await test.revert({ id });
      const n1 = await client.getBlockNumber({ cacheTime: 0 });
      check(n1 >= n0 && n1 <= n0 + 1n, `revert: block number ${n1}, snapshot at ${n0}`);
      check(await client.getBalance({ address: who, blockTag: 'pending' }) === 0n, 'revert: balance');
      return 'setBalance, setNonce, setCode, setStorageAt (pending at once, latest after mine), mine, setNextBlockTimestamp, increaseTime, impersonateAccount + sendTransaction, stopImpersonatingAccount, snapshot/revert';
    });
  }
}
