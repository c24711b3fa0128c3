package chain

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain/op"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// opRules is the OP Stack seam of an Executor: every place where an OP
// chain's execution differs from L1 asks it (Executor.op is nil on an L1
// chain). The rules themselves are in package op; this file applies them
// to a block in progress:
//   - deposits: mint first, no signature, fee, nonce or EOA check, no gas
//     bought, no EIP-7825 cap; a deposit failing outside the EVM keeps its
//     mint, bumps the nonce and uses its whole gas limit;
//   - other transactions: the L1 data fee and the operator fee charged with
//     the gas purchase (the balance must cover them), the unused operator
//     fee refunded, the fees credited to their vaults, the base fee paid to
//     the BaseFeeVault instead of burned; blob transactions refused;
//   - headers: OP base fee (Canyon, Holocene extraData, Jovian), extraData,
//     blob gas fields (Jovian DA footprint), no 1/1024 gas limit rule;
//   - precompiles per OP fork; no EIP-7002/7251 request system calls;
//   - Canyon: the create2Deployer's code set in the block at exactly
//     canyonTime (applyCanyonDeployer).
type opRules struct {
	cfg *op.Config
}

func newOPRules(cfg *op.Config) *opRules { return &opRules{cfg: cfg} }

// OP returns the chain's OP Stack config (nil on an L1 chain).
func (e *Executor) OP() *op.Config {
	if e.op == nil {
		return nil
	}
	return e.op.cfg
}

// opBlock is the per-block OP state of a BlockProcessor.
type opBlock struct {
	fees *op.FeeParams // read once, at the first non-deposit transaction
	// daScalar is the DA footprint gas scalar the block's L1-info deposit
	// carries (its Jovian encoding; 0 with any other encoding).
	daScalar uint16
	// l1Info is the encoding of the block's L1-info deposit (known once
	// it ran: l1InfoSeen).
	l1Info     op.L1InfoVersion
	l1InfoSeen bool
	// karstActivation: the block is the first of Karst (its parent is
	// before Karst), which holds deposits only.
	karstActivation bool
}

// newOPBlock is the per-block OP state of a block on parent (none on an L1
// chain or without a parent).
func (e *Executor) newOPBlock(h, parent *types.Header) opBlock {
	if e.op == nil || parent == nil {
		return opBlock{}
	}
	return opBlock{karstActivation: e.op.cfg.IsKarst(h.Time) && !e.op.cfg.IsKarst(parent.Time)}
}

// applyCanyonDeployer sets the create2Deployer preinstall's code in the
// block whose timestamp is exactly canyonTime (canyon/overview.md), before
// the block's system calls and transactions, as op-geth does (its state
// processor and block builder: EnsureCreate2Deployer after the DAO fork).
// Nothing on an L1 chain.
func (e *Executor) applyCanyonDeployer(h *types.Header, state *StateDB) {
	if e.op == nil || !e.op.cfg.IsCanyonActivation(h.Time) {
		return
	}
	state.SetCode(op.Create2DeployerAddr, op.Create2DeployerCode, tracing.CodeChangeUnspecified)
}

// feeParams reads the block's L1 fee parameters from the L1Block predeploy
// as the deposits left it, with the DA footprint gas scalar of the block's
// L1-info deposit (Jovian): like op-geth, taken from the calldata, which
// the spec makes interchangeable with the contract's storage and which
// holds whatever storage layout an L1Block version uses.
func (p *BlockProcessor) feeParams() *op.FeeParams {
	if p.opb.fees == nil {
		fp := op.ReadFeeParams(p.exec.op.cfg, p.header.Time, func(slot common.Hash) common.Hash {
			return p.state.GetState(op.L1BlockAddr, slot)
		})
		if fp.Jovian {
			fp.DAFootprintGasScalar = p.opb.daScalar
		}
		p.opb.fees = fp
	}
	return p.opb.fees
}

