package main

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os/exec"
	"reflect"
	"slices"
	"sort"
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
	"github.com/tipnode/tipnode/pending/stream/streamtest"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// jsonDiff lists the top-level fields in which two JSON objects differ,
// every "blockHash" left out at any depth (a pre-confirmed receipt's or
// transaction's may be a placeholder, a sealed one's the real hash).
func jsonDiff(a, b json.RawMessage) []string {
	var strip func(v any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "blockHash")
			for k, x := range v {
				v[k] = strip(x)
			}
		case []any:
			for i, x := range v {
				v[i] = strip(x)
			}
		}
		return v
	}
	decode := func(raw json.RawMessage) map[string]any {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return map[string]any{"(not an object)": string(raw)}
		}
		return strip(m).(map[string]any)
	}
	x, y := decode(a), decode(b)
	keys := map[string]bool{}
	for k := range x {
		keys[k] = true
	}
	for k := range y {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if !reflect.DeepEqual(x[k], y[k]) {
			out = append(out, fmt.Sprintf("%s: %v vs %v", k, x[k], y[k]))
		}
	}
	sort.Strings(out)
	return out
}

// TestOPReplicasE2E runs real processes on an OP Stack chain: one `tipnode
// dev --op` (the sequencer, with L1 data fees and operator fees on), two
// read replicas (`run --follow.rpc … --follow.preconf …`), the first
// polling blocks slowly (its window holds pending blocks on pending
// parents it sealed itself), the second behind the stream fault proxy
// (blocks over a websocket), and a follower of the sequencer's blocks
// only (`run --follow.rpc http://…`, no stream), all set up with `init
// --genesis-from`. Transfers, a contract deployment and contract writes
// sent through the replicas (forwarded to the sequencer), each round right
// after a seal: every one shows in both replicas' pre-confirmed `pending`
// block, and its receipt there equals the sequencer's field for field
// (l1Fee, the other OP fee fields, gas, index, logs; not the block hash),
// l1Fee non-zero; the replicas' whole pending block (header with its OP
// fields, transactions, receipts), the vaults' balances and the block
// context at pending equal the sequencer's; eth_sendRawTransactionSync
// through a replica answers the sequencer's receipt. A transaction that covers gas
// and value but not its L1 fee is refused through either replica.
// User deposits (tipnode_sendDeposit on the sequencer):
// the same on the replicas' pending, with their deposit nonce and the
// minted balance. Sealed block hashes are equal on all four nodes (the
// follower imports every block with the full OP verification) and so are
// the whole blocks, their receipts and the four fee vaults' balances at
// every height. A burst of dropped,
// duplicated, reordered and delayed stream messages, and replica 1 killed
// with SIGKILL and restarted in its middle: both replicas recover. Then the sequencer, sealing hourly, with a pre-confirmed
// deposit and transaction in its open block (both on the replicas'
// pending), is killed with SIGKILL: after the restart both receipts are
// exactly what the client was promised, on the sequencer and on the
// replicas, which serve the recovered pending block again (equal to the
// sequencer's) and then follow the restarted sequencer's chain, and every node agrees
// again on hashes and vaults. Neither replica counts a verification
// mismatch (gas, receipts root, OP header, parent hash) or a metadata one.
func TestOPReplicasE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	bin := buildTipnode(t)
	const interval = 100 * time.Millisecond
	seqDir, seqAddr := t.TempDir(), freePort(t)
	seqURL, seqStream := "http://"+seqAddr, "ws://"+seqAddr+"/preconfirmations"
	startSeq := func(blockTime string) *process {
		p := startProcess(t, bin, "dev", "--op", "--datadir", seqDir, "--http.addr", seqAddr,
			"--preconf.interval", interval.String(), "--block.time", blockTime, "--op.operatorfee.scalar", "7", "--op.operatorfee.constant", "1000",
			"--op.l1.basefee", "20000000000", "--log.level", "warn", "--log.format", "json")
		waitRPC(t, seqURL, p)
		return p
	}
	seq := startSeq("1s")
	proxy := streamtest.NewProxy(t, seqStream, 20261126)
	// Faults that lose nothing while the replicas' pending is checked
	// transaction by transaction; a lossy burst comes later.
	gentle := streamtest.Faults{Duplicate: 0.3, Delay: 20 * time.Millisecond}
	proxy.SetFaults(gentle)

	type node struct {
		name, dir, addr, url string
		args                 []string
		p                    *process
	}
	// Replica 1 polls the sequencer's blocks slowly: its window holds
	// pending blocks opened on pending parents it sealed itself (their
	// hashes checked against the next block's announced parent), rebased
	// when the canonical block arrives.
	r1 := &node{name: "replica 1", args: []string{"--follow.rpc", seqURL, "--follow.poll", "1500ms", "--follow.preconf", seqStream}}
	r2 := &node{name: "replica 2 (proxied)", args: []string{"--follow.rpc", "ws://" + seqAddr, "--follow.preconf", proxy.URL}}
	fo := &node{name: "follower (no stream)", args: []string{"--follow.rpc", seqURL, "--follow.poll", "100ms"}}
	replicas, others := []*node{r1, r2}, []*node{r1, r2, fo}
	start := func(n *node) {
		n.p = startProcess(t, bin, append([]string{"run", "--datadir", n.dir, "--http.addr", n.addr, "--metrics",
			"--log.level", "info", "--log.format", "json"}, n.args...)...)
		waitRPC(t, n.url, n.p)
	}
	for _, n := range others {
		n.dir, n.addr = t.TempDir(), freePort(t)
		n.url = "http://" + n.addr
		if out, err := exec.Command(bin, "init", "--datadir", n.dir, "--genesis-from", seqURL, "--log.level", "warn").CombinedOutput(); err != nil {
			t.Fatalf("init --genesis-from: %v\n%s", err, out)
		}
		start(n)
	}
	logs := func() string {
		s := "sequencer:\n" + tail(seq.out.String(), 2500)
		for _, n := range others {
			s += "\n" + n.name + ":\n" + tail(n.p.out.String(), 2500)
		}
		return s
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached within 30 s\n%s", what, logs())
			}
			time.Sleep(2 * time.Millisecond) // other processes: nothing to wait on but their answers
		}
	}
	getPending := func(url string) (pendingBlock, error) {
		var b pendingBlock
		err := rpcCall(url, "eth_getBlockByNumber", &b, "pending", false)
		return b, err
	}
	servingPreconf := func() {
		t.Helper()
		for _, r := range replicas {
			until(r.name+" serving a pre-confirmed pending block", func() bool {
				b, err := getPending(r.url)
				return err == nil && b.Hash == nil
			})
		}
	}
	servingPreconf()

	accs, err := devnet.Accounts(devnet.Mnemonic, 3)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(int64(devnet.DefaultChainID))
	signer := types.LatestSignerForChainID(chainID)
	nonces := make([]uint64, len(accs))
	// sendRaw signs a transaction (fee cap 100 gwei) and sends it to url.
	sendRaw := func(url string, key *ecdsa.PrivateKey, nonce uint64, to *common.Address, value *big.Int, gas uint64, data []byte) (common.Hash, error) {
		tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce,
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: gas, To: to, Value: value, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := tx.MarshalBinary()
		var hash common.Hash
		if err := rpcCall(url, "eth_sendRawTransaction", &hash, hexutil.Bytes(raw)); err != nil {
			return common.Hash{}, err
		}
		if hash != tx.Hash() {
			return common.Hash{}, fmt.Errorf("sent %s, answered %s", tx.Hash().Hex(), hash.Hex())
		}
		return hash, nil
	}
	sendValue := func(url string, a int, to *common.Address, value *big.Int, gas uint64, data []byte) common.Hash {
		t.Helper()
		hash, err := sendRaw(url, accs[a].Key, nonces[a], to, value, gas, data)
		if err != nil {
			t.Fatalf("send via %s: %v\n%s", url, err, logs())
		}
		nonces[a]++
		return hash
	}
	send := func(url string, a int, to *common.Address, gas uint64, data []byte) common.Hash {
		t.Helper()
		return sendValue(url, a, to, big.NewInt(1), gas, data)
	}
	// deposit sends a user deposit from depositor, minting mint to it and
	// passing it on to to (a deposit bumps its
	// sender's nonce: not a key the test signs with).
	depositor := common.HexToAddress("0xd0d0000000000000000000000000000000000001")
	deposit := func(to common.Address, mint *big.Int) common.Hash {
		t.Helper()
		var h common.Hash
		if err := rpcCall(seqURL, "tipnode_sendDeposit", &h, map[string]any{"from": depositor, "to": to, "mint": hexutil.EncodeBig(mint), "value": hexutil.EncodeBig(mint), "gas": "0x186a0"}); err != nil {
			t.Fatalf("tipnode_sendDeposit: %v", err)
		}
		return h
	}
	receipt := func(url string, h common.Hash) json.RawMessage {
		var r json.RawMessage
		if err := rpcCall(url, "eth_getTransactionReceipt", &r, h); err != nil || string(r) == "null" {
			return nil
		}
		return r
	}
	// afterSeal waits for the sequencer's next seal, so that what is sent
	// next stays in the pending block most of a block time.
	afterSeal := func() {
		t.Helper()
		h := blockNumber(t, seqURL)
		until("the sequencer's next seal", func() bool {
			var n hexutil.Uint64
			return rpcCall(seqURL, "eth_blockNumber", &n) == nil && uint64(n) > h
		})
	}
	// samePending checks that both replicas' pending block is the
	// sequencer's: once they hold the same transactions, the whole block
	// (header with its OP fields, transaction objects with the deposits'
	// fields), its receipts, the four vaults' balances and the block
	// context an eth_call sees at pending are equal (block hashes aside).
	// Retried: a seal between the reads puts the nodes a block apart.
	vaults := []common.Address{op.SequencerFeeVault, op.BaseFeeVault, op.L1FeeVault, op.OperatorFeeVault}
	probe := common.Address{0xc0, 0xde}
	override := map[string]any{probe.Hex(): map[string]any{"code": hexutil.Bytes(contextCode)}}
	pendingView := func(url string) (txs []string, parts map[string]json.RawMessage, err error) {
		parts = map[string]json.RawMessage{}
		var blk json.RawMessage
		if err := rpcCall(url, "eth_getBlockByNumber", &blk, "pending", true); err != nil {
			return nil, nil, err
		}
		parts["block"] = blk
		var b struct {
			Transactions []struct {
				Hash common.Hash `json:"hash"`
			} `json:"transactions"`
		}
		if err := json.Unmarshal(blk, &b); err != nil {
			return nil, nil, err
		}
		for _, tx := range b.Transactions {
			txs = append(txs, tx.Hash.Hex())
		}
		var rs []json.RawMessage
		if err := rpcCall(url, "eth_getBlockReceipts", &rs, "pending"); err != nil {
			return nil, nil, err
		}
		if len(rs) != len(txs) || len(txs) == 0 {
			return nil, nil, fmt.Errorf("pending block with %d transactions and %d receipts", len(txs), len(rs))
		}
		for i, r := range rs {
			parts[fmt.Sprintf("receipt %d", i)] = r
		}
		state := map[string]any{}
		for _, v := range vaults {
			var bal hexutil.Big
			if err := rpcCall(url, "eth_getBalance", &bal, v, "pending"); err != nil {
				return nil, nil, err
			}
			state["vault "+v.Hex()] = bal.String()
		}
		var ctx hexutil.Bytes
		if err := rpcCall(url, "eth_call", &ctx, map[string]any{"to": probe}, "pending", override); err != nil {
			return nil, nil, err
		}
		state["block context"] = ctx.String()
		parts["state"], _ = json.Marshal(state)
		return txs, parts, nil
	}
	samePending := func(what string) {
		t.Helper()
		var diffs []string
		for try := 0; try <= 50; try++ {
			diffs = diffs[:0]
			want, wantParts, err := pendingView(seqURL)
			if err != nil {
				t.Fatalf("%s: the sequencer's pending block: %v", what, err)
			}
			for _, r := range replicas {
				got, gotParts, err := pendingView(r.url)
				if err != nil {
					t.Fatalf("%s: %s's pending block: %v", what, r.name, err)
				}
				if !slices.Equal(got, want) {
					diffs = append(diffs, fmt.Sprintf("%s: transactions %v, sequencer %v", r.name, got, want))
					continue
				}
				for k, w := range wantParts {
					for _, d := range jsonDiff(w, gotParts[k]) {
						diffs = append(diffs, fmt.Sprintf("%s: %s: %s (sequencer vs replica)", r.name, k, d))
					}
				}
			}
			if len(diffs) == 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: the replicas' pending block differs from the sequencer's:\n%s\n%s", what, strings.Join(diffs, "\n"), logs())
	}
	// onReplicas checks that every hash shows in both replicas'
	// pre-confirmed pending block and that the replicas' receipts equal
	// the sequencer's; it returns the sequencer's receipts.
	onReplicas := func(what string, hashes ...common.Hash) map[common.Hash]json.RawMessage {
		t.Helper()
		for _, r := range replicas {
			seen := map[common.Hash]bool{}
			until(what+" on "+r.name+"'s pending", func() bool {
				b, err := getPending(r.url)
				if err != nil || b.Hash != nil {
					return false
				}
				for _, h := range b.Transactions {
					seen[h] = true
				}
				for _, h := range hashes {
					if !seen[h] {
						return false
					}
				}
				return true
			})
		}
		samePending(what)
		out := map[common.Hash]json.RawMessage{}
		for _, h := range hashes {
			var want json.RawMessage
			until(what+": the sequencer's receipt", func() bool { want = receipt(seqURL, h); return want != nil })
			out[h] = want
			var fees struct {
				Type  hexutil.Uint64 `json:"type"`
				L1Fee *hexutil.Big   `json:"l1Fee"`
			}
			json.Unmarshal(want, &fees)
			if fees.Type != chaintypes.DepositTxType && (fees.L1Fee == nil || fees.L1Fee.ToInt().Sign() <= 0) {
				t.Fatalf("%s: %s pays no L1 fee on the sequencer: %s", what, h.Hex(), want)
			}
			for _, r := range replicas {
				got := receipt(r.url, h)
				if d := jsonDiff(want, got); len(d) > 0 {
					t.Fatalf("%s: receipt of %s on %s differs from the sequencer's (sequencer vs replica):\n%s\nsequencer %s\nreplica   %s",
						what, h.Hex(), r.name, strings.Join(d, "\n"), want, got)
				}
			}
		}
		return out
	}

	checked := uint64(0)
	// sameEverywhere waits until every transaction sent is sealed and every
	// node holds the sequencer's head, then compares block hashes and the
	// vaults' balances at every height not compared yet.
	sameEverywhere := func(what string) uint64 {
		t.Helper()
		until(what+": every transaction sealed", func() bool {
			for a := range accs {
				var n hexutil.Uint64
				if rpcCall(seqURL, "eth_getTransactionCount", &n, accs[a].Address, "latest") != nil || uint64(n) != nonces[a] {
					return false
				}
			}
			return true
		})
		target := blockNumber(t, seqURL)
		for _, n := range others {
			waitFollowed(t, n.url, target, blockHash(t, seqURL, target), n.p)
		}
		for h := checked; h <= target; h++ {
			want := blockHash(t, seqURL, h)
			// The whole block (transactions as objects) and its receipts
			// (the OP fields, deposit nonces) too.
			var wantBlock json.RawMessage
			var wantRcs []json.RawMessage
			if err := rpcCall(seqURL, "eth_getBlockByNumber", &wantBlock, hexutil.Uint64(h), true); err != nil {
				t.Fatal(err)
			}
			if err := rpcCall(seqURL, "eth_getBlockReceipts", &wantRcs, hexutil.Uint64(h)); err != nil {
				t.Fatal(err)
			}
			for _, n := range others {
				if got := blockHash(t, n.url, h); got != want {
					t.Fatalf("%s: block %d is %s on the sequencer, %s on %s", what, h, want.Hex(), got.Hex(), n.name)
				}
				var gotBlock json.RawMessage
				var gotRcs []json.RawMessage
				if err := rpcCall(n.url, "eth_getBlockByNumber", &gotBlock, hexutil.Uint64(h), true); err != nil {
					t.Fatal(err)
				}
				if err := rpcCall(n.url, "eth_getBlockReceipts", &gotRcs, hexutil.Uint64(h)); err != nil {
					t.Fatal(err)
				}
				if d := jsonDiff(wantBlock, gotBlock); len(d) > 0 {
					t.Fatalf("%s: block %d on %s differs from the sequencer's (sequencer vs node):\n%s", what, h, n.name, strings.Join(d, "\n"))
				}
				if len(gotRcs) != len(wantRcs) {
					t.Fatalf("%s: block %d has %d receipts on %s, %d on the sequencer", what, h, len(gotRcs), n.name, len(wantRcs))
				}
				for i := range wantRcs {
					if d := jsonDiff(wantRcs[i], gotRcs[i]); len(d) > 0 {
						t.Fatalf("%s: block %d receipt %d on %s differs from the sequencer's (sequencer vs node):\n%s", what, h, i, n.name, strings.Join(d, "\n"))
					}
				}
			}
			for _, v := range vaults {
				var a hexutil.Big
				if err := rpcCall(seqURL, "eth_getBalance", &a, v, hexutil.Uint64(h)); err != nil {
					t.Fatal(err)
				}
				for _, n := range others {
					var b hexutil.Big
					if err := rpcCall(n.url, "eth_getBalance", &b, v, hexutil.Uint64(h)); err != nil || a.ToInt().Cmp(b.ToInt()) != 0 {
						t.Fatalf("%s: vault %s holds %s on the sequencer, %s on %s at block %d (%v)", what, v.Hex(), a.ToInt(), b.ToInt(), n.name, h, err)
					}
				}
			}
		}
		for _, v := range vaults {
			var a hexutil.Big
			if err := rpcCall(seqURL, "eth_getBalance", &a, v, hexutil.Uint64(target)); err != nil || a.ToInt().Sign() <= 0 {
				t.Fatalf("%s: vault %s is empty at block %d (%v)", what, v.Hex(), target, err)
			}
		}
		checked = target
		return target
	}

	// 1. Transfers through both replicas, in one block.
	afterSeal()
	var round []common.Hash
	for i := range 4 {
		to := common.Address{0xfe, byte(i)}
		round = append(round, send(replicas[i%2].url, i%2, &to, 21_000, nil))
	}
	onReplicas("transfers", round...)
	// eth_sendRawTransactionSync through a replica: the receipt it
	// answers (pre-confirmed, from the replica's pending) is the
	// sequencer's.
	{
		to := common.Address{0xfe, 0xee}
		tx, err := types.SignNewTx(accs[2].Key, signer, &types.DynamicFeeTx{ChainID: chainID, Nonce: nonces[2],
			GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: 21_000, To: &to, Value: big.NewInt(1)})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := tx.MarshalBinary()
		var got json.RawMessage
		if err := rpcCall(r2.url, "eth_sendRawTransactionSync", &got, hexutil.Bytes(raw)); err != nil {
			t.Fatalf("eth_sendRawTransactionSync via %s: %v", r2.name, err)
		}
		nonces[2]++
		want := onReplicas("a transfer sent with eth_sendRawTransactionSync", tx.Hash())[tx.Hash()]
		if d := jsonDiff(want, got); len(d) > 0 {
			t.Fatalf("eth_sendRawTransactionSync via %s answered another receipt than the sequencer's (sequencer vs replica):\n%s", r2.name, strings.Join(d, "\n"))
		}
	}

	// A transaction covering gas × fee cap + value but not its L1 fee:
	// refused through either replica (the sequencer's answer, forwarded).
	poorKey, _ := crypto.GenerateKey()
	poor := crypto.PubkeyToAddress(poorKey.PublicKey)
	exact := new(big.Int).Mul(big.NewInt(21_000), big.NewInt(100*params.GWei))
	onReplicas("funding an account with gas × fee cap + 1 wei", sendValue(r1.url, 0, &poor, new(big.Int).Add(exact, big.NewInt(1)), 21_000, nil))
	for _, r := range replicas {
		if _, err := sendRaw(r.url, poorKey, 0, &common.Address{0xfb}, big.NewInt(1), 21_000, nil); err == nil || !strings.Contains(err.Error(), "L1") {
			t.Fatalf("a transaction that cannot pay its L1 fee, sent via %s: %v, want refused naming the L1 fee", r.name, err)
		}
	}

	// 2. A contract deployed through replica 1 and written through
	// replica 2, in one block; its slot at pending on every node.
	afterSeal()
	contract := crypto.CreateAddress(accs[2].Address, nonces[2])
	deploy := send(r1.url, 2, nil, 200_000, storeInit)
	round = []common.Hash{deploy}
	for i := range 3 {
		word := common.BigToHash(big.NewInt(int64(40 + i)))
		round = append(round, send(r2.url, 2, &contract, 100_000, word[:]))
	}
	onReplicas("contract writes", round...)
	for _, url := range []string{seqURL, r1.url, r2.url} {
		var slot common.Hash
		if err := rpcCall(url, "eth_getStorageAt", &slot, contract, common.Hash{}, "pending"); err != nil || slot != common.BigToHash(big.NewInt(42)) {
			t.Fatalf("contract slot 0 at pending on %s: %s (%v), want 42", url, slot.Hex(), err)
		}
	}

	// 3. User deposits on the sequencer (they join the open block while
	// it holds no sequenced transaction: right after a seal).
	minted := common.HexToAddress("0xd0d0000000000000000000000000000000000002")
	afterSeal()
	dep := deposit(minted, big.NewInt(params.Ether))
	depReceipts := onReplicas("a user deposit", dep)
	var dr struct {
		Type         hexutil.Uint64  `json:"type"`
		Status       hexutil.Uint64  `json:"status"`
		DepositNonce *hexutil.Uint64 `json:"depositNonce"`
		L1Fee        *hexutil.Big    `json:"l1Fee"`
	}
	json.Unmarshal(depReceipts[dep], &dr)
	if dr.Type != chaintypes.DepositTxType || dr.Status != 1 || dr.DepositNonce == nil || dr.L1Fee != nil {
		t.Fatalf("deposit receipt %s", depReceipts[dep])
	}
	for _, r := range replicas {
		var b hexutil.Big
		if err := rpcCall(r.url, "eth_getBalance", &b, minted, "pending"); err != nil || b.ToInt().Cmp(big.NewInt(params.Ether)) != 0 {
			t.Fatalf("%s: the deposit's recipient holds %v at pending (%v), want 1 ether", r.name, b.ToInt(), err)
		}
	}
	n1 := sameEverywhere("after transfers, contract writes and a deposit")

	// 4. A lossy burst between the sequencer and replica 2, replica 1
	// killed with SIGKILL in its middle and restarted; then both serve
	// the sequencer's pending block again.
	proxy.SetFaults(streamtest.Faults{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, Delay: 30 * time.Millisecond})
	before := proxy.Stats()
	for i := 0; ; i++ {
		to := common.Address{0xfd, byte(i)}
		send(seqURL, i%2, &to, 21_000, nil)
		time.Sleep(interval / 3)
		switch i {
		case 5:
			r1.p.kill()
		case 12:
			start(r1)
		}
		if st := proxy.Stats(); i >= 20 && st.Dropped > before.Dropped && st.Reordered > before.Reordered {
			break
		} else if i == 200 {
			t.Fatalf("the proxy injected too little: %+v", st)
		}
	}
	proxy.SetFaults(gentle)
	afterSeal()
	onReplicas("a transfer after the lossy burst and replica 1's restart", send(r2.url, 1, &common.Address{0xfc}, 21_000, nil))
	n2 := sameEverywhere("after the lossy burst and replica 1's restart")

	// 5. kill -9 of the sequencer holding a pre-confirmed deposit and
	// transaction (an hour's block time keeps them unsealed): the receipts come
	// back as promised, the replicas continue.
	var ignored json.RawMessage
	if err := rpcCall(seqURL, "evm_setIntervalMining", &ignored, 3600); err != nil { // pre-confirming, sealing hourly
		t.Fatal(err)
	}
	if err := rpcCall(seqURL, "evm_mine", &ignored); err != nil { // a fresh open block: the deposit joins it
		t.Fatal(err)
	}
	head := blockNumber(t, seqURL)
	dep2 := deposit(accs[0].Address, big.NewInt(42))
	tx2 := send(r1.url, 1, &common.Address{0xcc}, 21_000, nil)
	promised := onReplicas("a deposit and a transfer before the crash", dep2, tx2)
	for h, raw := range promised {
		var r promise
		json.Unmarshal(raw, &r)
		if uint64(r.BlockNumber) != head+1 {
			t.Fatalf("%s is in block %d, want the open block %d (the crash would not test the journal)", h.Hex(), r.BlockNumber, head+1)
		}
	}
	seq.kill()
	// Restarted with a long block time: the recovered block stays open
	// while the replicas (reconnecting: the stream gives a new subscriber
	// the open block from index 0) are checked to serve it again, as a
	// pre-confirmed pending block equal to the sequencer's.
	seq = startSeq("10s")
	for h, want := range promised {
		var got json.RawMessage
		until("the receipt of "+h.Hex()+" after kill -9", func() bool { got = receipt(seqURL, h); return got != nil })
		if d := jsonDiff(want, got); len(d) > 0 {
			t.Fatalf("after kill -9, the receipt of %s changed (promised vs now):\n%s", h.Hex(), strings.Join(d, "\n"))
		}
	}
	recovered := onReplicas("the recovered deposit and transfer after kill -9", dep2, tx2)
	for h, want := range promised {
		if d := jsonDiff(want, recovered[h]); len(d) > 0 {
			t.Fatalf("after kill -9, the receipt of %s on the replicas changed (promised vs now):\n%s", h.Hex(), strings.Join(d, "\n"))
		}
	}
	if err := rpcCall(seqURL, "evm_setIntervalMining", &ignored, 1); err != nil {
		t.Fatal(err)
	}
	servingPreconf()
	afterSeal()
	onReplicas("a transfer after the sequencer's restart", send(r2.url, 0, &common.Address{0xcb}, 21_000, nil))
	n3 := sameEverywhere("after the sequencer's kill -9")
	for _, r := range replicas {
		for h, want := range promised {
			if d := jsonDiff(want, receipt(r.url, h)); len(d) > 0 {
				t.Fatalf("%s: the sealed receipt of %s differs from the one promised before the crash:\n%s", r.name, h.Hex(), strings.Join(d, "\n"))
			}
		}
	}
	// No verification failed on either replica (gas, receipts root, OP
	// header, parent hash), and the metadata cross-check agreed.
	for _, r := range replicas {
		if m := scrape(t, r.url, `tipnode_replica_mismatches_total\{[^}]*\} ([0-9.e+]+)`); len(m) > 0 && m[len(m)-1] > 0 {
			t.Fatalf("%s counted verification mismatches %v\n%s", r.name, m, tail(r.p.out.String(), 4000))
		}
		if m := scrape(t, r.url, `tipnode_replica_metadata_mismatches_total\{[^}]*\} ([0-9.e+]+)`); len(m) > 0 && m[len(m)-1] > 0 {
			t.Fatalf("%s counted metadata mismatches %v\n%s", r.name, m, tail(r.p.out.String(), 4000))
		}
		t.Logf("%s: messages by verdict %v, rebases %v, metadata checks %v", r.name,
			metricLines(t, r.url, "tipnode_replica_messages_total"), metricLines(t, r.url, "tipnode_replica_rebases_total"), scrape(t, r.url, `tipnode_replica_metadata_checks_total ([0-9.e+]+)`))
	}
	t.Logf("blocks 0..%d equal on the sequencer, both replicas and the follower, vaults included (checkpoints %d, %d); proxy %+v", n3, n1, n2, proxy.Stats())
}

// metricLines returns url's /metrics lines of the metric name, trimmed of
// the name.
func metricLines(t *testing.T, url, name string) []string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, strings.TrimPrefix(l, name))
		}
	}
	return out
}
