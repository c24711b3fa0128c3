package devnet

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/op"
)

// gpoBlock is block 1 of an OP dev chain with the forks through one fork
// active at genesis, opened (its L1-info deposit run) and ready for
// transactions.
type gpoBlock struct {
	t      *testing.T
	g      *chain.Genesis
	h      *types.Header
	proc   *chain.BlockProcessor
	gpo    abi.ABI
	l1b    abi.ABI
	signer types.Signer
	accs   []Account
	nonce  uint64
}

func openGPOBlock(t *testing.T, fork string, l1 op.SyntheticL1) *gpoBlock {
	t.Helper()
	accs, err := Accounts(Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := opGenesis(GenesisConfig{ChainID: 901, Accounts: []common.Address{accs[0].Address, accs[1].Address}, Timestamp: 1_700_000_000}, fork)
	if err != nil {
		t.Fatal(err)
	}
	_, g, w := chaintest.InitStore(t, spec)
	head, view, err := w.OpenHead()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { view.Close() })
	parent := head.Header()
	exec := g.Executor()
	h := &types.Header{ParentHash: head.Hash(), UncleHash: types.EmptyUncleHash, Coinbase: op.SequencerFeeVault, Number: big.NewInt(1),
		GasLimit: parent.GasLimit, Time: parent.Time + 2, Difficulty: new(big.Int)}
	if g.OP.IsEcotone(h.Time) {
		h.ParentBeaconRoot = &common.Hash{}
	}
	pc := chain.ProducerConfig{L1: l1}
	if err := exec.PrepareHeader(h, parent, pc); err != nil {
		t.Fatal(err)
	}
	reader, err := view.StateAt(0)
	if err != nil {
		t.Fatal(err)
	}
	opening, err := exec.OpeningTxs(h, parent, reader, pc)
	if err != nil {
		t.Fatal(err)
	}
	state := chain.NewStateDB(reader)
	proc := exec.NewBlockProcessor(h, parent, common.Hash{}, state, chain.ViewHeaders{Head: head, View: view}, vm.Config{})
	for _, tx := range opening {
		if r, err := proc.ApplyTx(tx); err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("%s: L1-info deposit: %v (receipt %+v)", fork, err, r)
		}
	}
	gpo, err := GasPriceOracleABI()
	if err != nil {
		t.Fatal(err)
	}
	l1b, err := L1BlockABI()
	if err != nil {
		t.Fatal(err)
	}
	return &gpoBlock{t: t, g: g, h: h, proc: proc, gpo: gpo, l1b: l1b, signer: types.LatestSignerForChainID(big.NewInt(901)), accs: accs}
}

// call runs a view call of a predeploy in the block's current state and
// returns its outputs, or the error (a revert).
func (b *gpoBlock) call(to common.Address, a abi.ABI, method string, args ...any) ([]any, error) {
	b.t.Helper()
	in, err := a.Pack(method, args...)
	if err != nil {
		b.t.Fatal(err)
	}
	ret, _, err := b.proc.EVM().Call(b.accs[1].Address, to, in, vm.NewGasBudget(100_000_000, 0), new(uint256.Int))
	if err != nil {
		return nil, err
	}
	out, err := a.Unpack(method, ret)
	if err != nil {
		b.t.Fatalf("%s: %v (%x)", method, err, ret)
	}
	return out, nil
}

func (b *gpoBlock) big(method string, args ...any) *big.Int {
	b.t.Helper()
	out, err := b.call(GasPriceOracleAddr, b.gpo, method, args...)
	if err != nil {
		b.t.Fatalf("GasPriceOracle.%s: %v", method, err)
	}
	switch v := out[0].(type) {
	case *big.Int:
		return v
	case uint32:
		return new(big.Int).SetUint64(uint64(v))
	}
	b.t.Fatalf("GasPriceOracle.%s: %T", method, out[0])
	return nil
}