// noteL1Info records what the block reads from its L1-info deposit (the
// first transaction, from the depositor account): the DA footprint gas
// scalar of the Jovian encoding.
func (p *BlockProcessor) noteL1Info(d *chaintypes.Deposit) {
	if len(p.receipts) != 0 || d.From() != op.L1InfoDepositor {
		return
	}
	info, err := op.ParseL1Info(d.Data())
	if err != nil {
		return
	}
	p.opb.l1Info, p.opb.l1InfoSeen = info.Version, true
	if info.Version == op.L1InfoJovian {
		p.opb.daScalar = info.DAFootprintGasScalar
	}
}

// errJovianActivation refuses a sequenced transaction in a Jovian block
// whose L1-info deposit has the Isthmus encoding: the Jovian activation
// block, which holds deposits only (op-node builds it with noTxPool; op-geth
// refuses it otherwise: CalcDAFootprint, "unexpected non-deposit
// transactions in Jovian activation block").
//
// The Karst activation block holds deposits only too (its L1-info deposit,
// user deposits and Karst's upgrade deposits, karst/derivation.md
// "Activation Block Rules"): op-reth, the client that runs Karst, refuses
// user transactions in every fork activation block from Jovian
// (alloy-op-evm); op-geth v1.101702.3 has no Karst. Both checks apply once
// the block's L1-info deposit ran (a block being executed, not a call on
// a pending header).
func (p *BlockProcessor) errJovianActivation(fp *op.FeeParams) error {
	if fp.Jovian && p.opb.l1InfoSeen && p.opb.l1Info == op.L1InfoIsthmus {
		return fmt.Errorf("%w: a sequenced transaction in the Jovian activation block (deposits only)", op.ErrDAFootprint)
	}
	if p.opb.karstActivation && p.opb.l1InfoSeen {
		return fmt.Errorf("%w: a sequenced transaction in the Karst activation block (deposits only)", op.ErrActivationBlock)
	}
	return nil
}

