package main

import (
	"crypto/ecdsa"
	"math/big"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/chain/op"
)

// opReceipt is the part of an OP receipt the process tests check.
type opReceipt struct {
	BlockHash         common.Hash     `json:"blockHash"`
	BlockNumber       hexutil.Uint64  `json:"blockNumber"`
	TransactionIndex  hexutil.Uint64  `json:"transactionIndex"`
	GasUsed           hexutil.Uint64  `json:"gasUsed"`
	Status            hexutil.Uint64  `json:"status"`
	Type              hexutil.Uint64  `json:"type"`
	L1Fee             *hexutil.Big    `json:"l1Fee"`
	L1GasUsed         *hexutil.Big    `json:"l1GasUsed"`
	L1GasPrice        *hexutil.Big    `json:"l1GasPrice"`
	L1BaseFeeScalar   *hexutil.Uint64 `json:"l1BaseFeeScalar"`
	OperatorFeeScalar *hexutil.Uint64 `json:"operatorFeeScalar"`
	OperatorFeeConst  *hexutil.Uint64 `json:"operatorFeeConstant"`
	DepositNonce      *hexutil.Uint64 `json:"depositNonce"`
	ContractAddress   *common.Address `json:"contractAddress"`
}

// waitReceipt polls url until hash has a receipt (pre-confirmed or sealed).
func waitReceipt(t *testing.T, url string, hash common.Hash, p *process) opReceipt {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r *opReceipt
		if err := rpcCall(url, "eth_getTransactionReceipt", &r, hash); err == nil && r != nil {
			return *r
		}
		if time.Now().After(deadline) {
			t.Fatalf("no receipt for %s at %s:\n%s", hash.Hex(), url, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processTestBin skips a process test under -short and builds tipnode.
func processTestBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	return buildTipnode(t)
}

// processNode gives a process test's node a data directory, a free
// address and its URL.
func processNode(t *testing.T) (dir, addr, url string) {
	t.Helper()
	dir, addr = t.TempDir(), freePort(t)
	return dir, addr, "http://" + addr
}

// sendSigned signs data with key on chainID and sends it to url
// (eth_sendRawTransaction): the transaction and the node's answer, its hash
// or its refusal.
func sendSigned(t *testing.T, url string, key *ecdsa.PrivateKey, chainID *big.Int, data types.TxData) (*types.Transaction, common.Hash, error) {
	t.Helper()
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), data)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	var hash common.Hash
	err = rpcCall(url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw))
	return tx, hash, err
}

// startDevOP starts `tipnode dev --op` on dir and addr with 50 ms
// pre-confirmations, blockTime and warnings logged, args added, and waits
// until it answers.
func startDevOP(t *testing.T, bin, dir, addr, blockTime string, args ...string) *process {
	t.Helper()
	p := startProcess(t, bin, append([]string{"dev", "--op", "--datadir", dir, "--http.addr", addr,
		"--preconf.interval", "50ms", "--block.time", blockTime, "--log.level", "warn"}, args...)...)
	waitRPC(t, "http://"+addr, p)
	return p
}