// randomData is calldata of n bytes of one of several kinds: random,
// zeros, a short repeated pattern, or a mix (FastLZ finds matches in some,
// none in others).
func randomData(r *rand.Rand, n int) []byte {
	d := make([]byte, n)
	switch r.IntN(4) {
	case 0:
		for i := range d {
			d[i] = byte(r.Uint32())
		}
	case 1:
	case 2:
		pat := make([]byte, 1+r.IntN(40))
		for i := range pat {
			pat[i] = byte(r.Uint32())
		}
		for i := range d {
			d[i] = pat[i%len(pat)]
		}
	default:
		for i := range d {
			if r.IntN(3) == 0 {
				d[i] = byte(r.Uint32())
			}
		}
	}
	return d
}

// gpoCost is the chain's L1 cost function (chain/op) applied as the
// GasPriceOracle specifies for an unsigned transaction: 68 non-zero bytes
// more, and a FastLZ size 68 bytes larger.
func gpoCost(p *op.FeeParams, unsigned []byte) (fee, gas *big.Int) {
	cd := op.NewCostData(unsigned)
	cd.Ones += 68
	cd.FastLZSize += 68
	if p.Formula == op.FormulaBedrock && !p.Regolith {
		cd.Ones -= 68 // the pre-Regolith formula adds them itself
	}
	return p.L1Cost(cd)
}

