// web3.js v4 against tipnode dev.
//
// web3.js takes the nonce of a transaction it signs, and the block of
// calls, at web3.defaultBlock, "latest" unless set: on a node with
// pre-confirmations (and on any node, for several sends in a row) it must
// be "pending". The suite sets it, as the README tells web3 users to.
// web3.js estimates gas at "latest" whatever defaultBlock says (sends and
// contract.methods.x().estimateGas() pass "latest" explicitly): a write to
// a contract whose deployment is only pre-confirmed needs an explicit gas
// or the seal, so the suite writes after the seal.

import { Web3, WebSocketProvider, core, eth } from 'web3';
import { keys, addresses, counter, beforeSeal, check, poll, sealed, show, within } from './common.mjs';

const lib = 'web3';

// hashOf sends through web3 and resolves with the hash only (the receipt
// is left to the PromiEvent, whose outcome is kept for later).
function hashOf(promiEvent) {
  return new Promise((resolve, reject) => {
    promiEvent.on('transactionHash', resolve);
    promiEvent.catch(reject);
  });
}

async function expectRevert(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('did not revert');
}

// NewPreconfirmations is eth_subscribe("newPreconfirmations") as a web3
// subscription type.
class NewPreconfirmations extends core.Web3Subscription {
  _buildSubscriptionParams() {
    return ['newPreconfirmations'];
  }
}

