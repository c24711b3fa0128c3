// Compiles every .sol file of a directory with solc-js (each file holds
// the contract of its name) and writes the contract's runtime bytecode
// (hex, one line) to <Name>.bin-runtime and its ABI to <Name>.abi.json
// beside it. The outputs are checked in; run this only when a source
// changes:
//
//   npm ci                    (in this directory: solc-js 0.8.30, pinned in package-lock.json)
//   node chain/devnet/contracts/compile.js [DIR]
//
// DIR defaults to this script's directory (the dev chain's OP predeploys:
// L1Block, L2ToL1MessagePasser, GasPriceOracle, WETH9, L2CrossDomainMessenger,
// L2StandardBridge, and OperatorFeeVault, which the Isthmus upgrade deposits
// deploy: upgrade.go); cmd/benchgeth/chaingen/contracts holds the benchmark's
// BenchToken and Multicall.
//
// TestContractsCompile (chain/devnet) does the same in a temporary
// directory and fails when a checked-in output differs.
//
// Settings: solc 0.8.30, optimizer on (200 runs), EVM version prague, no
// metadata hash appended (the bytecode depends only on the source).
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const dir = path.resolve(process.argv[2] || __dirname);
const names = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith(".sol"))
  .map((f) => f.slice(0, -".sol".length))
  .sort();
if (names.length === 0) {
  console.error("no .sol files in " + dir);
  process.exit(1);
}
const input = {
  language: "Solidity",
  sources: {},
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "prague",
    metadata: { appendCBOR: false },
    outputSelection: { "*": { "*": ["abi", "evm.deployedBytecode.object"] } },
  },
};
for (const n of names) {
  input.sources[n + ".sol"] = { content: fs.readFileSync(path.join(dir, n + ".sol"), "utf8") };
}
const out = JSON.parse(solc.compile(JSON.stringify(input)));
let failed = false;
for (const e of out.errors || []) {
  console.error(e.formattedMessage);
  if (e.severity === "error") failed = true;
}
if (failed) process.exit(1);
console.error("solc " + solc.version());
for (const n of names) {
  const c = out.contracts[n + ".sol"][n];
  fs.writeFileSync(path.join(dir, n + ".bin-runtime"), c.evm.deployedBytecode.object + "\n");
  fs.writeFileSync(path.join(dir, n + ".abi.json"), JSON.stringify(c.abi, null, 1) + "\n");
}
