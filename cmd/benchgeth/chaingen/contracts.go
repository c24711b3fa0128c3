package chaingen

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// The contracts' runtime bytecode and ABI, compiled once from the .sol
// sources beside them (node chain/devnet/contracts/compile.js
// cmd/benchgeth/chaingen/contracts: solc 0.8.30, optimizer 200 runs, EVM
// prague, no metadata) and checked in.
var (
	//go:embed contracts/BenchToken.bin-runtime
	tokenCodeHex string
	//go:embed contracts/BenchToken.abi.json
	tokenABIJSON string
	//go:embed contracts/Multicall.bin-runtime
	multicallCodeHex string
	//go:embed contracts/Multicall.abi.json
	multicallABIJSON string

	// TokenCode and MulticallCode are the deployed (runtime) bytecodes.
	TokenCode     = common.FromHex(strings.TrimSpace(tokenCodeHex))
	MulticallCode = common.FromHex(strings.TrimSpace(multicallCodeHex))
	// TokenABI and MulticallABI encode calls to them.
	TokenABI     = mustABI(tokenABIJSON)
	MulticallABI = mustABI(multicallABIJSON)
)

func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(fmt.Sprintf("chaingen: checked-in ABI does not parse: %v", err))
	}
	return a
}

// MulticallAddress is where the Multicall contract lives.
var MulticallAddress = common.HexToAddress("0xca11000000000000000000000000000000000001")

// TokenAddress is the address of token t (0-based).
func TokenAddress(t int) common.Address {
	return common.HexToAddress(fmt.Sprintf("0x7e57%036x", t+1))
}

// derive returns the address keccak256(tag ‖ be64(n)...)[12:].
func derive(tag string, n ...uint64) common.Address {
	buf := []byte(tag)
	for _, x := range n {
		buf = binary.BigEndian.AppendUint64(buf, x)
	}
	return common.BytesToAddress(crypto.Keccak256(buf)[12:])
}

// Holder is genesis holder i: it has a balance on every token.
func Holder(i int) common.Address { return derive("tipnode-bench holder", uint64(i)) }

// NewHolder is the new holder created by transaction j of block number n.
func NewHolder(n, j int) common.Address {
	return derive("tipnode-bench new holder", uint64(n), uint64(j))
}

// NewAccount is the account created by the ether transfer j of block n.
func NewAccount(n, j int) common.Address {
	return derive("tipnode-bench new account", uint64(n), uint64(j))
}

// BalanceSlot is the storage slot of holder's balance in a BenchToken
// (mapping at slot 0): keccak256(pad32(holder) ‖ pad32(0)).
func BalanceSlot(holder common.Address) common.Hash {
	var buf [64]byte
	copy(buf[12:32], holder[:])
	return crypto.Keccak256Hash(buf[:])
}

// TotalSupplySlot is BenchToken's totalSupply slot.
var TotalSupplySlot = common.BigToHash(big.NewInt(1))

// GenesisBalance is holder i's genesis balance on token t, in token units
// (18 decimals): 1 to 1000 whole tokens.
func GenesisBalance(i, t int) *big.Int {
	whole := int64(1 + (i*7+t)%1000)
	return new(big.Int).Mul(big.NewInt(whole), big.NewInt(1e18))
}

// pack encodes a call, panicking on a programming error (wrong arguments).
func pack(a abi.ABI, method string, args ...any) []byte {
	data, err := a.Pack(method, args...)
	if err != nil {
		panic(fmt.Sprintf("chaingen: pack %s: %v", method, err))
	}
	return data
}

// BalanceOfData is the calldata of balanceOf(holder).
func BalanceOfData(holder common.Address) []byte { return pack(TokenABI, "balanceOf", holder) }

// TransferData is the calldata of transfer(to, amount).
func TransferData(to common.Address, amount *big.Int) []byte {
	return pack(TokenABI, "transfer", to, amount)
}

// HeavyData is the calldata of heavy(holders).
func HeavyData(holders []common.Address) []byte { return pack(TokenABI, "heavy", holders) }

// FailData is the calldata of fail(code).
func FailData(code uint64) []byte { return pack(TokenABI, "fail", new(big.Int).SetUint64(code)) }

// MulticallCall is one call of Multicall.aggregate.
type MulticallCall struct {
	Target common.Address
	Data   []byte
}

// AggregateData is the calldata of Multicall.aggregate(calls).
func AggregateData(calls []MulticallCall) []byte { return pack(MulticallABI, "aggregate", calls) }