// applyDeposit executes an OP Stack deposit as the next transaction.
func (p *BlockProcessor) applyDeposit(d *chaintypes.Deposit) (receipt *chaintypes.Receipt, err error) {
	cfg, t := p.exec.op.cfg, p.header.Time
	p.noteL1Info(d)
	from := d.From()
	gasLimit := d.Gas()
	if p.gp.Available(p.rules.IsAmsterdam) < gasLimit {
		return nil, &TxError{Tx: d.Hash(), Err: core.ErrGasLimitReached}
	}
	index := len(p.receipts)
	p.state.SetTxContext(d.Hash(), index, uint32(index+1))
	nonce := p.state.GetNonce(from)
	if mint := d.MintValue(); mint.Sign() > 0 {
		p.state.AddBalance(from, uint256.MustFromBig(mint), tracing.BalanceChangeUnspecified)
	}
	if p.evm.Config.Tracer != nil {
		// Tracers see a deposit as the unsigned call its fields make
		// (go-ethereum's hooks take a *types.Transaction; the hash is in
		// their context).
		standIn := types.NewTx(&types.LegacyTx{Nonce: nonce, To: d.To(), Value: d.Value(), Gas: gasLimit, GasPrice: new(big.Int), Data: d.Data()})
		if end := p.traceTx(standIn, from); end != nil {
			defer func() { end(receipt, err) }()
		}
	}
	snap := p.state.Snapshot()
	gpSnap := p.gp.Snapshot()
	value := uint256.MustFromBig(d.Value())
	msg := &core.Message{
		From: from, To: d.To(), Nonce: nonce, Value: value, GasLimit: gasLimit,
		GasPrice: new(uint256.Int), GasFeeCap: new(uint256.Int), GasTipCap: new(uint256.Int), Data: d.Data(),
	}
	msg.SkipNonceCheck().SkipEOACheck().SkipGasLimitCapCheck().SkipExecutionGasCapCheck()
	failed := false
	var result *core.ExecutionResult
	execErr := errFromSystemTx(cfg, t, d)
	if execErr == nil {
		// A deposit buys no gas: the base fee check is off for it (the EVM
		// still sees the block's base fee).
		noBaseFee := p.evm.Config.NoBaseFee
		p.evm.Config.NoBaseFee = true
		result, execErr = core.ApplyMessage(p.evm, msg, p.gp)
		p.evm.Config.NoBaseFee = noBaseFee
	}
	if rerr := p.state.Error(); rerr != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateRead, rerr)
	}
	var evmGas uint64
	if execErr != nil {
		// Invalid as a transaction, still included: the mint stays, the
		// nonce moves, the whole gas limit is used.
		failed = true
		p.state.RevertToSnapshot(snap)
		p.state.SetNonce(from, nonce+1, tracing.NonceChangeUnspecified)
	} else {
		evmGas = result.UsedGas
	}
	gasUsed := op.DepositGasUsed(cfg, t, d.IsSystemTx(), gasLimit, evmGas, failed)
	if failed || gasUsed != evmGas {
		p.gp.Set(gpSnap)
		if err := p.gp.CheckGasLegacy(gasLimit); err != nil {
			return nil, &TxError{Tx: d.Hash(), Err: err}
		}
		if err := p.gp.ChargeGasLegacy(gasLimit-gasUsed, gasUsed); err != nil {
			return nil, &TxError{Tx: d.Hash(), Err: err}
		}
	}
	p.state.Finalise(p.rules)
	xr := &chaintypes.Receipt{Receipt: types.Receipt{
		Type:              chaintypes.DepositTxType,
		CumulativeGasUsed: p.gp.CumulativeUsed(),
		TxHash:            d.Hash(),
		GasUsed:           gasUsed,
		EffectiveGasPrice: new(big.Int),
		BlockHash:         p.hash,
		BlockNumber:       new(big.Int).Set(p.header.Number),
		TransactionIndex:  uint(index),
		Status:            types.ReceiptStatusSuccessful,
	}}
	if failed || result.Failed() {
		xr.Status = types.ReceiptStatusFailed
	}
	dn, rv, _ := op.DepositReceiptFields(cfg, t, nonce)
	if dn != nil || rv != nil {
		xr.OP = &chaintypes.OPReceipt{DepositNonce: dn, DepositReceiptVersion: rv}
	}
	if d.To() == nil && !failed {
		xr.ContractAddress = crypto.CreateAddress(from, nonce)
	}
	xr.Logs = p.state.GetLogs(d.Hash(), p.header.Number.Uint64(), p.hash, p.header.Time)
	if xr.Logs == nil {
		xr.Logs = []*types.Log{}
	}
	xr.Bloom = types.CreateBloom(&xr.Receipt)
	p.receipts = append(p.receipts, xr)
	p.logs = append(p.logs, xr.Logs...)
	receipt = xr
	return receipt, nil
}

// errFromSystemTx refuses a system deposit from Regolith (it fails as a
// deposit: included, nonce bumped, gas used).
func errFromSystemTx(cfg *op.Config, t uint64, d *chaintypes.Deposit) error {
	if d.IsSystemTx() && !op.SystemTxAllowed(cfg, t) {
		return errors.New("system transactions are not allowed from Regolith")
	}
	return nil
}

