package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

// Agreement verdicts.
const (
	agreeSame    = "same"
	agreeSkipped = "skipped"
	// agreeLines is how many requests of each workload are compared.
	agreeLines = 10
)

// agree sends the first requests of a workload to both nodes (over HTTP)
// and compares the answers, so both are known to do the same work. What
// legitimately differs is left out: how a revert is told (go-ethereum:
// code 3, the reason appended to the message; tipnode: -32000, the message
// exactly "execution reverted"): a revert is recognised by each node's own
// code and compared by its data only; other errors by message and data;
// for eth_simulateV1, everything but
// the calls (tipnode's simulated blocks carry a zero state root, so their
// hashes differ); for eth_getProof at latest, everything but the account
// proof (withoutAccountProof). eth_blockNumber is skipped: tipnode's
// sequencer seals blocks.
func agree(ctx context.Context, w chaingen.Workload, reqs [][]byte, a, b *node) string {
	if w.Name == "blocknumber" {
		return agreeSkipped
	}
	for i, req := range reqs[:min(len(reqs), agreeLines)] {
		var got [2]string
		for k, n := range []*node{a, b} {
			out, err := n.call(ctx, req)
			if err != nil {
				return fmt.Sprintf("request %d: %s: %v", i, n.kind.name, err)
			}
			if got[k], err = normalize(w, out, n.kind.revertCode); err != nil {
				return fmt.Sprintf("request %d: %s: %v", i, n.kind.name, err)
			}
		}
		if got[0] != got[1] {
			return fmt.Sprintf("request %d: %s %.300s | %s %.300s", i, a.kind.name, got[0], b.kind.name, got[1])
		}
	}
	return agreeSame
}

type answer struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// comparable is what both nodes must agree on of an error: for a revert
// (revertCode, a message starting "execution reverted") the revert data,
// for any other error its message and data (codes differ between nodes).
func (e *rpcError) comparable(revertCode int) any {
	if e == nil {
		return nil
	}
	if e.Code == revertCode && strings.HasPrefix(e.Message, "execution reverted") {
		return map[string]any{"reverted": e.Data}
	}
	return map[string]any{"message": e.Message, "data": e.Data}
}

// normalize reduces a response of a node whose reverts are revertCode to
// what both nodes must agree on, as canonical JSON (sorted keys).
func normalize(w chaingen.Workload, body []byte, revertCode int) (string, error) {
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		return d.Decode(v)
	}
	var v any
	if w.Batch {
		var as []answer
		if err := dec(&as); err != nil {
			return "", err
		}
		sort.Slice(as, func(i, j int) bool { return string(as[i].ID) < string(as[j].ID) })
		out := make([]any, len(as))
		for i, a := range as {
			out[i] = []any{string(a.ID), a.Result, a.Error.comparable(revertCode)}
		}
		v = out
	} else {
		var a answer
		if err := dec(&a); err != nil {
			return "", err
		}
		v = []any{a.Result, a.Error.comparable(revertCode)}
		if w.Expect == chaingen.ExpectSimulate && a.Error == nil {
			v = simulatedCalls(a.Result)
		}
		if w.Name == "getproof" && a.Error == nil {
			v = withoutAccountProof(a.Result)
		}
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// withoutAccountProof drops accountProof from an eth_getProof result at
// latest: its nodes lead to the state root, and tipnode's sequencer seals
// blocks (each writes the EIP-4788 and EIP-2935 system contracts), so the
// two nodes' latest state roots differ. The account's fields and its
// storage proofs (the token's own storage trie) must still agree.
func withoutAccountProof(result any) any {
	m, ok := result.(map[string]any)
	if !ok {
		return result
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "accountProof" {
			out[k] = v
		}
	}
	return out
}

// simulatedCalls keeps, of an eth_simulateV1 result, each call's status,
// return data, gas used and logs (address, topics, data).
func simulatedCalls(result any) any {
	blocks, _ := result.([]any)
	var out []any
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		calls, _ := bm["calls"].([]any)
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			var logs []any
			ls, _ := cm["logs"].([]any)
			for _, l := range ls {
				lm, _ := l.(map[string]any)
				logs = append(logs, []any{lm["address"], lm["topics"], lm["data"]})
			}
			out = append(out, []any{cm["status"], cm["returnData"], cm["gasUsed"], logs})
		}
	}
	return out
}
