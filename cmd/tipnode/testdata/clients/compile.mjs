// Compiles Counter.sol with solc-js into Counter.json ({abi, bytecode}).
// Run once by hand (npm i solc@0.8.30 && node compile.mjs); the suite itself
// only reads Counter.json.
import fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const solc = require('solc');
const dir = new URL('.', import.meta.url).pathname;
const source = fs.readFileSync(dir + 'Counter.sol', 'utf8');
const input = {
  language: 'Solidity',
  sources: { 'Counter.sol': { content: source } },
  settings: { evmVersion: 'cancun', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors ?? []) if (e.severity === 'error') throw new Error(e.formattedMessage);
const c = out.contracts['Counter.sol'].Counter;
fs.writeFileSync(dir + 'Counter.json', JSON.stringify({ compiler: 'solc ' + solc.version(), abi: c.abi, bytecode: '0x' + c.evm.bytecode.object }, null, 2) + '\n');
console.log('wrote Counter.json with', solc.version());