// applyOPTransaction executes a signed transaction on an OP chain: as on L1,
// plus the L1 data and operator fees charged with the gas purchase, their
// vaults credited, the base fee paid to the BaseFeeVault.
func (p *BlockProcessor) applyOPTransaction(tx *types.Transaction, msg *core.Message) (*chaintypes.Receipt, error) {
	if tx.Type() == types.BlobTxType {
		return nil, &TxError{Tx: tx.Hash(), Err: core.ErrTxTypeNotSupported}
	}
	enc, err := tx.MarshalBinary()
	if err != nil {
		return nil, &TxError{Tx: tx.Hash(), Err: err}
	}
	fp := p.feeParams()
	if err := p.errJovianActivation(fp); err != nil {
		return nil, &TxError{Tx: tx.Hash(), Err: err}
	}
	cd := op.NewCostData(enc)
	l1Fee, _ := fp.L1Cost(cd)
	opFee := fp.OperatorFee(tx.Gas())
	upfront := new(big.Int).Add(l1Fee, opFee)
	snap := p.state.Snapshot()
	if upfront.Sign() > 0 {
		up, overflow := uint256.FromBig(upfront)
		if overflow || p.state.GetBalance(msg.From).Lt(up) {
			return nil, &TxError{Tx: tx.Hash(), Err: fmt.Errorf("%w: address %s cannot pay its L1 data and operator fees (%s wei)", core.ErrInsufficientFunds, msg.From.Hex(), upfront)}
		}
		p.state.SubBalance(msg.From, up, tracing.BalanceDecreaseGasBuy)
	}
	receipt, result, err := p.apply(tx, msg)
	if err != nil {
		p.state.RevertToSnapshot(snap)
		return nil, err
	}
	// Fees after execution: vaults, operator fee refund, base fee.
	if l1Fee.Sign() > 0 {
		p.state.AddBalance(op.L1FeeVault, uint256.MustFromBig(l1Fee), tracing.BalanceIncreaseRewardTransactionFee)
	}
	if opFee.Sign() > 0 {
		refund := fp.OperatorFeeRefund(tx.Gas(), result.UsedGas)
		if refund.Sign() > 0 {
			p.state.AddBalance(msg.From, uint256.MustFromBig(refund), tracing.BalanceIncreaseGasReturn)
		}
		if kept := new(big.Int).Sub(opFee, refund); kept.Sign() > 0 {
			p.state.AddBalance(op.OperatorFeeVault, uint256.MustFromBig(kept), tracing.BalanceIncreaseRewardTransactionFee)
		}
	}
	if bf := p.header.BaseFee; bf != nil && bf.Sign() > 0 && !p.evm.Config.NoBaseFee {
		fee := new(big.Int).Mul(bf, new(big.Int).SetUint64(result.UsedGas))
		p.state.AddBalance(op.BaseFeeVault, uint256.MustFromBig(fee), tracing.BalanceIncreaseRewardTransactionFee)
	}
	p.state.Finalise(p.rules)
	rf := fp.ReceiptFields(cd)
	receipt.OP = &chaintypes.OPReceipt{
		L1GasPrice: rf.L1GasPrice, L1GasUsed: rf.L1GasUsed, L1Fee: rf.L1Fee,
		L1BaseFeeScalar: rf.L1BaseFeeScalar, L1BlobBaseFee: rf.L1BlobBaseFee, L1BlobBaseFeeScalar: rf.L1BlobBaseFeeScalar,
		OperatorFeeScalar: rf.OperatorFeeScalar, OperatorFeeConstant: rf.OperatorFeeConstant,
		DAFootprintGasScalar: rf.DAFootprintGasScalar,
	}
	if fp.Formula == op.FormulaBedrock && fp.Scalar != nil {
		receipt.OP.L1FeeScalar = new(big.Int).Set(fp.Scalar)
	}
	if rf.BlobGasUsed != nil {
		receipt.BlobGasUsed = *rf.BlobGasUsed
		p.blobGas += *rf.BlobGasUsed
	}
	return receipt, nil
}

// verifyOPBody checks the OP block layout: the L1-info deposit first
// (from the depositor account to the L1Block predeploy), then the block's
// other deposits, then the sequenced transactions; no deposit after a
// sequenced transaction.
func verifyOPBody(txs chaintypes.Txs) error {
	if len(txs) == 0 {
		return errors.New("no L1-info deposit: an OP block starts with one")
	}
	first, ok := txs[0].(*chaintypes.Deposit)
	if !ok || first.From() != op.L1InfoDepositor || first.To() == nil || *first.To() != op.L1BlockAddr {
		return fmt.Errorf("transaction 0 (%s) is not the L1-info deposit", txs[0].Hash())
	}
	sequenced := false
	for i, tx := range txs {
		switch {
		case !chaintypes.IsDeposit(tx):
			sequenced = true
		case sequenced:
			return fmt.Errorf("deposit %d (%s) after a sequenced transaction: deposits come first", i, tx.Hash())
		}
	}
	return nil
}