// TestGasPriceOracleMatchesChain: on dev chains with the forks through
// Bedrock (Canyon), Ecotone, Fjord, Isthmus and Jovian active, for random
// transactions (calldata of random kind and size, FastLZ-compressible or
// not) the GasPriceOracle predeploy answers what the chain charges:
//   - getL1Fee and getL1GasUsed of the unsigned transaction are chain/op's
//     formulas (the ones the receipts' l1Fee and l1GasUsed come from) on it
//     plus the 68 signature bytes the spec adds; where the signature is
//     exactly that (the Bedrock and Ecotone formulas when it adds 68
//     non-zero bytes, Fjord's when both sizes are under its floor) they are
//     the receipt's l1Fee and l1GasUsed, and the L1 fee vault's gain;
//   - getOperatorFee(receipt gasUsed) is what the operator fee vault gains;
//   - getL1FeeUpperBound bounds getL1Fee (Fjord on; reverts before);
//   - the fee parameters and fork flags are the block's.
func TestGasPriceOracleMatchesChain(t *testing.T) {
	l1 := op.SyntheticL1{BaseFee: big.NewInt(7_000_000_001), BlobBaseFee: big.NewInt(3_000_003), BaseFeeScalar: 1368, BlobBaseFeeScalar: 810949,
		OperatorFeeScalar: 77, OperatorFeeConstant: 1_000_000_007, DAFootprintGasScalar: 401, BlockTime: 12, BatcherHash: common.HexToHash("0xba7c4e5")}
	r := rand.New(rand.NewPCG(37, 4))
	for _, fork := range []string{"canyon", "ecotone", "fjord", "isthmus", "jovian"} {
		t.Run(fork, func(t *testing.T) {
			b := openGPOBlock(t, fork, l1)
			cfg, tm := b.g.OP, b.h.Time
			state := b.proc.State()
			read := func(slot common.Hash) common.Hash { return state.GetState(op.L1BlockAddr, slot) }
			params := op.ReadFeeParams(cfg, tm, read)

			// Fork flags, constants and the fee parameters.
			for name, want := range map[string]bool{"isEcotone": cfg.IsEcotone(tm), "isFjord": cfg.IsFjord(tm), "isIsthmus": cfg.IsIsthmus(tm), "isJovian": cfg.IsJovian(tm)} {
				out, err := b.call(GasPriceOracleAddr, b.gpo, name)
				if err != nil || out[0].(bool) != want {
					t.Errorf("%s = %v (%v), want %v", name, out, err, want)
				}
			}
			for name, want := range map[string]*big.Int{"decimals": big.NewInt(6), "DECIMALS": big.NewInt(6), "gasPrice": b.h.BaseFee, "baseFee": b.h.BaseFee,
				"l1BaseFee": l1.BaseFee} {
				if got := b.big(name); got.Cmp(want) != 0 {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			if cfg.IsEcotone(tm) {
				for name, want := range map[string]*big.Int{"blobBaseFee": l1.BlobBaseFee, "baseFeeScalar": big.NewInt(int64(l1.BaseFeeScalar)),
					"blobBaseFeeScalar": big.NewInt(int64(l1.BlobBaseFeeScalar))} {
					if got := b.big(name); got.Cmp(want) != 0 {
						t.Errorf("%s = %v, want %v", name, got, want)
					}
				}
				for _, name := range []string{"overhead", "scalar"} {
					if _, err := b.call(GasPriceOracleAddr, b.gpo, name); err == nil {
						t.Errorf("%s answered from Ecotone, want a revert", name)
					}
				}
			} else if b.big("overhead").Cmp(params.Overhead) != 0 || b.big("scalar").Cmp(params.Scalar) != 0 {
				t.Errorf("overhead, scalar = %v, %v; want %v, %v", b.big("overhead"), b.big("scalar"), params.Overhead, params.Scalar)
			}
			if _, err := b.call(GasPriceOracleAddr, b.gpo, "getL1FeeUpperBound", big.NewInt(100)); (err == nil) != cfg.IsFjord(tm) {
				t.Errorf("getL1FeeUpperBound: error %v with Fjord %v", err, cfg.IsFjord(tm))
			}

			exact := 0
			for i := 0; i < 40; i++ {
				n := r.IntN(1200)
				if i%4 == 0 {
					n = r.IntN(40) // small: under Fjord's floor
				}
				data := randomData(r, n)
				to := common.BigToAddress(big.NewInt(int64(0x1000 + i)))
				tx := types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(901), Nonce: b.nonce, GasTipCap: big.NewInt(1_000_000), GasFeeCap: big.NewInt(50_000_000_000),
					Gas: 21_000 + 40*uint64(n) + 5_000, To: &to, Value: big.NewInt(int64(i)), Data: data})
				signed, err := types.SignTx(tx, b.signer, b.accs[0].Key)
				if err != nil {
					t.Fatal(err)
				}
				// The unsigned EIP-2718 encoding, as viem and ethers
				// serialize a transaction for getL1Fee: the signature
				// fields left out.
				unsignedEnc, err := rlp.EncodeToBytes([]any{tx.ChainId(), tx.Nonce(), tx.GasTipCap(), tx.GasFeeCap(), tx.Gas(), tx.To(), tx.Value(), tx.Data(), tx.AccessList()})
				if err != nil {
					t.Fatal(err)
				}
				unsignedEnc = append([]byte{types.DynamicFeeTxType}, unsignedEnc...)
				signedEnc, err := signed.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				l1Vault, opVault := state.GetBalance(op.L1FeeVault).ToBig(), state.GetBalance(op.OperatorFeeVault).ToBig()
				rc, err := b.proc.ApplyTransaction(signed)
				if err != nil {
					t.Fatalf("tx %d: %v", i, err)
				}
				b.nonce++
				if rc.Status != types.ReceiptStatusSuccessful || rc.OP == nil || rc.OP.L1Fee == nil {
					t.Fatalf("tx %d: receipt %+v", i, rc)
				}
				l1Gain := new(big.Int).Sub(state.GetBalance(op.L1FeeVault).ToBig(), l1Vault)
				opGain := new(big.Int).Sub(state.GetBalance(op.OperatorFeeVault).ToBig(), opVault)
				if l1Gain.Cmp(rc.OP.L1Fee) != 0 {
					t.Fatalf("tx %d: the L1 fee vault gained %v, the receipt says %v", i, l1Gain, rc.OP.L1Fee)
				}
				if wantFee, _ := params.L1Cost(op.NewCostData(signedEnc)); wantFee.Cmp(rc.OP.L1Fee) != 0 {
					t.Fatalf("tx %d: receipt l1Fee %v, chain/op's formula %v", i, rc.OP.L1Fee, wantFee)
				}

				fee, gas := b.big("getL1Fee", unsignedEnc), b.big("getL1GasUsed", unsignedEnc)
				wantFee, wantGas := gpoCost(params, unsignedEnc)
				if fee.Cmp(wantFee) != 0 || gas.Cmp(wantGas) != 0 {
					t.Fatalf("tx %d (%d bytes): getL1Fee %v, getL1GasUsed %v; chain/op's formula on the unsigned tx + 68 bytes %v, %v", i, n, fee, gas, wantFee, wantGas)
				}
				// Where the signature is exactly what the oracle assumes,
				// its answer is the receipt's.
				cu, cs := op.NewCostData(unsignedEnc), op.NewCostData(signedEnc)
				same := cu.Zeroes == cs.Zeroes && cu.Ones+68 == cs.Ones
				if params.Formula == op.FormulaFjord {
					cu.FastLZSize += 68
					same = cu.EstimatedSizeScaled().Cmp(cs.EstimatedSizeScaled()) == 0
				}
				if same {
					exact++
					if fee.Cmp(rc.OP.L1Fee) != 0 || gas.Cmp(rc.OP.L1GasUsed) != 0 {
						t.Fatalf("tx %d: getL1Fee %v, getL1GasUsed %v; receipt %v, %v", i, fee, gas, rc.OP.L1Fee, rc.OP.L1GasUsed)
					}
				}
				if cfg.IsFjord(tm) {
					// (A bound for 99.99% of real transactions, the spec says;
					// not for random bytes, which FastLZ expands by 1/32.)
					ub := b.big("getL1FeeUpperBound", big.NewInt(int64(len(unsignedEnc))))
					cd := op.CostData{FastLZSize: uint64(len(unsignedEnc)+68) + uint64(len(unsignedEnc)+68)/255 + 16}
					if want, _ := params.L1Cost(cd); ub.Cmp(want) != 0 {
						t.Errorf("tx %d: getL1FeeUpperBound %v, want %v", i, ub, want)
					}
				}
				ofee := b.big("getOperatorFee", new(big.Int).SetUint64(rc.GasUsed))
				if ofee.Cmp(opGain) != 0 || ofee.Cmp(params.OperatorFee(rc.GasUsed)) != 0 {
					t.Fatalf("tx %d: getOperatorFee(%d) %v; the operator fee vault gained %v, chain/op charges %v", i, rc.GasUsed, ofee, opGain, params.OperatorFee(rc.GasUsed))
				}
				if cfg.IsIsthmus(tm) && ofee.Sign() == 0 {
					t.Fatalf("tx %d: no operator fee from Isthmus", i)
				}
			}
			if exact == 0 {
				t.Errorf("no transaction whose receipt the oracle's answer equals exactly")
			}
			t.Logf("%s: %d of 40 transactions with the oracle's getL1Fee equal to the receipt's l1Fee", fork, exact)

			// The L1Block getters SDKs read.
			origin := op.ReadOrigin(read)
			want := map[string]any{"number": origin.Number, "timestamp": origin.Time, "basefee": l1.BaseFee, "hash": [32]byte(origin.Hash),
				"sequenceNumber": origin.SequenceNumber, "batcherHash": [32]byte(l1.BatcherHash), "isCustomGasToken": false}
			if cfg.IsEcotone(tm) {
				// (The string getters copy with MCOPY, Cancun's: the
				// contracts are compiled for Prague.)
				want["version"] = "1.7.0"
				want["blobBaseFee"], want["baseFeeScalar"], want["blobBaseFeeScalar"] = l1.BlobBaseFee, l1.BaseFeeScalar, l1.BlobBaseFeeScalar
			} else {
				want["l1FeeOverhead"], want["l1FeeScalar"] = big.NewInt(0), big.NewInt(1_000_000)
			}
			if cfg.IsIsthmus(tm) {
				want["operatorFeeScalar"], want["operatorFeeConstant"] = l1.OperatorFeeScalar, l1.OperatorFeeConstant
			}
			if cfg.IsJovian(tm) {
				want["daFootprintGasScalar"] = l1.DAFootprintGasScalar
			}
			for name, w := range want {
				out, err := b.call(op.L1BlockAddr, b.l1b, name)
				if err != nil {
					t.Errorf("L1Block.%s: %v", name, err)
					continue
				}
				eq := false
				if wb, ok := w.(*big.Int); ok {
					gb, ok := out[0].(*big.Int)
					eq = ok && gb.Cmp(wb) == 0
				} else {
					eq = out[0] == w
				}
				if !eq {
					t.Errorf("L1Block.%s = %v, want %v", name, out[0], w)
				}
			}
		})
	}
}