// TestOPSequencerE2E runs real processes: `tipnode dev --op` (an OP Stack
// dev chain with operator fees on) and a second data directory initialised
// from it following it with `run --follow.rpc`, which imports every sealed
// block under the full OP verification (L1-info deposit first, deposits
// before sequenced transactions, OP header rules, L1 and operator fees in
// the receipts root and the vaults' balances). Transfers, a contract
// deployment and writes, a withdrawal (the message passer's storage root is
// the withdrawals root) and a user deposit (tipnode_sendDeposit) go in;
// every non-deposit receipt carries a non-zero l1Fee; the pool refuses a
// transaction that covers gas and value but not its L1 fee; block hashes
// and the four fee vaults' balances are equal on both nodes at every
// height. Then the sequencer is killed with SIGKILL holding a pre-confirmed
// deposit and transaction: after the restart both receipts are there again
// as promised, and the follower imports their block. Finally the
// follower's data directory runs as `run --sequencer` with the L1 origin
// from flags.
func TestOPSequencerE2E(t *testing.T) {
	bin := processTestBin(t)
	upDir, upAddr, upURL := processNode(t)
	downDir, downAddr, downURL := processNode(t)
	startUpstream := func(blockTime string) *process {
		return startDevOP(t, bin, upDir, upAddr, blockTime, "--op.operatorfee.scalar", "7", "--op.operatorfee.constant", "1000",
			"--op.l1.basefee", "20000000000", "--log.format", "json")
	}
	up := startUpstream("200ms")

	accs, err := devnet.Accounts(devnet.Mnemonic, 2)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	nonces := map[common.Address]uint64{}
	sendTx := func(key *ecdsa.PrivateKey, to *common.Address, value *big.Int, gas uint64, data []byte) (common.Hash, error) {
		from := crypto.PubkeyToAddress(key.PublicKey)
		_, hash, err := sendSigned(t, upURL, key, chainID, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonces[from],
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: gas, To: to, Value: value, Data: data})
		if err != nil {
			return common.Hash{}, err
		}
		nonces[from]++
		return hash, nil
	}
	mustSend := func(key *ecdsa.PrivateKey, to *common.Address, value *big.Int, gas uint64, data []byte) common.Hash {
		t.Helper()
		h, err := sendTx(key, to, value, gas, data)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// checkFees: a sequenced transaction pays a non-zero L1 fee, shown in
	// its receipt.
	checkFees := func(what string, r opReceipt) {
		t.Helper()
		if r.Status != 1 || r.L1Fee == nil || r.L1Fee.ToInt().Sign() <= 0 {
			t.Fatalf("%s: receipt status %d, l1Fee %v: want success with a non-zero L1 fee", what, r.Status, r.L1Fee)
		}
	}

	// Transfers.
	var hashes []common.Hash
	for i := range 10 {
		to := common.Address{0xbe, byte(i)}
		hashes = append(hashes, mustSend(accs[0].Key, &to, big.NewInt(int64(i)+1), 21_000, nil))
	}
	for i, h := range hashes {
		checkFees("transfer "+string(rune('0'+i)), waitReceipt(t, upURL, h, up))
	}
	// A contract that stores its calldata's first word in slot 0, deployed
	// and written to.
	runtime := common.FromHex("6000355f5500")                              // PUSH1 0 CALLDATALOAD PUSH0 SSTORE STOP
	initCode := append(common.FromHex("6006600a5f3960065ff3"), runtime...) // CODECOPY 6 bytes from 10, RETURN them
	deploy := waitReceipt(t, upURL, mustSend(accs[1].Key, nil, nil, 200_000, initCode), up)
	checkFees("deployment", deploy)
	if deploy.ContractAddress == nil {
		t.Fatal("deployment receipt has no contract address")
	}
	for i := range 5 {
		checkFees("contract write", waitReceipt(t, upURL, mustSend(accs[1].Key, deploy.ContractAddress, nil, 60_000, common.LeftPadBytes([]byte{byte(i + 1)}, 32)), up))
	}
	var slot common.Hash
	if err := rpcCall(upURL, "eth_getStorageAt", &slot, deploy.ContractAddress, common.Hash{}, "pending"); err != nil || slot != common.BigToHash(big.NewInt(5)) {
		t.Fatalf("contract slot 0 = %s (%v), want 5", slot, err)
	}
	// A withdrawal: the message passer's storage, hence the withdrawals
	// root, changes.
	passer := op.L2ToL1MessagePasser
	checkFees("withdrawal", waitReceipt(t, upURL, mustSend(accs[0].Key, &passer, big.NewInt(12345), 200_000, nil), up))
	// A user deposit minting 1 ether to a fresh address.
	minted := common.HexToAddress("0xd0d0000000000000000000000000000000000001")
	var depHash common.Hash
	if err := rpcCall(upURL, "tipnode_sendDeposit", &depHash, map[string]any{"from": minted, "to": minted, "mint": hexutil.EncodeBig(big.NewInt(params.Ether)), "gas": "0x186a0"}); err != nil {
		t.Fatal(err)
	}
	dr := waitReceipt(t, upURL, depHash, up)
	if dr.Status != 1 || dr.Type != 0x7e || dr.DepositNonce == nil || dr.L1Fee != nil {
		t.Fatalf("deposit receipt %+v", dr)
	}
	// The pool refuses a transaction covering gas * price + value but not
	// its L1 fee: fund a fresh key with exactly that.
	poorKey, _ := crypto.GenerateKey()
	poor := crypto.PubkeyToAddress(poorKey.PublicKey)
	exact := new(big.Int).Mul(big.NewInt(21_000), big.NewInt(10*params.GWei))
	waitReceipt(t, upURL, mustSend(accs[0].Key, &poor, exact, 21_000, nil), up)
	if _, err := sendTx(poorKey, &minted, nil, 21_000, nil); err == nil || !strings.Contains(err.Error(), "L1") {
		t.Fatalf("a transaction that cannot pay its L1 fee: %v, want refused", err)
	}

	// Every sealed block imports on a follower with the same hash, and the
	// vaults agree at every height.
	// sealedUpTo waits until every transaction sent is sealed and the
	// chain is at least at block min; it returns the head.
	sealedUpTo := func(min uint64, p *process) uint64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n hexutil.Uint64
			if rpcCall(upURL, "eth_getTransactionCount", &n, accs[1].Address, "latest") == nil && uint64(n) == nonces[accs[1].Address] {
				var m hexutil.Uint64
				if rpcCall(upURL, "eth_getTransactionCount", &m, accs[0].Address, "latest") == nil && uint64(m) == nonces[accs[0].Address] {
					if head := blockNumber(t, upURL); head >= min {
						return head
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sequencer did not seal the transactions:\n%s", p.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	target := sealedUpTo(12, up)
	if out, err := exec.Command(bin, "init", "--datadir", downDir, "--genesis-from", upURL, "--log.level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("init --genesis-from: %v\n%s", err, out)
	}
	down := startProcess(t, bin, "run", "--datadir", downDir, "--http.addr", downAddr,
		"--follow.rpc", upURL, "--follow.poll", "50ms", "--log.level", "info", "--log.format", "json")
	waitRPC(t, downURL, down)
	vaults := []common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault}
	checked := uint64(0)
	checkSame := func(what string, target uint64) {
		t.Helper()
		waitFollowed(t, downURL, target, blockHash(t, upURL, target), down)
		for n := checked; n <= target; n++ {
			if a, b := blockHash(t, upURL, n), blockHash(t, downURL, n); a != b {
				t.Fatalf("%s: block %d is %s on the sequencer, %s on the follower", what, n, a.Hex(), b.Hex())
			}
			for _, v := range vaults {
				var a, b hexutil.Big
				if err := rpcCall(upURL, "eth_getBalance", &a, v, hexutil.Uint64(n)); err != nil {
					t.Fatal(err)
				}
				if err := rpcCall(downURL, "eth_getBalance", &b, v, hexutil.Uint64(n)); err != nil {
					t.Fatal(err)
				}
				if a.ToInt().Cmp(b.ToInt()) != 0 {
					t.Fatalf("%s: vault %s holds %s on the sequencer, %s on the follower at block %d", what, v.Hex(), a.ToInt(), b.ToInt(), n)
				}
			}
		}
		checked = target
		for _, v := range vaults {
			var a hexutil.Big
			if err := rpcCall(downURL, "eth_getBalance", &a, v, hexutil.Uint64(target)); err != nil || a.ToInt().Sign() <= 0 {
				t.Fatalf("%s: vault %s is empty at block %d (%v)", what, v.Hex(), target, err)
			}
		}
	}
	checkSame("catch-up", target)
	var minted1 hexutil.Big
	if err := rpcCall(downURL, "eth_getBalance", &minted1, minted, "latest"); err != nil || minted1.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("the follower shows %s minted (%v), want 1 ether", minted1.ToInt(), err)
	}

	// kill -9 with a pre-confirmed deposit and transaction in the open
	// block (a long block time keeps them unsealed): both come back.
	up.kill()
	up = startUpstream("30s")
	var dep2 common.Hash
	if err := rpcCall(upURL, "tipnode_sendDeposit", &dep2, map[string]any{"from": minted, "to": accs[0].Address, "mint": "0x2a", "value": "0x1"}); err != nil {
		t.Fatal(err)
	}
	to := common.Address{0xcc}
	tx2 := mustSend(accs[0].Key, &to, big.NewInt(3), 21_000, nil)
	promised := map[common.Hash]opReceipt{dep2: waitReceipt(t, upURL, dep2, up), tx2: waitReceipt(t, upURL, tx2, up)}
	checkFees("transaction before the crash", promised[tx2])
	if s := blockNumber(t, upURL); uint64(promised[tx2].BlockNumber) <= s {
		t.Fatalf("the transaction was sealed (block %d, head %d): the crash would not test the journal", promised[tx2].BlockNumber, s)
	}
	up.kill()
	up = startUpstream("200ms")
	for h, want := range promised {
		got := waitReceipt(t, upURL, h, up)
		if got.BlockNumber != want.BlockNumber || got.TransactionIndex != want.TransactionIndex || got.GasUsed != want.GasUsed ||
			got.Status != want.Status || (got.L1Fee == nil) != (want.L1Fee == nil) || (got.L1Fee != nil && got.L1Fee.ToInt().Cmp(want.L1Fee.ToInt()) != 0) {
			t.Fatalf("after kill -9, %s: receipt %+v, the client was promised %+v", h.Hex(), got, want)
		}
	}
	if promised[dep2].TransactionIndex != 1 {
		t.Fatalf("the deposit is at index %d, want 1 (after the L1-info deposit)", promised[dep2].TransactionIndex)
	}
	target = sealedUpTo(target+5, up)
	checkSame("after the sequencer's kill -9", target)
	t.Logf("the follower holds the OP sequencer's blocks 0..%d with equal hashes and vault balances", target)

	// The follower's data directory, an initialised OP chain, runs as a
	// sequencer (`run --sequencer`) with the L1 origin's values from flags.
	down.kill()
	up.kill()
	seq := startProcess(t, bin, "run", "--datadir", downDir, "--http.addr", downAddr, "--sequencer",
		"--preconf.interval", "50ms", "--block.time", "200ms", "--op.l1.basefee", "3000000000", "--log.level", "warn", "--log.format", "json")
	waitRPC(t, downURL, seq)
	var nonce hexutil.Uint64
	if err := rpcCall(downURL, "eth_getTransactionCount", &nonce, accs[1].Address, "pending"); err != nil {
		t.Fatal(err)
	}
	_, sh, err := sendSigned(t, downURL, accs[1].Key, chainID, &types.DynamicFeeTx{ChainID: chainID, Nonce: uint64(nonce),
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(10 * params.GWei), Gas: 21_000, To: &minted, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	var sr *opReceipt
	deadline := time.Now().Add(30 * time.Second)
	for sr == nil || sr.BlockHash == (common.Hash{}) {
		if time.Now().After(deadline) {
			t.Fatalf("run --sequencer did not seal %s:\n%s", sh.Hex(), seq.out.String())
		}
		time.Sleep(20 * time.Millisecond)
		if err := rpcCall(downURL, "eth_getTransactionReceipt", &sr, sh); err != nil {
			t.Fatal(err)
		}
	}
	checkFees("run --sequencer", *sr)
	if sr.L1GasPrice == nil || sr.L1GasPrice.ToInt().Cmp(big.NewInt(3_000_000_000)) != 0 || sr.TransactionIndex != 1 {
		t.Fatalf("run --sequencer: l1GasPrice %v (want the flag's 3000000000), index %d (want 1, after the L1-info deposit)", sr.L1GasPrice, sr.TransactionIndex)
	}
}

// TestOPSequencerFlags: the --op.* flags become the sequencer's synthetic
// L1 origin (validated); the coinbase defaults to the SequencerFeeVault on
// an OP chain and to the zero address on L1.
func TestOPSequencerFlags(t *testing.T) {
	parse := func(opChain bool, args ...string) (NodeFlags, error) {
		var nf NodeFlags
		fs := newFlagSet()
		nf.register(fs, false)
		nf.opChain = opChain
		return nf, fs.Parse(append([]string{"--sequencer"}, args...))
	}
	nf, err := parse(true, "--op.l1.basefee", "30000000000", "--op.l1.blobbasefee", "5", "--op.l1.basefeescalar", "2000",
		"--op.l1.blobbasefeescalar", "700000", "--op.operatorfee.scalar", "3", "--op.operatorfee.constant", "99",
		"--op.dafootprintscalar", "500", "--op.l1.blocktime", "6s", "--op.minbasefee", "1000")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nf.nodeConfig()
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Sequencer
	if s == nil || s.Chain == nil || s.Coinbase != op.SequencerFeeVault {
		t.Fatalf("sequencer config %+v", s)
	}
	l1 := s.Chain.L1
	if l1.BaseFee.Cmp(big.NewInt(30_000_000_000)) != 0 || l1.BlobBaseFee.Cmp(big.NewInt(5)) != 0 || l1.BaseFeeScalar != 2000 || l1.BlobBaseFeeScalar != 700000 ||
		l1.OperatorFeeScalar != 3 || l1.OperatorFeeConstant != 99 || l1.DAFootprintGasScalar != 500 || l1.BlockTime != 6 || s.Chain.MinBaseFee != 1000 {
		t.Fatalf("synthetic L1 %+v, min base fee %d", l1, s.Chain.MinBaseFee)
	}
	if nf, _ := parse(false); func() common.Address { c, _ := nf.nodeConfig(); return c.Sequencer.Coinbase }() != (common.Address{}) {
		t.Fatal("an L1 sequencer's default coinbase is not the zero address")
	}
	for _, args := range [][]string{
		{"--op.l1.basefee", "-1"}, {"--op.l1.basefee", "lots"}, {"--op.l1.blobbasefee", "0x10"},
		{"--op.l1.basefeescalar", "4294967296"}, {"--op.dafootprintscalar", "0"}, {"--op.dafootprintscalar", "65536"},
		{"--op.l1.blocktime", "0s"}, {"--op.l1.blocktime", "1500ms"},
	} {
		nf, err := parse(true, args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nf.nodeConfig(); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