// verifyOPHeader checks an OP block's header against its parent: linkage,
// time, gas, the OP base fee, extraData and the blob gas fields (daFootprint
// is the block's DA footprint, checked against blobGasUsed from Jovian).
func (e *Executor) verifyOPHeader(h, parent *types.Header) error {
	cfg := e.op.cfg
	switch {
	case h.Time <= parent.Time:
		return fmt.Errorf("timestamp %d not after parent's %d", h.Time, parent.Time)
	case h.GasUsed > h.GasLimit:
		return fmt.Errorf("gas used %d above gas limit %d", h.GasUsed, h.GasLimit)
	case h.Difficulty == nil || h.Difficulty.Sign() != 0:
		return errors.New("difficulty is not zero")
	case h.Nonce != (types.BlockNonce{}):
		return errors.New("nonce is not zero")
	case h.UncleHash != types.EmptyUncleHash:
		return errors.New("uncles hash is not the empty list's")
	}
	if err := op.VerifyExtraData(cfg, h); err != nil {
		return err
	}
	want, err := op.CalcBaseFee(cfg, parent, h.Time)
	if err != nil {
		return err
	}
	if h.BaseFee == nil || h.BaseFee.Cmp(want) != 0 {
		return fmt.Errorf("base fee %v, want %v", h.BaseFee, want)
	}
	shanghai := e.config.IsShanghai(h.Number, h.Time)
	if shanghai != (h.WithdrawalsHash != nil) {
		return fmt.Errorf("withdrawals root presence %v, Canyon active %v", h.WithdrawalsHash != nil, shanghai)
	}
	cancun := e.config.IsCancun(h.Number, h.Time)
	if cancun != (h.ParentBeaconRoot != nil) {
		return fmt.Errorf("parent beacon root presence %v, Ecotone active %v", h.ParentBeaconRoot != nil, cancun)
	}
	prague := e.config.IsPrague(h.Number, h.Time)
	if prague {
		if h.RequestsHash == nil || *h.RequestsHash != types.EmptyRequestsHash {
			return fmt.Errorf("requests hash %v, want the empty list's %s", h.RequestsHash, types.EmptyRequestsHash.Hex())
		}
	} else if h.RequestsHash != nil {
		return errors.New("requests hash before Isthmus")
	}
	return nil
}

// NextBaseFee is the base fee of a child of parent at time t: EIP-1559 on
// L1, the OP rules (Canyon denominator, Holocene extraData parameters,
// Jovian minimum and DA footprint) on an OP chain. nil before London.
// parent is a verified header: on an OP chain whose parent extraData does
// not decode (never for an imported block) the parent's base fee is kept.
func (e *Executor) NextBaseFee(parent *types.Header, t uint64) *big.Int {
	if !e.config.IsLondon(new(big.Int).Add(parent.Number, common.Big1)) {
		return nil
	}
	if e.op != nil {
		fee, err := op.CalcBaseFee(e.op.cfg, parent, t)
		switch {
		case err == nil:
			return fee
		case parent.BaseFee == nil: // the London block itself
			return new(big.Int).SetUint64(params.InitialBaseFee)
		default:
			return new(big.Int).Set(parent.BaseFee)
		}
	}
	return eip1559.CalcBaseFee(e.config, parent)
}

// MaxBlobGasPerBlock is the blob gas a block at time t may hold, the
// denominator of eth_feeHistory's blobGasUsedRatio: go-ethereum's on L1; 0
// on an OP chain, which carries no blobs (op-geth's chain config has no
// blob schedule, so its ratio is 0 even when Jovian's blobGasUsed holds the
// DA footprint).
func (e *Executor) MaxBlobGasPerBlock(t uint64) uint64 {
	if e.op != nil {
		return 0
	}
	return eip4844.MaxBlobGasPerBlock(e.config, t)
}

// NextExcessBlobGas is the excess blob gas of a child of parent at time t
// (from Cancun; 0 before it, and always 0 on an OP chain, which has no
// blobs).
func (e *Executor) NextExcessBlobGas(parent *types.Header, t uint64) uint64 {
	if e.op != nil || !e.config.IsCancun(parent.Number, parent.Time) {
		return 0
	}
	return eip4844.CalcExcessBlobGas(e.config, parent, t)
}