export async function run({ url, wsUrl, rec }) {
  const web3 = new Web3(url);
  web3.defaultBlock = 'pending';
  web3.transactionPollingInterval = 100;
  web3.transactionConfirmationPollingInterval = 100;
  web3.transactionBlockTimeout = 50;
  const account = web3.eth.accounts.wallet.add(keys[3])[0];
  const from = account.address;
  const { abi, bytecode } = counter;
  const preconfirmed = (hash) => poll(`receipt of ${hash}`, async () => {
    try {
      return await web3.eth.getTransactionReceipt(hash);
    } catch (e) {
      if (/not found|TransactionNotFound|null/i.test(String(e.message))) return null;
      throw e;
    }
  });

  await rec.feature(lib, 'three sends in a row', async () => {
    const hashes = [];
    for (let i = 1; i <= 3; i++) hashes.push(await hashOf(web3.eth.sendTransaction({ from, to: addresses[0], value: i, gas: 21000 })));
    const rs = await Promise.all(hashes.map(preconfirmed));
    check(rs.every((r) => r.status === 1n), 'a send failed');
    const txs = await Promise.all(hashes.map((h) => web3.eth.getTransaction(h)));
    check(new Set(txs.map((t) => t.nonce)).size === 3, `nonces ${txs.map((t) => t.nonce)}`);
    return `nonces ${txs.map((t) => t.nonce).join(',')} (web3.defaultBlock = "pending")`;
  });

  let contract;
  await rec.feature(lib, 'deploy, read at pending after the pre-confirmed receipt, at latest after the seal', async () => {
    const r = await beforeSeal(async () => preconfirmed(await hashOf(new web3.eth.Contract(abi).deploy({ data: bytecode, arguments: [7] }).send({ from }))));
    const hash = r.transactionHash;
    check(r.status === 1n && r.contractAddress, 'deployment failed');
    check(r.effectiveGasPrice > 0n, `effectiveGasPrice ${r.effectiveGasPrice}`);
    contract = new web3.eth.Contract(abi, r.contractAddress);
    const v = await contract.methods.value().call({}, 'pending');
    check(v === 7n, `pending value ${v}`);
    await sealed(url, hash);
    check(await contract.methods.value().call({}, 'latest') === 7n, 'latest value after the seal');
    const set = await hashOf(contract.methods.set(42).send({ from }));
    const sr = await preconfirmed(set);
    const ev = web3.eth.abi.decodeLog(abi.find((x) => x.name === 'Set').inputs, sr.logs[0].data, sr.logs[0].topics.slice(1));
    check(ev.value === 42n, `Set log value ${show(ev)}`);
    check(await contract.methods.value().call({}, 'pending') === 42n, 'pending after set');
    await sealed(url, set);
    const latest = await contract.methods.value().call({}, 'latest');
    check(latest === 42n, `latest value after the seal ${latest}`);
    return `contract ${r.contractAddress}`;
  });

  await rec.feature(lib, 'revert reason and custom error decoded', async () => {
    const boom = await expectRevert(contract.methods.boom().call());
    check(boom.name === 'ContractExecutionError', `error ${boom.name}: ${boom.message}`);
    const inner = boom.cause;
    check(inner && inner.errorName === 'Error' && inner.errorArgs?.message === 'boom', `boom decoded as ${show({ name: inner?.errorName, args: inner?.errorArgs, reason: inner?.message })}`);
    const custom = await expectRevert(contract.methods.custom(5).call({ from }));
    const ci = custom.cause;
    check(ci && ci.errorName === 'Custom' && ci.errorArgs?.code === 5n && ci.errorArgs?.who === from, `custom decoded as ${show({ name: ci?.errorName, args: ci?.errorArgs })}`);
    return 'ContractExecutionError: Error("boom") / Custom(5, sender)';
  });

  await rec.feature(lib, 'estimateGas of a revert', async () => {
    // web3.js decodes revert data on calls only; from estimateGas it keeps
    // the data (cause.data), which its ABI coder decodes.
    const e = await expectRevert(contract.methods.boom().estimateGas({ from }));
    check(e.name === 'ContractExecutionError' && e.cause?.data?.startsWith('0x08c379a0'), `error ${e.name}: data ${e.cause?.data}`);
    const reason = web3.eth.abi.decodeParameter('string', '0x' + e.cause.data.slice(10));
    check(reason === 'boom', `reason ${reason}`);
    const c = await expectRevert(contract.methods.custom(9).estimateGas({ from }));
    const sel = web3.eth.abi.encodeFunctionSignature('Custom(uint256,address)');
    check(c.cause?.data?.startsWith(sel), `custom error data ${c.cause?.data}`);
    const args = web3.eth.abi.decodeParameters(['uint256', 'address'], '0x' + c.cause.data.slice(10));
    check(args[0] === 9n && args[1] === from, `custom args ${show(args)}`);
    return 'ContractExecutionError with the revert data: Error("boom") / Custom(9, sender) decoded by the ABI coder';
  });

  await rec.feature(lib, 'JSON-RPC batch', async () => {
    const batch = new web3.BatchRequest();
    const answers = Promise.all([
      batch.add({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      batch.add({ jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [addresses[0], 'latest'] }),
      batch.add({ jsonrpc: '2.0', id: 3, method: 'eth_getTransactionCount', params: [from, 'pending'] }),
    ]);
    const res = await batch.execute();
    const [id, bal, nonce] = await answers;
    check(res.length === 3 && BigInt(id) === 1337n && BigInt(bal) > 0n && BigInt(nonce) >= 3n, `answers ${show(res)}`);
    return '3 requests in one batch';
  });

  const provider = new WebSocketProvider(wsUrl);
  const ws = new Web3({ provider, registeredSubscriptions: { newPreconfirmations: NewPreconfirmations } });
  try {
    await rec.feature(lib, 'websocket newHeads', async () => {
      const sub = await ws.eth.subscribe('newHeads');
      const h = await within(10_000, 'newHeads', new Promise((resolve, reject) => { sub.on('data', resolve); sub.on('error', reject); }));
      await sub.unsubscribe();
      check(h.number > 0n && h.hash, 'head without number/hash');
      return `block ${h.number}`;
    });

    await rec.feature(lib, 'websocket logs', async () => {
      const wc = new ws.eth.Contract(abi, contract.options.address);
      const sub = wc.events.Set();
      await new Promise((resolve, reject) => { sub.on('connected', resolve); sub.on('error', reject); });
      const got = new Promise((resolve, reject) => { sub.on('data', resolve); sub.on('error', reject); });
      await hashOf(contract.methods.set(99).send({ from }));
      const ev = await within(10_000, 'logs', got);
      await sub.unsubscribe();
      check(ev.returnValues.value === 99n, `Set ${show(ev.returnValues)}`);
      return 'Set(99)';
    });

    await rec.feature(lib, 'websocket newPreconfirmations', async () => {
      let hash;
      const sub = await ws.eth.subscribe('newPreconfirmations');
      const got = new Promise((resolve, reject) => {
        sub.on('data', (p) => { if (hash && p.transactions.includes(hash)) resolve(p); });
        sub.on('error', reject);
      });
      hash = await hashOf(web3.eth.sendTransaction({ from, to: addresses[0], value: 1, gas: 21000 }));
      const p = await within(10_000, 'newPreconfirmations', got);
      await sub.unsubscribe();
      check(BigInt(p.index) > 0n, `index ${p.index}`);
      return `block ${BigInt(p.blockNumber)} index ${BigInt(p.index)}`;
    });
  } finally {
    await provider.disconnect();
  }

  await rec.feature(lib, 'node-held accounts + eth_sendTransaction + signing methods', async () => {
    const node = new Web3(url); // no local wallet: the node signs
    node.defaultBlock = 'pending';
    node.transactionPollingInterval = 100;
    const nodeAccount = addresses[6];
    const accounts = await node.eth.getAccounts();
    check(accounts.map((a) => a.toLowerCase()).includes(nodeAccount.toLowerCase()), `eth_accounts ${accounts}`);
    const hashes = [];
    for (let i = 0; i < 2; i++) hashes.push(await hashOf(node.eth.sendTransaction({ from: nodeAccount, to: addresses[0], value: 1 })));
    const rs = await Promise.all(hashes.map(preconfirmed));
    check(rs.every((r) => r.status === 1n && r.from.toLowerCase() === nodeAccount.toLowerCase()), 'eth_sendTransaction');
    const message = 'hello tipnode';
    const sig = await node.eth.sign(node.utils.utf8ToHex(message), nodeAccount);
    const signer = node.eth.accounts.recover(message, typeof sig === 'string' ? sig : sig.signature);
    check(signer.toLowerCase() === nodeAccount.toLowerCase(), `eth_sign recovers ${signer}`);
    const typed = {
      types: {
        EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }],
        Mail: [{ name: 'to', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'note', type: 'string' }],
      },
      primaryType: 'Mail',
      domain: { name: 'tipnode', version: '1', chainId: 1337, verifyingContract: contract.options.address },
      message: { to: addresses[0], amount: (2n ** 200n).toString(), note: 'hi' },
    };
    const tsig = await node.eth.signTypedData(nodeAccount, typed);
    const digest = eth.abi.getEncodedEip712Data(typed, true);
    const tsigner = node.eth.accounts.recover(digest, tsig, true);
    check(tsigner.toLowerCase() === nodeAccount.toLowerCase(), `eth_signTypedData_v4 recovers ${tsigner}`);
    const signed = await node.eth.signTransaction({ from: nodeAccount, to: addresses[0], value: 1, gas: 21000 });
    check(signed.raw && signed.tx, `eth_signTransaction ${show(signed).slice(0, 80)}`);
    return 'eth.getAccounts, eth.sendTransaction x2, eth.sign, eth.signTypedData, eth.signTransaction';
  });

  await rec.feature(lib, 'dev methods (requestManager.send; impersonated eth.sendTransaction)', async () => {
    const send = (method, params = []) => web3.requestManager.send({ method, params });
    const who = '0x00000000000000000000000000000000000a0004';
    const n0 = await web3.eth.getBlockNumber();
    const id = await send('evm_snapshot');
    await send('anvil_setBalance', [who, '0x' + (7n * 10n ** 18n).toString(16)]);
    check(await web3.eth.getBalance(who, 'pending') === 7n * 10n ** 18n, 'anvil_setBalance not on pending at once');
    await send('hardhat_setNonce', [who, '0x3']);
    check(await web3.eth.getTransactionCount(who, 'pending') === 3n, 'hardhat_setNonce');
    await send('anvil_setCode', [who, '0x602a60005260206000f3']);
    check(await web3.eth.getCode(who, 'pending') === '0x602a60005260206000f3', 'anvil_setCode');
    const v = '0x' + '00'.repeat(31) + '2a';
    check(await send('hardhat_setStorageAt', [who, '0x5', v]) === true, 'hardhat_setStorageAt result');
    check(await web3.eth.getStorageAt(who, 5, 'pending') === v, 'hardhat_setStorageAt');
    await send('hardhat_mine', ['0x2', '0x10']);
    check(await web3.eth.getBlockNumber() >= n0 + 2n, 'hardhat_mine');
    check(await web3.eth.getBalance(who, 'latest') === 7n * 10n ** 18n, 'balance not on latest after the seal');
    const t0 = (await web3.eth.getBlock('latest')).timestamp;
    await send('evm_mine', ['0x' + (t0 + 700n).toString(16)]);
    check((await web3.eth.getBlock('latest')).timestamp >= t0 + 700n, 'evm_mine timestamp');
    const total = await send('evm_increaseTime', ['0x3c']);
    check(total >= 60, `evm_increaseTime total ${total}`);
    const whale = '0x00000000000000000000000000000000000b0004';
    await send('anvil_setBalance', [whale, '0xde0b6b3a7640000']);
    await send('anvil_impersonateAccount', [whale]);
    const r = await web3.eth.sendTransaction({ from: whale, to: addresses[0], value: 1, gas: 21000 });
    check(r.status === 1n && r.from.toLowerCase() === whale, `impersonated receipt ${show(r).slice(0, 120)}`);
    await send('anvil_stopImpersonatingAccount', [whale]);
    check(await send('evm_revert', [id]) === true, 'evm_revert');
    check(await web3.eth.getBalance(who, 'pending') === 0n, 'evm_revert: balance');
    return 'anvil_setBalance, hardhat_setNonce, anvil_setCode, hardhat_setStorageAt, hardhat_mine, evm_mine(timestamp), evm_increaseTime, anvil_impersonateAccount + eth.sendTransaction, evm_snapshot/evm_revert';
  });
}
