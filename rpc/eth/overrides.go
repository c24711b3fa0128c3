package eth

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/rpc"
)

// OverrideAccount replaces parts of one account's state for a call. Absent
// fields leave the account as is. State replaces the whole storage (an empty
// non-nil map clears it); StateDiff patches individual slots; giving both is
// an error. MovePrecompileTo (eth_simulateV1) moves a precompile's code to
// another address. Unknown fields are ignored.
type OverrideAccount struct {
	Nonce            *hexutil.Uint64 `json:"nonce"`
	Code             *hexutil.Bytes  `json:"code"`
	Balance          *hexutil.Big    `json:"balance"`
	State            map[Word]Word   `json:"state"`
	StateDiff        map[Word]Word   `json:"stateDiff"`
	MovePrecompileTo *common.Address `json:"movePrecompileToAddress"`
}

// StateOverride maps addresses to account overrides (eth_call's third
// argument, eth_simulateV1's stateOverrides). An empty object is valid.
type StateOverride map[common.Address]OverrideAccount

// UnmarshalJSON decodes the overrides, naming the address in errors.
func (o *StateOverride) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*o = nil
		return nil
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("state override must be an object mapping addresses to account overrides")
	}
	var raw map[common.Address]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("state override: %s", rpc.DescribeJSONError(err))
	}
	out := make(StateOverride, len(raw))
	for addr, r := range raw {
		var acc OverrideAccount
		if err := json.Unmarshal(r, &acc); err != nil {
			return fmt.Errorf("state override for account %s: %s", addr.Hex(), rpc.DescribeJSONError(err))
		}
		if acc.State != nil && acc.StateDiff != nil {
			return fmt.Errorf("account %s has both 'state' and 'stateDiff'", addr.Hex())
		}
		out[addr] = acc
	}
	*o = out
	return nil
}

// BlockOverrides replaces block header fields for a call (eth_call's fourth
// argument, eth_simulateV1's blockOverrides). Absent fields are nil.
// PrevRandao accepts short hex (viem sends e.g. "0x1") and left-pads it.
// Difficulty and BeaconRoot are decoded so that eth_simulateV1 can reject or
// apply them. Unknown fields are ignored.
type BlockOverrides struct {
	Number        *hexutil.Uint64    `json:"number"`
	Difficulty    *hexutil.Big       `json:"difficulty"`
	Time          *hexutil.Uint64    `json:"time"`
	GasLimit      *hexutil.Uint64    `json:"gasLimit"`
	FeeRecipient  *common.Address    `json:"feeRecipient"`
	PrevRandao    *Word              `json:"prevRandao"`
	BaseFeePerGas *hexutil.Big       `json:"baseFeePerGas"`
	BlobBaseFee   *hexutil.Big       `json:"blobBaseFee"`
	BeaconRoot    *common.Hash       `json:"beaconRoot"`
	Withdrawals   *types.Withdrawals `json:"withdrawals"`
}
