package chaingen

import (
	"crypto/ecdsa"
	"encoding/binary"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/tipnode/tipnode/pending/devnet"
)

// Fixed chain parameters.
const (
	// ChainID of the benchmark chain.
	ChainID = 7357
	// GenesisTime is the genesis timestamp; go-ethereum's chain maker adds
	// 10 s per block.
	GenesisTime = 1_700_000_000
	// GasLimit of every block.
	GasLimit = 60_000_000
)

var (
	ether = big.NewInt(params.Ether)
	// SenderEther is every sender's genesis ether balance (1M ETH).
	SenderEther = new(big.Int).Mul(big.NewInt(1_000_000), ether)
	// SenderTokens is every sender's genesis balance on every token (1e9
	// tokens).
	SenderTokens = new(big.Int).Mul(big.NewInt(1_000_000_000), ether)
	// Coinbase receives the fees of generated blocks.
	Coinbase = common.HexToAddress("0xc014ba5e00000000000000000000000000000001")
)

// SenderKey is the private key of sender i: keccak256("tipnode-bench
// sender" ‖ be64(i) ‖ be64(k)) for the first k that is a valid key.
func SenderKey(i int) *ecdsa.PrivateKey {
	for k := uint64(0); ; k++ {
		buf := binary.BigEndian.AppendUint64([]byte("tipnode-bench sender"), uint64(i))
		buf = binary.BigEndian.AppendUint64(buf, k)
		if key, err := crypto.ToECDSA(crypto.Keccak256(buf)); err == nil {
			return key
		}
	}
}

// ChainConfig is the benchmark chain's config: tipnode's dev chain config
// (devnet.ChainConfig: post-merge from genesis, every fork through Osaka
// at block 0 / time 0) with chain id ChainID.
func ChainConfig() *params.ChainConfig { return devnet.ChainConfig(big.NewInt(ChainID)) }

// BuildGenesis builds the genesis of c: the system contracts, the tokens
// with Slots/Tokens holders each (plus the senders), the multicall and the
// funded senders.
func BuildGenesis(c Config) *core.Genesis {
	alloc := devnet.SystemContracts()
	alloc[MulticallAddress] = types.Account{Nonce: 1, Code: MulticallCode, Balance: common.Big0}
	senders := make([]common.Address, c.Senders)
	for i := range senders {
		senders[i] = crypto.PubkeyToAddress(SenderKey(i).PublicKey)
		alloc[senders[i]] = types.Account{Balance: new(big.Int).Set(SenderEther)}
	}
	holders := make([]common.Hash, c.HoldersPerToken())
	for i := range holders {
		holders[i] = BalanceSlot(Holder(i))
	}
	for t := 0; t < c.Tokens; t++ {
		storage := make(map[common.Hash]common.Hash, len(holders)+len(senders)+1)
		supply := new(big.Int)
		for i, slot := range holders {
			b := GenesisBalance(i, t)
			storage[slot] = common.BigToHash(b)
			supply.Add(supply, b)
		}
		for _, s := range senders {
			storage[BalanceSlot(s)] = common.BigToHash(SenderTokens)
			supply.Add(supply, SenderTokens)
		}
		storage[TotalSupplySlot] = common.BigToHash(supply)
		alloc[TokenAddress(t)] = types.Account{Nonce: 1, Code: TokenCode, Balance: common.Big0, Storage: storage}
	}
	return &core.Genesis{
		Config:     ChainConfig(),
		Timestamp:  GenesisTime,
		ExtraData:  []byte("tipnode bench"),
		GasLimit:   GasLimit,
		Difficulty: big.NewInt(0),
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Alloc:      alloc,
	}
}
