// Package op holds the OP Stack execution rules (Bedrock through Karst) as
// self-contained pieces, written from the OP specifications
// (ethereum-optimism/specs, specs/protocol). It imports go-ethereum and the
// standard library only; package chain wires it into block execution.
//
// # Model
//
// Everything here is a pure function of its inputs, or an immutable value:
// no state, no I/O, no goroutines. Whatever reads state takes a reader
// function, so the caller decides which state (a block in progress, a
// pending snapshot) it means.
//
//   - Config (config.go): the OP part of a chain config, parsed from the same
//     chain-config JSON as go-ethereum's params.ChainConfig (op-geth's
//     genesis format: "bedrockBlock", "regolithTime" ... "karstTime" and the
//     "optimism" object with the EIP-1559 constants; an absent fork time is
//     a fork not active, "deltaTime" is optional and unused: Delta changed
//     only derivation). ParseConfig returns nil for an L1 chain. Config.ApplyTo maps the OP forks onto go-ethereum's
//     (Shanghai = Canyon, Cancun = Ecotone, Prague = Isthmus, Osaka = Karst)
//     and gives Cancun and Prague a no-blobs schedule (NoBlobsSchedule):
//     every OP header has excessBlobGas 0, so the blob base fee is 1 wei.
//   - L1 data fee (l1block.go, l1cost.go, fastlz.go): ReadFeeParams reads
//     the L1Block predeploy's storage (after the block's deposits; the
//     slots op-geth reads) into FeeParams, all but Jovian's DA footprint
//     gas scalar, which the executor takes from the block's L1-info deposit
//     as op-geth does (L1Block 1.7.0 moved it between a pre-release and the
//     release); the formula is Bedrock before Ecotone and in the Ecotone
//     activation block (detected, as the spec implies, by the Ecotone slots
//     being unset), Ecotone, then Fjord with the FastLZ size estimate.
//     FeeParams.L1Cost, OperatorFee / OperatorFeeRefund (Isthmus and
//     Jovian's x100 formula), DAFootprint and ReceiptFields give what the
//     executor charges and what receipts show. CostData summarises a
//     transaction's EIP-2718 encoding once. L1Info parses and encodes the
//     four L1-attributes calldata encodings (Bedrock ABI, Ecotone, Isthmus,
//     Jovian packed) and gives the receipts' view of the same parameters.
//   - Headers (header.go): CalcBaseFee (Canyon denominator; Holocene
//     parameters from the parent's extraData; Jovian's max(gasUsed,
//     blobGasUsed) and minimum base fee), VerifyExtraData /
//     DecodeExtraData / ExtraDataFromAttributes, BlockDAFootprint and
//     BlobGasFields / VerifyBlobGas (Jovian: blobGasUsed is the DA
//     footprint; excessBlobGas is always 0).
//   - Precompiles (precompiles.go): the set for evm.SetPrecompiles, built on
//     go-ethereum's set for the block's rules: Fjord's P256VERIFY at 0x100
//     (RIP-7212 price, 3450 gas, until Karst takes Osaka's EIP-7951 one), and
//     the Granite, Isthmus, Jovian and Karst input limits, wrapping
//     go-ethereum's implementations. ExtraWarmAddresses lists what
//     go-ethereum's access-list warming misses (0x100 before Karst).
//   - Deposits (deposit.go): source hashes (user, L1-info, upgrade), the
//     deposit receipt's nonce / version rules and its gas used.
//   - Synthetic L1 (synthetic.go): SyntheticL1 is the L1 a local sequencer
//     pretends to build on (fees and scalars of the L1-info deposit, an
//     origin advancing every BlockTime seconds of L2 time: NextOrigin from
//     the origin the parent's L1Block holds, ReadOrigin); SyntheticL1Hash
//     derives the origin's hash.
//
// # What the caller must do (the executor seam)
//
//   - Never use go-ethereum's eip1559.CalcBaseFee, eip4844.CalcExcessBlobGas
//     or VerifyEIP4844Header on an OP chain: use CalcBaseFee, BlobGasFields
//     and VerifyBlobGas. Refuse blob transactions (NoBlobsSchedule has Max 1
//     only so that go-ethereum's post-Osaka excess-gas code cannot divide by
//     zero).
//   - Read FeeParams once per block, after the deposits ran (the first
//     non-deposit transaction sees the final L1Block values); charge
//     L1Cost's fee and OperatorFee(gasLimit) with the gas purchase, refund
//     OperatorFeeRefund, credit L1FeeVault / OperatorFeeVault /
//     BaseFeeVault; deposits pay none of it.
//   - Add ExtraWarmAddresses to the access list when a transaction starts.
//
// # Notes on the specs
//
// The L1Block slot 8 layout follows L1Block.sol (operatorFeeConstant at
// Solidity offset 0, operatorFeeScalar at 8, daFootprintGasScalar at 12);
// isthmus/exec-engine.md words the first two offsets differently. The
// Jovian activation block's L1-info deposit still has the Isthmus encoding
// and no DA footprint scalar: BlockDAFootprint takes its footprint as 0 and
// refuses non-deposit transactions in it, as op-geth does.
//
// # Concurrency
//
// Config, FeeParams, L1Info (once built) and the precompile sets are
// immutable; every function is safe for concurrent use.
package op