// TestGasPriceOracleFastLZ: the oracle's FastLZ size (seen through Fjord's
// getL1GasUsed below and above the floor) is chain/op's FastLZSize on
// inputs FastLZ treats differently: empty, short, long runs, matches
// further apart than its 8191-byte window, random bytes.
func TestGasPriceOracleFastLZ(t *testing.T) {
	b := openGPOBlock(t, "jovian", op.DefaultSyntheticL1())
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		return d
	}
	far := append(rnd(300), make([]byte, 9300)...)
	copy(far[9300:], far[:300])
	inputs := [][]byte{nil, {1}, rnd(15), rnd(16), rnd(17), make([]byte, 16), make([]byte, 300), bytes.Repeat([]byte{1, 2, 3}, 1000),
		rnd(5000), far, append(rnd(100), bytes.Repeat(rnd(7), 200)...)}
	for i := 0; i < 20; i++ {
		inputs = append(inputs, randomData(r, r.IntN(3000)))
	}
	for i, in := range inputs {
		// getL1GasUsed = max(100e6, intercept + coef*(size+68)) * 16 / 1e6
		// is strictly increasing in size above the floor; compare it.
		got := b.big("getL1GasUsed", in)
		cd := op.CostData{FastLZSize: op.FastLZSize(in) + 68}
		want := new(big.Int).Mul(cd.EstimatedSizeScaled(), big.NewInt(16))
		want.Quo(want, big.NewInt(1_000_000))
		if got.Cmp(want) != 0 {
			t.Errorf("input %d (%d bytes, FastLZ %d): getL1GasUsed %v, want %v", i, len(in), op.FastLZSize(in), got, want)
		}
	}
}

