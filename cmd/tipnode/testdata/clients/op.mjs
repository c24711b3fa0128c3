// viem's OP Stack support against `tipnode dev --op`: the op-stack
// chainConfig (formatters, predeploy addresses), publicActionsL2 and
// walletActionsL2. Run by run.mjs as library "op".

import { createPublicClient, createWalletClient, defineChain, http, parseAbi, parseEther, parseEventLogs, erc20Abi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { chainConfig, publicActionsL2, walletActionsL2, getWithdrawals } from 'viem/op-stack';
import { ethers } from 'ethers';
import { keys, addresses, check, poll, rpc, sealed, show } from './common.mjs';

const lib = 'viem-op';

// The predeploys the dev chain has (viem's op-stack contracts and WETH9).
const GPO = '0x420000000000000000000000000000000000000F';
const L1BLOCK = '0x4200000000000000000000000000000000000015';
const PASSER = '0x4200000000000000000000000000000000000016';
const WETH = '0x4200000000000000000000000000000000000006';

const gpoAbi = [
  ...['isEcotone', 'isFjord', 'isIsthmus', 'isJovian'].map((name) => ({ type: 'function', name, stateMutability: 'view', inputs: [], outputs: [{ type: 'bool' }] })),
  ...['decimals', 'l1BaseFee', 'blobBaseFee', 'gasPrice', 'baseFee'].map((name) => ({ type: 'function', name, stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] })),
  ...['baseFeeScalar', 'blobBaseFeeScalar'].map((name) => ({ type: 'function', name, stateMutability: 'view', inputs: [], outputs: [{ type: 'uint32' }] })),
  { type: 'function', name: 'getL1FeeUpperBound', stateMutability: 'view', inputs: [{ type: 'uint256' }], outputs: [{ type: 'uint256' }] },
];
const l1BlockAbi = [
  ...['number', 'timestamp'].map((name) => ({ type: 'function', name, stateMutability: 'view', inputs: [], outputs: [{ type: 'uint64' }] })),
  ...['basefee', 'blobBaseFee'].map((name) => ({ type: 'function', name, stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] })),
  { type: 'function', name: 'operatorFeeScalar', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint32' }] },
  { type: 'function', name: 'operatorFeeConstant', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint64' }] },
  { type: 'function', name: 'daFootprintGasScalar', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint16' }] },
];
const wethAbi = [...erc20Abi, { type: 'function', name: 'deposit', stateMutability: 'payable', inputs: [], outputs: [] },
  { type: 'function', name: 'withdraw', stateMutability: 'nonpayable', inputs: [{ type: 'uint256' }], outputs: [] }];

export async function run({ url, rec }) {
  const id = Number(await rpc(url, 'eth_chainId'));
  const chain = defineChain({
    ...chainConfig, id, name: 'tipnode dev --op', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const client = createPublicClient({ chain, transport: http(url), pollingInterval: 100 }).extend(publicActionsL2());
  const account = privateKeyToAccount(keys[6]);
  const wallet = createWalletClient({ chain, transport: http(url), account, pollingInterval: 100 }).extend(walletActionsL2());
  const receiptOf = (hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  // viem's OP actions read the predeploys at latest: wait for the first
  // sealed block, whose L1-info deposit set the L1Block (at genesis it
  // holds nothing yet, as on any OP chain's genesis).
  await poll('block 1', async () => ((await client.getBlockNumber()) >= 1n ? true : null), 100, 15_000);

  await rec.feature(lib, 'GasPriceOracle and L1Block getters: the Jovian fork flags, the L1 fee parameters of the L1Block', async () => {
    const read = (address, abi, functionName, args = []) => client.readContract({ address, abi, functionName, args });
    for (const f of ['isEcotone', 'isFjord', 'isIsthmus', 'isJovian']) check(await read(GPO, gpoAbi, f) === true, `${f} false`);
    check(await read(GPO, gpoAbi, 'decimals') === 6n, 'decimals');
    check(await read(GPO, gpoAbi, 'l1BaseFee') === await read(L1BLOCK, l1BlockAbi, 'basefee'), 'l1BaseFee differs from L1Block.basefee');
    check(await read(GPO, gpoAbi, 'blobBaseFee') === await read(L1BLOCK, l1BlockAbi, 'blobBaseFee'), 'blobBaseFee');
    check(await client.getL1BaseFee() === await read(L1BLOCK, l1BlockAbi, 'basefee'), 'getL1BaseFee');
    check(await read(L1BLOCK, l1BlockAbi, 'daFootprintGasScalar') > 0, 'daFootprintGasScalar 0');
    check(await read(GPO, gpoAbi, 'getL1FeeUpperBound', [200n]) > 0n, 'getL1FeeUpperBound 0');
    return `L1 base fee ${await client.getL1BaseFee()}, operator fee scalar ${await read(L1BLOCK, l1BlockAbi, 'operatorFeeScalar')}`;
  });

  await rec.feature(lib, 'estimateL1Fee / estimateL1Gas / getL1BaseFee / estimateOperatorFee / estimateTotalFee equal what the receipt charges', async () => {
    // A transfer, as a legacy transaction at the gas price
    // estimateTotalFee assumed (eth_gasPrice): its charge is then exactly
    // gasUsed * gasPrice + l1Fee + operator fee. (A transfer: its gas
    // estimate is exact, where a call's is within estimateGas's 1.5%.)
    const to = addresses[7];
    const req = { account, to, value: 12345n };
    let est, gasPrice;
    for (let i = 0; ; i++) {
      const gp0 = await client.getGasPrice();
      est = {
        l1Fee: await client.estimateL1Fee(req), l1Gas: await client.estimateL1Gas(req), l1BaseFee: await client.getL1BaseFee(),
        operatorFee: await client.estimateOperatorFee(req), total: await client.estimateTotalFee(req), gas: await client.estimateGas(req),
      };
      gasPrice = await client.getGasPrice();
      if (gp0 === gasPrice) break;
      if (i === 4) throw new Error('eth_gasPrice kept moving');
    }
    check(est.l1Fee > 0n && est.operatorFee > 0n, `estimates ${show(est)}`);
    check(est.total === est.l1Fee + est.operatorFee + est.gas * gasPrice, `estimateTotalFee ${est.total} != parts ${show(est)} at ${gasPrice}`);
    const before = await client.getBalance({ address: account.address, blockTag: 'pending' });
    const hash = await wallet.sendTransaction({ to, value: req.value, type: 'legacy', gasPrice, gas: est.gas });
    const r = await receiptOf(hash);
    check(r.status === 'success', 'reverted');
    check(r.l1Fee === est.l1Fee, `receipt l1Fee ${r.l1Fee}, estimateL1Fee ${est.l1Fee}`);
    check(r.l1GasUsed === est.l1Gas, `receipt l1GasUsed ${r.l1GasUsed}, estimateL1Gas ${est.l1Gas}`);
    check(r.l1GasPrice === est.l1BaseFee, `receipt l1GasPrice ${r.l1GasPrice}, getL1BaseFee ${est.l1BaseFee}`);
    check(r.gasUsed === est.gas && r.effectiveGasPrice === gasPrice, `gasUsed ${r.gasUsed} at ${r.effectiveGasPrice}, estimated ${est.gas} at ${gasPrice}`);
    const after = await client.getBalance({ address: account.address, blockTag: 'pending' });
    const charged = before - after - req.value;
    check(charged === est.total, `charged ${charged}, estimateTotalFee ${est.total} (${show(est)})`);
    return `l1Fee ${r.l1Fee}, operator fee ${est.operatorFee}, total ${charged}`;
  });

  await rec.feature(lib, 'tipnode_sendDeposit: the deposit, its receipt and the block\'s L1-info deposit formatted as deposits', async () => {
    const from = '0x00000000000000000000000000000000000D3705';
    const hash = await client.request({ method: 'tipnode_sendDeposit', params: [{ from, to: addresses[7], mint: '0x3e8', value: '0x3e8', gas: '0x186a0' }] });
    const r = await receiptOf(hash);
    check(r.status === 'success' && r.l1Fee === null && typeof r.depositNonce === 'bigint' && r.depositReceiptVersion === 1, `deposit receipt ${show(r)}`);
    const tx = await client.getTransaction({ hash });
    check(tx.type === 'deposit' && tx.typeHex === '0x7e' && tx.mint === 1000n && !tx.isSystemTx && /^0x[0-9a-f]{64}$/.test(tx.sourceHash) && tx.from.toLowerCase() === from.toLowerCase(),
      `deposit ${show(tx)}`);
    const n = await sealed(url, hash);
    const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
    const info = block.transactions[0];
    check(info.type === 'deposit' && info.to.toLowerCase() === L1BLOCK.toLowerCase() && info.from.toLowerCase() === '0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001',
      `first transaction ${show(info)}`);
    check(block.transactions.some((t) => t.hash === hash && t.type === 'deposit'), 'deposit not in its block as a deposit');
    return `deposit in block ${n}, source hash ${tx.sourceHash.slice(0, 10)}…`;
  });

  await rec.feature(lib, 'initiateWithdrawal (walletActionsL2): MessagePassed, the withdrawal recorded in the message passer', async () => {
    const request = { to: addresses[7], value: parseEther('0.001'), gas: 100_000n, data: '0xabcd' };
    const gas = await client.estimateInitiateWithdrawalGas({ account, request });
    const hash = await wallet.initiateWithdrawal({ request });
    const r = await receiptOf(hash);
    check(r.status === 'success' && r.gasUsed <= gas, `status ${r.status}, gasUsed ${r.gasUsed} > estimate ${gas}`);
    const [w] = getWithdrawals(r);
    check(w && w.sender === account.address && w.target === request.to && w.value === request.value && w.gasLimit === request.gas && w.data === request.data,
      `withdrawal ${show(w)}`);
    const passer = chainConfig.contracts.l2ToL1MessagePasser.address;
    check(passer === PASSER, 'address');
    const abi = [{ type: 'function', name: 'sentMessages', stateMutability: 'view', inputs: [{ type: 'bytes32' }], outputs: [{ type: 'bool' }] },
      { type: 'function', name: 'messageNonce', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] }];
    check(await client.readContract({ address: PASSER, abi, functionName: 'sentMessages', args: [w.withdrawalHash], blockTag: 'pending' }) === true, 'sentMessages false');
    check((w.nonce >> 240n) === 1n, `nonce ${w.nonce} not version 1`);
    return `withdrawal ${w.withdrawalHash.slice(0, 10)}…, nonce ${w.nonce & ((1n << 240n) - 1n)}`;
  });

  await rec.feature(lib, 'L2StandardBridge.bridgeETHTo: WithdrawalInitiated, and the messenger\'s withdrawal in the message passer', async () => {
    const bridgeAbi = parseAbi([
      'function bridgeETHTo(address _to, uint32 _minGasLimit, bytes _extraData) payable',
      'event WithdrawalInitiated(address indexed l1Token, address indexed l2Token, address indexed from, address to, uint256 amount, bytes extraData)',
      'event ETHBridgeInitiated(address indexed from, address indexed to, uint256 amount, bytes extraData)',
    ]);
    const bridge = chainConfig.contracts.l2StandardBridge.address;
    const messenger = chainConfig.contracts.l2CrossDomainMessenger.address;
    const hash = await wallet.writeContract({ address: bridge, abi: bridgeAbi, functionName: 'bridgeETHTo', args: [addresses[7], 100_000, '0x'], value: 777n });
    const r = await receiptOf(hash);
    check(r.status === 'success', 'bridgeETHTo reverted');
    const logs = parseEventLogs({ abi: bridgeAbi, logs: r.logs });
    const wi = logs.find((l) => l.eventName === 'WithdrawalInitiated');
    check(wi && wi.args.from === account.address && wi.args.to === addresses[7] && wi.args.amount === 777n, `bridge logs ${show(logs)}`);
    const [w] = getWithdrawals(r);
    check(w && w.sender.toLowerCase() === messenger.toLowerCase() && w.value === 777n, `withdrawal ${show(w)}`);
    return `withdrawal ${w.withdrawalHash.slice(0, 10)}… from the messenger`;
  });

  await rec.feature(lib, 'WETH9 predeploy: deposit, balanceOf, withdraw', async () => {
    const read = (functionName, args = []) => client.readContract({ address: WETH, abi: wethAbi, functionName, args, blockTag: 'pending' });
    check(await read('symbol') === 'WETH' && await read('decimals') === 18, 'metadata');
    const b0 = await read('balanceOf', [account.address]);
    const h1 = await wallet.writeContract({ address: WETH, abi: wethAbi, functionName: 'deposit', value: 5000n });
    check((await receiptOf(h1)).status === 'success', 'deposit reverted');
    check(await read('balanceOf', [account.address]) === b0 + 5000n, 'balance after deposit');
    const h2 = await wallet.writeContract({ address: WETH, abi: wethAbi, functionName: 'withdraw', args: [2000n] });
    check((await receiptOf(h2)).status === 'success', 'withdraw reverted');
    check(await read('balanceOf', [account.address]) === b0 + 3000n, 'balance after withdraw');
    return 'ok';
  });

  await rec.feature('ethers-op', 'GasPriceOracle.getL1Fee of the unsigned serialized transaction (as ethers and MetaMask estimate) equals the receipt\'s l1Fee', async () => {
    const provider = new ethers.JsonRpcProvider(url, undefined, { cacheTimeout: -1, staticNetwork: true });
    const signer = new ethers.Wallet(keys[5], provider);
    const gpo = new ethers.Contract(GPO, ['function getL1Fee(bytes) view returns (uint256)', 'function getL1GasUsed(bytes) view returns (uint256)',
      'function getOperatorFee(uint256) view returns (uint256)'], provider);
    const tx = await signer.populateTransaction({ to: addresses[7], value: 1n });
    const { from: _from, ...fields } = tx; // (an unsigned Transaction has no from)
    const unsigned = ethers.Transaction.from(fields).unsignedSerialized;
    const [fee, gas] = await Promise.all([gpo.getL1Fee(unsigned), gpo.getL1GasUsed(unsigned)]);
    const sent = await signer.sendTransaction(tx);
    const r = await provider.waitForTransaction(sent.hash, 1, 15_000);
    const raw = await provider.send('eth_getTransactionReceipt', [sent.hash]);
    check(BigInt(raw.l1Fee) === fee && BigInt(raw.l1GasUsed) === gas, `getL1Fee ${fee}, getL1GasUsed ${gas}; receipt ${raw.l1Fee}, ${raw.l1GasUsed}`);
    const opFee = await gpo.getOperatorFee(r.gasUsed);
    const scalar = BigInt(raw.operatorFeeScalar), constant = BigInt(raw.operatorFeeConstant);
    check(opFee === r.gasUsed * scalar * 100n + constant, `getOperatorFee ${opFee}, receipt's Jovian parameters give ${r.gasUsed * scalar * 100n + constant}`);
    return `l1Fee ${fee}, operator fee ${opFee}`;
  });
}
