// Package devnet builds tipnode's development chain: the ten well-known dev
// accounts derived from the test mnemonic (BIP-39 seed, BIP-32 path
// m/44'/60'/0'/0/i, as Hardhat and anvil derive them) and a genesis with
// every fork through Osaka active from block 0, the accounts prefunded and
// the system contracts (EIP-4788, EIP-2935, EIP-7002, EIP-7251) deployed.
//
// OPGenesis (op.go) is the OP Stack variant (tipnode dev --op): op-geth's
// genesis format with every OP fork through Karst at 0, and the OP
// predeploys the fee rules need and those wallets and SDKs call: tipnode's
// own L1Block, L2ToL1MessagePasser, GasPriceOracle and WETH9 contracts
// (contracts/*.sol, written from the OP specification, compiled once by
// contracts/compile.js and checked in) and the four fee vaults.
package devnet

import (
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// Mnemonic is the well-known test mnemonic of Hardhat, anvil and Foundry.
const Mnemonic = "test test test test test test test test test test test junk"

// DefaultChainID is the dev chain's id unless set otherwise.
const DefaultChainID = 1337

// Account is a dev account.
type Account struct {
	Address common.Address
	Key     *ecdsa.PrivateKey
}

// KeyHex is the private key as 0x-prefixed hex.
func (a Account) KeyHex() string { return "0x" + common.Bytes2Hex(crypto.FromECDSA(a.Key)) }

// Accounts derives n accounts from mnemonic (empty passphrase) at
// m/44'/60'/0'/0/i for i = 0..n-1.
func Accounts(mnemonic string, n int) ([]Account, error) {
	seed, err := Seed(mnemonic, "")
	if err != nil {
		return nil, err
	}
	out := make([]Account, 0, n)
	for i := 0; i < n; i++ {
		key, err := DeriveKey(seed, fmt.Sprintf("m/44'/60'/0'/0/%d", i))
		if err != nil {
			return nil, err
		}
		out = append(out, Account{Address: crypto.PubkeyToAddress(key.PublicKey), Key: key})
	}
	return out, nil
}

// Seed is the BIP-39 seed: PBKDF2-HMAC-SHA512(mnemonic, "mnemonic" +
// passphrase, 2048 iterations, 64 bytes). The mnemonic is used as given
// (words separated by single spaces); its checksum is not verified.
func Seed(mnemonic, passphrase string) ([]byte, error) {
	return pbkdf2.Key(sha512.New, strings.Join(strings.Fields(mnemonic), " "), []byte("mnemonic"+passphrase), 2048, 64)
}

// DeriveKey derives the private key at path (e.g. "m/44'/60'/0'/0/0") from
// a BIP-32 master seed on secp256k1.
func DeriveKey(seed []byte, path string) (*ecdsa.PrivateKey, error) {
	parts := strings.Split(path, "/")
	if len(parts) == 0 || parts[0] != "m" {
		return nil, fmt.Errorf("derivation path %q must start with m/", path)
	}
	mac := hmac.New(sha512.New, []byte("Bitcoin seed"))
	mac.Write(seed)
	I := mac.Sum(nil)
	key, chainCode := new(big.Int).SetBytes(I[:32]), I[32:]
	n := crypto.S256().Params().N
	if key.Sign() == 0 || key.Cmp(n) >= 0 {
		return nil, errors.New("invalid master key")
	}
	for _, p := range parts[1:] {
		hardened := strings.HasSuffix(p, "'")
		idx, err := strconv.ParseUint(strings.TrimSuffix(p, "'"), 10, 31)
		if err != nil {
			return nil, fmt.Errorf("derivation path %q: bad index %q", path, p)
		}
		index := uint32(idx)
		var data []byte
		if hardened {
			index |= 1 << 31
			data = append([]byte{0}, common.LeftPadBytes(key.Bytes(), 32)...)
		} else {
			priv, err := crypto.ToECDSA(common.LeftPadBytes(key.Bytes(), 32))
			if err != nil {
				return nil, err
			}
			data = crypto.CompressPubkey(&priv.PublicKey)
		}
		data = binary.BigEndian.AppendUint32(data, index)
		mac := hmac.New(sha512.New, chainCode)
		mac.Write(data)
		I := mac.Sum(nil)
		il := new(big.Int).SetBytes(I[:32])
		if il.Cmp(n) >= 0 {
			return nil, fmt.Errorf("derivation path %q: invalid child at %s (try the next index)", path, p)
		}
		child := new(big.Int).Add(il, key)
		child.Mod(child, n)
		if child.Sign() == 0 {
			return nil, fmt.Errorf("derivation path %q: invalid child at %s (try the next index)", path, p)
		}
		key, chainCode = child, I[32:]
	}
	return crypto.ToECDSA(common.LeftPadBytes(key.Bytes(), 32))
}

// ChainConfig is the config of tipnode's dev chains (the dev genesis and
// the benchmark chain of cmd/benchgeth): every fork through Osaka active
// at block 0 / time 0, post-merge from genesis (terminal total difficulty
// 0), blob schedules for Cancun and Prague (go-ethereum's Osaka keeps
// Prague's blob parameters).
func ChainConfig(chainID *big.Int) *params.ChainConfig {
	zero := uint64(0)
	return &params.ChainConfig{
		ChainID:                 new(big.Int).Set(chainID),
		HomesteadBlock:          big.NewInt(0),
		EIP150Block:             big.NewInt(0),
		EIP155Block:             big.NewInt(0),
		EIP158Block:             big.NewInt(0),
		ByzantiumBlock:          big.NewInt(0),
		ConstantinopleBlock:     big.NewInt(0),
		PetersburgBlock:         big.NewInt(0),
		IstanbulBlock:           big.NewInt(0),
		MuirGlacierBlock:        big.NewInt(0),
		BerlinBlock:             big.NewInt(0),
		LondonBlock:             big.NewInt(0),
		ArrowGlacierBlock:       big.NewInt(0),
		GrayGlacierBlock:        big.NewInt(0),
		MergeNetsplitBlock:      big.NewInt(0),
		ShanghaiTime:            &zero,
		CancunTime:              &zero,
		PragueTime:              &zero,
		OsakaTime:               &zero,
		TerminalTotalDifficulty: big.NewInt(0),
		DepositContractAddress:  common.Address{},
		BlobScheduleConfig: &params.BlobScheduleConfig{
			Cancun: params.DefaultCancunBlobConfig,
			Prague: params.DefaultPragueBlobConfig,
		},
	}
}

// SystemContracts is a genesis alloc holding the four system contracts a
// chain with Prague at genesis needs (EIP-4788 beacon roots, EIP-2935
// history storage, EIP-7002 withdrawal and EIP-7251 consolidation queues),
// as go-ethereum deploys them.
func SystemContracts() types.GenesisAlloc {
	return types.GenesisAlloc{
		params.BeaconRootsAddress:        {Nonce: 1, Code: params.BeaconRootsCode, Balance: common.Big0},
		params.HistoryStorageAddress:     {Nonce: 1, Code: params.HistoryStorageCode, Balance: common.Big0},
		params.WithdrawalQueueAddress:    {Nonce: 1, Code: params.WithdrawalQueueCode, Balance: common.Big0},
		params.ConsolidationQueueAddress: {Nonce: 1, Code: params.ConsolidationQueueCode, Balance: common.Big0},
	}
}

// GenesisConfig describes the dev genesis.
type GenesisConfig struct {
	ChainID   uint64
	Accounts  []common.Address
	Balance   *big.Int // per account; default 10,000 ETH
	GasLimit  uint64   // default 60,000,000
	Timestamp uint64
}

// Genesis returns the dev genesis JSON (go-ethereum's format): ChainConfig
// for c.ChainID, base fee 1 gwei, the accounts prefunded and the
// SystemContracts deployed.
func Genesis(c GenesisConfig) ([]byte, error) {
	if c.ChainID == 0 {
		return nil, errors.New("dev genesis: chain id must be > 0")
	}
	if c.Balance == nil {
		c.Balance = new(big.Int).Mul(big.NewInt(10_000), big.NewInt(params.Ether))
	}
	if c.GasLimit == 0 {
		c.GasLimit = 60_000_000
	}
	cfg := ChainConfig(new(big.Int).SetUint64(c.ChainID))
	alloc := SystemContracts()
	for _, a := range c.Accounts {
		alloc[a] = types.Account{Balance: new(big.Int).Set(c.Balance)}
	}
	g := &core.Genesis{
		Config:     cfg,
		Timestamp:  c.Timestamp,
		ExtraData:  []byte("tipnode dev"),
		GasLimit:   c.GasLimit,
		Difficulty: big.NewInt(0),
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Alloc:      alloc,
	}
	return json.MarshalIndent(g, "", "  ")
}