// TestWETH9: wrapping by deposit() and by a plain transfer, transfer,
// approve and transferFrom (an infinite allowance stays), withdraw back
// to ether, totalSupply the contract's balance, and the ERC-20 metadata.
func TestWETH9(t *testing.T) {
	b := openGPOBlock(t, "jovian", op.DefaultSyntheticL1())
	weth, err := WETH9ABI()
	if err != nil {
		t.Fatal(err)
	}
	state := b.proc.State()
	nonces := map[int]uint64{}
	send := func(from int, value int64, method string, args ...any) *types.Receipt {
		t.Helper()
		var data []byte
		if method != "" {
			if data, err = weth.Pack(method, args...); err != nil {
				t.Fatal(err)
			}
		}
		to := WETH9Addr
		tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(901), Nonce: nonces[from], GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(50_000_000_000),
			Gas: 200_000, To: &to, Value: big.NewInt(value), Data: data}), b.signer, b.accs[from].Key)
		if err != nil {
			t.Fatal(err)
		}
		nonces[from]++
		rc, err := b.proc.ApplyTransaction(tx)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("%s from %d reverted", method, from)
		}
		return &rc.Receipt
	}
	get := func(method string, args ...any) any {
		t.Helper()
		out, err := b.call(WETH9Addr, weth, method, args...)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return out[0]
	}
	a0, a1 := b.accs[0].Address, b.accs[1].Address
	if rc := send(0, 1000, "deposit"); len(rc.Logs) != 1 || rc.Logs[0].Topics[0] != weth.Events["Deposit"].ID {
		t.Fatalf("deposit logs %+v", rc.Logs)
	}
	send(0, 500, "") // receive()
	send(0, 0, "transfer", a1, big.NewInt(300))
	send(0, 0, "approve", a1, abi.MaxUint256)
	send(1, 0, "transferFrom", a0, a1, big.NewInt(200))
	send(1, 0, "withdraw", big.NewInt(450))
	for _, c := range []struct {
		got  any
		want any
	}{
		{get("balanceOf", a0), big.NewInt(1000)},
		{get("balanceOf", a1), big.NewInt(50)},
		{get("allowance", a0, a1), abi.MaxUint256},
		{get("totalSupply"), big.NewInt(1050)},
		{state.GetBalance(WETH9Addr).ToBig(), big.NewInt(1050)},
		{get("name"), "Wrapped Ether"},
		{get("symbol"), "WETH"},
		{get("decimals"), uint8(18)},
	} {
		if gb, ok := c.got.(*big.Int); ok {
			if gb.Cmp(c.want.(*big.Int)) != 0 {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		} else if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
}

// TestBridgeWithdrawal: an ether withdrawal through the L2StandardBridge
// (bridgeETHTo, withdraw with the legacy ether token, a plain transfer)
// goes through the L2CrossDomainMessenger to the L2ToL1MessagePasser: the
// bridge's WithdrawalInitiated and ETHBridgeInitiated, the messenger's
// SentMessage and SentMessageExtension1, and the passer's MessagePassed
// from the messenger to the L1 messenger, carrying the value and the
// relayMessage(finalizeBridgeETH) calldata, with the withdrawal recorded
// in sentMessages. A token withdrawal reverts.
func TestBridgeWithdrawal(t *testing.T) {
	b := openGPOBlock(t, "jovian", op.DefaultSyntheticL1())
	bridge, err := BridgeABI()
	if err != nil {
		t.Fatal(err)
	}
	messenger, err := MessengerABI()
	if err != nil {
		t.Fatal(err)
	}
	passer, err := MessagePasserABI()
	if err != nil {
		t.Fatal(err)
	}
	state := b.proc.State()
	nonce := uint64(0)
	send := func(value int64, data []byte) *types.Receipt {
		t.Helper()
		to := BridgeAddr
		tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(901), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(50_000_000_000),
			Gas: 500_000, To: &to, Value: big.NewInt(value), Data: data}), b.signer, b.accs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		nonce++
		rc, err := b.proc.ApplyTransaction(tx)
		if err != nil {
			t.Fatal(err)
		}
		return &rc.Receipt
	}
	pack := func(a abi.ABI, method string, args ...any) []byte {
		t.Helper()
		d, err := a.Pack(method, args...)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	from, to := b.accs[0].Address, common.HexToAddress("0x1234")
	otherMessenger, otherBridge := common.HexToAddress("0xc0de"), common.HexToAddress("0xb41d")
	legacyETH := common.HexToAddress("0xDeadDeAddeAddEAddeadDEaDDEAdDeaDDeAD0000")
	cases := []struct {
		value    int64
		data     []byte
		to       common.Address
		minGas   uint32
		extra    []byte
		contains string
	}{
		{1000, pack(bridge, "bridgeETHTo", to, uint32(150_000), []byte("hi")), to, 150_000, []byte("hi"), "bridgeETHTo"},
		{2000, pack(bridge, "withdraw", legacyETH, big.NewInt(2000), uint32(90_000), []byte{}), from, 90_000, []byte{}, "withdraw"},
		{3000, nil, from, 200_000, []byte{}, "receive"},
	}
	passed := big.NewInt(0)
	for i, c := range cases {
		rc := send(c.value, c.data)
		if rc.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("%s reverted", c.contains)
		}
		passed.Add(passed, big.NewInt(c.value))
		var names []string
		var mp map[string]any
		for _, l := range rc.Logs {
			for _, src := range []struct {
				addr common.Address
				a    abi.ABI
			}{{BridgeAddr, bridge}, {MessengerAddr, messenger}, {op.L2ToL1MessagePasser, passer}} {
				if l.Address != src.addr {
					continue
				}
				ev, err := src.a.EventByID(l.Topics[0])
				if err != nil {
					t.Fatalf("%s: unknown log of %s", c.contains, l.Address)
				}
				names = append(names, ev.Name)
				if ev.Name == "MessagePassed" {
					mp = map[string]any{}
					if err := src.a.UnpackIntoMap(mp, ev.Name, l.Data); err != nil {
						t.Fatal(err)
					}
					mp["sender"] = common.BytesToAddress(l.Topics[2][:])
					mp["target"] = common.BytesToAddress(l.Topics[3][:])
					mp["nonce"] = l.Topics[1].Big()
				}
			}
		}
		if want := []string{"WithdrawalInitiated", "ETHBridgeInitiated", "MessagePassed", "SentMessage", "SentMessageExtension1"}; len(names) != len(want) || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] || names[3] != want[3] || names[4] != want[4] {
			t.Fatalf("%s: events %v, want %v", c.contains, names, want)
		}
		finalize := pack(abiOf(t, "finalizeBridgeETH(address,address,uint256,bytes)", "address", "address", "uint256", "bytes"), "f", from, c.to, big.NewInt(c.value), c.extra)
		msgNonce := new(big.Int).Or(new(big.Int).Lsh(big.NewInt(1), 240), big.NewInt(int64(i)))
		relay := pack(abiOf(t, "relayMessage(uint256,address,address,uint256,uint256,bytes)", "uint256", "address", "address", "uint256", "uint256", "bytes"), "f",
			msgNonce, BridgeAddr, otherBridge, big.NewInt(c.value), big.NewInt(int64(c.minGas)), finalize)
		baseGas := 200_000 + 16*uint64(len(finalize)) + uint64(c.minGas)*64/63 + 40_000 + 40_000 + 5_000
		if mp["sender"] != MessengerAddr || mp["target"] != otherMessenger || mp["value"].(*big.Int).Int64() != c.value ||
			mp["gasLimit"].(*big.Int).Uint64() != baseGas || !bytes.Equal(mp["data"].([]byte), relay) {
			t.Fatalf("%s: MessagePassed %v; want data %x, gas limit %d", c.contains, mp, relay, baseGas)
		}
		out, err := b.call(op.L2ToL1MessagePasser, passer, "sentMessages", mp["withdrawalHash"])
		if err != nil || out[0] != true {
			t.Fatalf("%s: withdrawal not recorded (%v, %v)", c.contains, out, err)
		}
	}
	if got := state.GetBalance(op.L2ToL1MessagePasser).ToBig(); got.Cmp(passed) != 0 {
		t.Errorf("message passer holds %v, want %v", got, passed)
	}
	if rc := send(5, pack(bridge, "withdraw", common.HexToAddress("0x70c3e2"), big.NewInt(5), uint32(1), []byte{})); rc.Status != types.ReceiptStatusFailed {
		t.Errorf("a token withdrawal succeeded")
	}
}

// abiOf is a one-function ABI named "f" with the given input types, whose
// selector is that of signature.
func abiOf(t *testing.T, signature string, types ...string) abi.ABI {
	t.Helper()
	var args abi.Arguments
	for _, ty := range types {
		typ, err := abi.NewType(ty, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, abi.Argument{Type: typ})
	}
	m := abi.NewMethod("f", "f", abi.Function, "nonpayable", false, false, args, nil)
	m.ID = crypto.Keccak256([]byte(signature))[:4]
	return abi.ABI{Methods: map[string]abi.Method{"f": m}}
}
