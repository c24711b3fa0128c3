// ethers v6 against tipnode dev.

import {
  JsonRpcProvider, WebSocketProvider, Wallet, ContractFactory, Contract, SocketSubscriber,
  isCallException, verifyMessage, verifyTypedData, Transaction, JsonRpcSigner, toQuantity, parseEther, zeroPadValue,
} from 'ethers';
import { keys, addresses, counter, ZERO_HASH, beforeSeal, check, poll, sealed, sleep, within } from './common.mjs';

const lib = 'ethers';
const network = { chainId: 1337, name: 'tipnode-dev' };

// expectCallException runs p and returns ethers' CALL_EXCEPTION error.
async function expectCallException(p) {
  try {
    await p;
  } catch (e) {
    check(isCallException(e), `not a CALL_EXCEPTION: ${e.code} ${e.shortMessage || e.message}`);
    return e;
  }
  throw new Error('did not revert');
}

// PreconfSubscriber is an eth_subscribe("newPreconfirmations") through
// ethers' own socket subscription machinery.
class PreconfSubscriber extends SocketSubscriber {
  constructor(provider, onData) {
    super(provider, ['newPreconfirmations']);
    this.onData = onData;
  }

  async _emit(provider, message) {
    this.onData(message);
  }
}

export async function run({ url, wsUrl, rec }) {
  let batches = 0;
  class CountingProvider extends JsonRpcProvider {
    async _send(payload) {
      if (Array.isArray(payload) && payload.length > 1) batches++;
      return super._send(payload);
    }
  }
  // cacheTimeout -1: ethers caches identical requests for 250 ms by
  // default, so against any node a second wallet.sendTransaction within
  // 250 ms gets the first one's pending nonce from that cache (and a read
  // repeated within 250 ms, a stale answer). The node is what is under test
  // here, not that cache.
  const provider = new CountingProvider(url, network, { staticNetwork: true, pollingInterval: 100, cacheTimeout: -1 });
  const wallet = new Wallet(keys[2], provider);
  const { abi, bytecode } = counter;

  const preconfirmed = (hash) => poll(`receipt of ${hash}`, () => provider.getTransactionReceipt(hash));

  await rec.feature(lib, 'three sends in a row', async () => {
    const txs = [];
    for (let i = 1; i <= 3; i++) txs.push(await wallet.sendTransaction({ to: addresses[0], value: i })); // only the response is awaited
    const rs = await Promise.all(txs.map((t) => t.wait()));
    check(rs.every((r) => r.status === 1), 'a send failed');
    check(new Set(txs.map((t) => t.nonce)).size === 3, `nonces ${txs.map((t) => t.nonce)}`);
    return `nonces ${txs.map((t) => t.nonce).join(',')}`;
  });

  let contract;
  await rec.feature(lib, 'deploy, read at pending after the pre-confirmed receipt, at latest after the seal', async () => {
    const r = await beforeSeal(async () => {
      const deployed = await new ContractFactory(abi, bytecode, wallet).deploy(7);
      return preconfirmed(deployed.deploymentTransaction().hash);
    });
    check(r.status === 1 && r.contractAddress, 'deployment failed');
    check(r.gasPrice > 0n, `effectiveGasPrice ${r.gasPrice}`);
    contract = new Contract(r.contractAddress, abi, wallet);
    const v = await contract.value({ blockTag: 'pending' });
    check(v === 7n, `pending value ${v}`);
    const set = await contract.set(42);
    const sr = await preconfirmed(set.hash);
    const log = contract.interface.parseLog(sr.logs[0]);
    check(log && log.name === 'Set' && log.args.value === 42n, 'Set log not decoded from the pre-confirmed receipt');
    check(await contract.value({ blockTag: 'pending' }) === 42n, 'pending after set');
    await sealed(url, set.hash);
    const latest = await contract.value({ blockTag: 'latest' });
    check(latest === 42n, `latest value after the seal ${latest}`);
    const final = await set.wait();
    check(final.blockHash !== ZERO_HASH, 'sealed receipt without block hash');
    return `contract ${r.contractAddress}`;
  });

  await rec.feature(lib, 'revert reason and custom error decoded', async () => {
    const boom = await expectCallException(contract.boom());
    check(boom.reason === 'boom', `reason ${boom.reason}`);
    const custom = await expectCallException(contract.custom(5));
    check(custom.revert?.name === 'Custom' && custom.revert.args[0] === 5n && custom.revert.args[1] === wallet.address,
      `custom error ${custom.revert?.name} ${custom.revert?.args}`);
    return 'CALL_EXCEPTION: reason "boom" / revert Custom(5, sender)';
  });

  await rec.feature(lib, 'estimateGas of a revert', async () => {
    const e = await expectCallException(contract.boom.estimateGas());
    check(e.reason === 'boom', `reason ${e.reason}`);
    // ethers decodes custom errors only on calls (it knows the ABI there);
    // from estimateGas it keeps the revert data, which the interface decodes.
    const c = await expectCallException(contract.custom.estimateGas(9));
    const parsed = contract.interface.parseError(c.data);
    check(parsed?.name === 'Custom' && parsed.args[0] === 9n, `custom error data ${c.data}`);
    return 'CALL_EXCEPTION: reason "boom" / data decoded by the interface as Custom(9, sender)';
  });

  await rec.feature(lib, 'provider.on("pending") over HTTP (eth_newPendingTransactionFilter)', async () => {
    const seen = new Set();
    const listener = (hash) => seen.add(hash);
    await provider.on('pending', listener);
    try {
      await sleep(300); // the filter is installed on the first poll
      const tx = await wallet.sendTransaction({ to: addresses[0], value: 1 });
      await poll(`${tx.hash} as a "pending" event`, () => (seen.has(tx.hash) ? true : null));
      return `${seen.size} pending hash(es)`;
    } finally {
      await provider.off('pending', listener);
    }
  });

  await rec.feature(lib, 'JSON-RPC batch', async () => {
    const before = batches;
    const [bal, n, nonce, code] = await Promise.all([
      provider.getBalance(addresses[0]), provider.getBlockNumber(), provider.getTransactionCount(wallet.address), provider.getCode(await contract.getAddress()),
    ]);
    check(bal > 0n && n > 0 && nonce >= 3 && code.length > 2, `answers ${bal} ${n} ${nonce} ${code.length}`);
    check(batches > before, 'the requests were not sent as a batch');
    return `${batches - before} batch(es)`;
  });

  const wsp = new WebSocketProvider(wsUrl, network, { staticNetwork: true });
  try {
    await rec.feature(lib, 'websocket newHeads', async () => {
      const n = await within(10_000, 'newHeads', new Promise((resolve) => {
        wsp.once('block', resolve);
      }));
      check(n > 0, `block ${n}`);
      return `block ${n}`;
    });

    await rec.feature(lib, 'websocket logs', async () => {
      const wc = new Contract(await contract.getAddress(), abi, wsp);
      const got = new Promise((resolve) => { wc.once('Set', (who, value) => resolve({ who, value })); });
      await new Promise((r) => setTimeout(r, 300)); // let the subscription start
      await contract.set(99);
      const ev = await within(10_000, 'logs', got);
      check(ev.value === 99n && ev.who === wallet.address, `Set(${ev.who}, ${ev.value})`);
      return 'Set(99)';
    });

    await rec.feature(lib, 'websocket newPreconfirmations', async () => {
      let hash;
      const got = new Promise((resolve) => {
        const sub = new PreconfSubscriber(wsp, (p) => { if (hash && p.transactions.includes(hash)) resolve(p); });
        sub.start();
      });
      await new Promise((r) => setTimeout(r, 300));
      hash = (await wallet.sendTransaction({ to: addresses[0], value: 1 })).hash;
      const p = await within(10_000, 'newPreconfirmations', got);
      check(BigInt(p.index) > 0n, `index ${p.index}`);
      return `block ${BigInt(p.blockNumber)} index ${BigInt(p.index)}`;
    });
  } finally {
    await wsp.destroy();
  }

  await rec.feature(lib, 'node-held accounts + eth_sendTransaction + signing methods', async () => {
    const signer = await provider.getSigner(addresses[5]);
    const accounts = await provider.listAccounts();
    check(accounts.some((a) => a.address === addresses[5]), `eth_accounts ${accounts.map((a) => a.address)}`);
    const txs = [];
    for (let i = 0; i < 2; i++) txs.push(await signer.sendTransaction({ to: addresses[0], value: 1 }));
    const rs = await Promise.all(txs.map((t) => t.wait()));
    check(rs.every((r) => r.status === 1 && r.from === addresses[5]), 'eth_sendTransaction');
    const message = 'hello tipnode';
    const sig = await signer.signMessage(message);
    check(verifyMessage(message, sig) === addresses[5], 'personal_sign signature does not verify');
    const domain = { name: 'tipnode', version: '1', chainId: 1337, verifyingContract: await contract.getAddress() };
    const types = { Mail: [{ name: 'to', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'note', type: 'string' }] };
    const value = { to: addresses[0], amount: 2n ** 200n, note: 'hi' };
    const tsig = await signer.signTypedData(domain, types, value);
    check(verifyTypedData(domain, types, value, tsig) === addresses[5], 'eth_signTypedData_v4 signature does not verify');
    const raw = await signer.signTransaction({ to: addresses[0], value: 1 });
    check(Transaction.from(raw).from === addresses[5], 'eth_signTransaction');
    return 'getSigner (eth_accounts), sendTransaction x2, signMessage, signTypedData, signTransaction';
  });
  await rec.feature(lib, 'dev methods (provider.send; impersonation with JsonRpcSigner)', async () => {
    const who = '0x00000000000000000000000000000000000A0003';
    const n0 = await provider.getBlockNumber();
    const id = await provider.send('evm_snapshot', []);
    check(/^0x[0-9a-f]+$/.test(id), `evm_snapshot id ${id}`);
    await provider.send('hardhat_setBalance', [who, toQuantity(parseEther('3'))]);
    check(await provider.getBalance(who, 'pending') === parseEther('3'), 'hardhat_setBalance not on pending at once');
    await provider.send('anvil_setNonce', [who, '0x9']);
    check(await provider.getTransactionCount(who, 'pending') === 9, 'anvil_setNonce');
    await provider.send('hardhat_setCode', [who, '0x602a60005260206000f3']);
    check(await provider.getCode(who, 'pending') === '0x602a60005260206000f3', 'hardhat_setCode');
    const v = zeroPadValue('0x2a', 32);
    check(await provider.send('anvil_setStorageAt', [who, '0x0', v]) === true, 'anvil_setStorageAt result');
    check(await provider.getStorage(who, 0, 'pending') === v, 'anvil_setStorageAt');
    await provider.send('anvil_mine', ['0x2']);
    check(await provider.getBlockNumber() >= n0 + 2, 'anvil_mine');
    check(await provider.getBalance(who, 'latest') === parseEther('3'), 'balance not on latest after the seal');
    const t0 = (await provider.getBlock('latest')).timestamp;
    await provider.send('evm_setNextBlockTimestamp', [t0 + 500]);
    await provider.send('evm_mine', []);
    check((await provider.getBlock('latest')).timestamp >= t0 + 500, 'evm_setNextBlockTimestamp + evm_mine');
    const total = await provider.send('evm_increaseTime', [60]);
    check(typeof total === 'number' && total >= 60, `evm_increaseTime total ${total}`);
    const whale = '0x00000000000000000000000000000000000B0003';
    await provider.send('anvil_setBalance', [whale, toQuantity(parseEther('1'))]);
    await provider.send('hardhat_impersonateAccount', [whale]);
    const signer = new JsonRpcSigner(provider, whale);
    const tx = await signer.sendTransaction({ to: addresses[0], value: 1n });
    const r = await preconfirmed(tx.hash);
    check(r.status === 1 && r.from.toLowerCase() === whale.toLowerCase(), `impersonated receipt from ${r.from}`);
    await provider.send('hardhat_stopImpersonatingAccount', [whale]);
    check(await provider.send('evm_revert', [id]) === true, 'evm_revert');
    check(await provider.getBalance(who, 'pending') === 0n, 'evm_revert: balance');
    check(await provider.send('evm_revert', [id]) === false, 'evm_revert of a used id is not false');
    return 'hardhat_setBalance, anvil_setNonce, hardhat_setCode, anvil_setStorageAt, anvil_mine, evm_setNextBlockTimestamp, evm_mine, evm_increaseTime, hardhat_impersonateAccount + JsonRpcSigner.sendTransaction, evm_snapshot/evm_revert';
  });
  provider.destroy();
}
