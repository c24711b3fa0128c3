package optest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// EnvDir names the environment variable that overrides the location of the
// OP reference data (the directory holding kona/; tests only).
const EnvDir = "TIPNODE_OP"

// L1Block is the address of the L1 attributes predeploy, which every
// fixture block's first (L1-info) deposit calls.
var L1Block = common.HexToAddress("0x4200000000000000000000000000000000000015")

// Blocks returns the numbers of the kona fixtures, in order.
func Blocks() []uint64 {
	return []uint64{26207960, 26207961, 26207962, 26207963, 26208384, 26208858, 26211680}
}

// Dir returns the OP reference data directory (../shared/op beside the
// repository, or $TIPNODE_OP) or skips the test.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		if _, err := os.Stat(filepath.Join(d, "kona")); err != nil {
			t.Fatalf("%s=%s: %v", EnvDir, d, err)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			c := filepath.Join(d, "..", "shared", "op")
			if _, err := os.Stat(filepath.Join(c, "kona")); err == nil {
				return c
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skipf("OP reference data not found (expected ../shared/op beside the repository, or set %s): skipping", EnvDir)
	return ""
}

// RollupConfig is the part of kona's rollup configuration the execution
// rules need. Fork times are nil when the file does not give them (kona
// omits unset forks); Raw is the whole object as in fixture.json.
type RollupConfig struct {
	L1ChainID uint64 `json:"l1_chain_id"`
	L2ChainID uint64 `json:"l2_chain_id"`
	BlockTime uint64 `json:"block_time"`

	RegolithTime           *uint64 `json:"regolith_time"`
	CanyonTime             *uint64 `json:"canyon_time"`
	DeltaTime              *uint64 `json:"delta_time"`
	EcotoneTime            *uint64 `json:"ecotone_time"`
	FjordTime              *uint64 `json:"fjord_time"`
	GraniteTime            *uint64 `json:"granite_time"`
	HoloceneTime           *uint64 `json:"holocene_time"`
	PectraBlobScheduleTime *uint64 `json:"pectra_blob_schedule_time"`
	IsthmusTime            *uint64 `json:"isthmus_time"`
	JovianTime             *uint64 `json:"jovian_time"`
	InteropTime            *uint64 `json:"interop_time"`

	ChainOpConfig struct {
		EIP1559Elasticity        uint64 `json:"eip1559Elasticity"`
		EIP1559Denominator       uint64 `json:"eip1559Denominator"`
		EIP1559DenominatorCanyon uint64 `json:"eip1559DenominatorCanyon"`
	} `json:"chain_op_config"`

	Genesis struct {
		L1           BlockID      `json:"l1"`
		L2           BlockID      `json:"l2"`
		L2Time       uint64       `json:"l2_time"`
		SystemConfig SystemConfig `json:"system_config"`
	} `json:"genesis"`

	DepositContractAddress common.Address `json:"deposit_contract_address"`
	L1SystemConfigAddress  common.Address `json:"l1_system_config_address"`
	BatchInboxAddress      common.Address `json:"batch_inbox_address"`

	Raw json.RawMessage `json:"-"`
}

// SystemConfig is the genesis system configuration. The optional fields are
// nil when the file gives null.
type SystemConfig struct {
	BatcherAddr         common.Address `json:"batcherAddr"`
	Overhead            common.Hash    `json:"overhead"`
	Scalar              common.Hash    `json:"scalar"`
	GasLimit            uint64         `json:"gasLimit"`
	BaseFeeScalar       *uint64        `json:"baseFeeScalar"`
	BlobBaseFeeScalar   *uint64        `json:"blobBaseFeeScalar"`
	EIP1559Denominator  *uint64        `json:"eip1559Denominator"`
	EIP1559Elasticity   *uint64        `json:"eip1559Elasticity"`
	OperatorFeeScalar   *uint64        `json:"operatorFeeScalar"`
	OperatorFeeConstant *uint64        `json:"operatorFeeConstant"`
}

// BlockID is a block number and hash.
type BlockID struct {
	Number uint64      `json:"number"`
	Hash   common.Hash `json:"hash"`
}

// Attributes are the payload attributes block N was built from
// (executing_payload). Transactions are in block order: the L1-info deposit,
// user deposits, then sequenced transactions; RawTransactions holds their
// EIP-2718 encodings as given.
type Attributes struct {
	Timestamp             uint64
	PrevRandao            common.Hash
	SuggestedFeeRecipient common.Address
	ParentBeaconBlockRoot *common.Hash
	Transactions          []chaintypes.Tx
	RawTransactions       [][]byte
	GasLimit              uint64
	EIP1559Params         []byte            // 8 bytes (Holocene) or nil when absent
	Withdrawals           types.Withdrawals // nil when absent
	NoTxPool              bool
}

type attributesJSON struct {
	Timestamp             hexutil.Uint64    `json:"timestamp"`
	PrevRandao            common.Hash       `json:"prevRandao"`
	SuggestedFeeRecipient common.Address    `json:"suggestedFeeRecipient"`
	ParentBeaconBlockRoot *common.Hash      `json:"parentBeaconBlockRoot"`
	Transactions          []hexutil.Bytes   `json:"transactions"`
	GasLimit              *hexutil.Uint64   `json:"gasLimit"`
	EIP1559Params         *hexutil.Bytes    `json:"eip1559Params"`
	Withdrawals           types.Withdrawals `json:"withdrawals"`
	NoTxPool              bool              `json:"noTxPool"`
}

// Fixture is one kona stateless-execution fixture: block Number built on
// Parent from Attributes must hash to ExpectedHash. Preimages holds the
// trie nodes of the parent state the block touches and the code it runs,
// keyed by keccak256.
type Fixture struct {
	Number       uint64
	Rollup       RollupConfig
	Parent       *types.Header
	Attributes   Attributes
	ExpectedHash common.Hash
	Preimages    map[common.Hash][]byte
}

// Load reads ../shared/op/kona/block-N.tar.gz (skipping the test when the
// data is absent) and parses it with Parse. When the fixture of block N-1
// is also there, its expected hash must be the hash of this fixture's
// parent header, which checks the header decoding field by field.
func Load(t testing.TB, block uint64) *Fixture {
	t.Helper()
	dir := filepath.Join(Dir(t), "kona")
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("block-%d.tar.gz", block)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data, block)
	if err != nil {
		t.Fatalf("fixture %d: %v", block, err)
	}
	if err := checkParentHash(dir, f); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkParentHash compares the hash of f's parent header with the expected
// hash of the fixture of block N-1 in dir, when that fixture exists.
func checkParentHash(dir string, f *Fixture) error {
	prev, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("block-%d.tar.gz", f.Number-1)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	js, _, err := untar(prev, f.Number-1, false)
	if err != nil {
		return fmt.Errorf("fixture %d: %w", f.Number-1, err)
	}
	var top struct {
		Expected common.Hash `json:"expected_block_hash"`
	}
	if err := json.Unmarshal(js, &top); err != nil {
		return fmt.Errorf("%w: fixture %d: %v", ErrFixture, f.Number-1, err)
	}
	if got := f.Parent.Hash(); got != top.Expected {
		return fmt.Errorf("%w: fixture %d: parent header hashes to %s, fixture %d expects %s", ErrFixture, f.Number, got, f.Number-1, top.Expected)
	}
	return nil
}

// Parse reads a fixture archive: a plain tar holding block-N/fixture.json
// and block-N/kv/000004.log (other members, such as RocksDB bookkeeping
// and macOS "._" metadata, are ignored). It checks that the parent header
// is block N-1 and that the preimages hold the parent state root's node.
func Parse(archive []byte, block uint64) (*Fixture, error) {
	js, log, err := untar(archive, block, true)
	if err != nil {
		return nil, err
	}
	var top struct {
		Rollup   json.RawMessage `json:"rollup_config"`
		Parent   json.RawMessage `json:"parent_header"`
		Payload  json.RawMessage `json:"executing_payload"`
		Expected *common.Hash    `json:"expected_block_hash"`
	}
	if err := strictUnmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%w: fixture.json: %v", ErrFixture, err)
	}
	if top.Rollup == nil || top.Parent == nil || top.Payload == nil || top.Expected == nil {
		return nil, fmt.Errorf("%w: fixture.json lacks one of rollup_config, parent_header, executing_payload, expected_block_hash", ErrFixture)
	}
	f := &Fixture{Number: block, ExpectedHash: *top.Expected}
	if err := json.Unmarshal(top.Rollup, &f.Rollup); err != nil {
		return nil, fmt.Errorf("%w: rollup_config: %v", ErrFixture, err)
	}
	f.Rollup.Raw = top.Rollup
	f.Parent = new(types.Header)
	if err := json.Unmarshal(top.Parent, f.Parent); err != nil {
		return nil, fmt.Errorf("%w: parent_header: %v", ErrFixture, err)
	}
	if f.Parent.Number == nil || f.Parent.Number.Uint64() != block-1 || !f.Parent.Number.IsUint64() {
		return nil, fmt.Errorf("%w: parent_header is block %v, want %d", ErrFixture, f.Parent.Number, block-1)
	}
	if f.Attributes, err = parseAttributes(top.Payload); err != nil {
		return nil, err
	}
	if f.Preimages, err = Preimages(log); err != nil {
		return nil, fmt.Errorf("%w: kv/000004.log: %w", ErrFixture, err)
	}
	if _, ok := f.Preimages[f.Parent.Root]; !ok {
		return nil, fmt.Errorf("%w: parent state root %s: %w", ErrFixture, f.Parent.Root, ErrMissing)
	}
	return f, nil
}

func parseAttributes(raw json.RawMessage) (Attributes, error) {
	var a attributesJSON
	if err := strictUnmarshal(raw, &a); err != nil {
		return Attributes{}, fmt.Errorf("%w: executing_payload: %v", ErrFixture, err)
	}
	if a.GasLimit == nil {
		return Attributes{}, fmt.Errorf("%w: executing_payload has no gasLimit", ErrFixture)
	}
	out := Attributes{
		Timestamp:             uint64(a.Timestamp),
		PrevRandao:            a.PrevRandao,
		SuggestedFeeRecipient: a.SuggestedFeeRecipient,
		ParentBeaconBlockRoot: a.ParentBeaconBlockRoot,
		GasLimit:              uint64(*a.GasLimit),
		Withdrawals:           a.Withdrawals,
		NoTxPool:              a.NoTxPool,
	}
	if a.EIP1559Params != nil {
		if len(*a.EIP1559Params) != 8 {
			return Attributes{}, fmt.Errorf("%w: executing_payload eip1559Params is %d bytes, want 8", ErrFixture, len(*a.EIP1559Params))
		}
		out.EIP1559Params = *a.EIP1559Params
	}
	for i, enc := range a.Transactions {
		tx, err := chaintypes.DecodeTx(enc)
		if err != nil {
			return Attributes{}, fmt.Errorf("%w: executing_payload transaction %d: %w", ErrFixture, i, err)
		}
		out.Transactions = append(out.Transactions, tx)
		out.RawTransactions = append(out.RawTransactions, enc)
	}
	return out, nil
}

// strictUnmarshal decodes one JSON value, refusing unknown fields (so a
// payload field this harness would silently drop is noticed).
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// untar returns block-N/fixture.json and (when withLog) block-N/kv/000004.log.
func untar(archive []byte, block uint64, withLog bool) (js, log []byte, err error) {
	prefix := fmt.Sprintf("block-%d/", block)
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: tar: %v", ErrFixture, err)
		}
		var dst *[]byte
		switch h.Name {
		case prefix + "fixture.json":
			dst = &js
		case prefix + "kv/000004.log":
			if !withLog {
				continue
			}
			dst = &log
		default:
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, nil, fmt.Errorf("%w: %s is not a regular file", ErrFixture, h.Name)
		}
		if *dst, err = io.ReadAll(tr); err != nil {
			return nil, nil, fmt.Errorf("%w: tar %s: %v", ErrFixture, h.Name, err)
		}
	}
	if js == nil {
		return nil, nil, fmt.Errorf("%w: archive has no %sfixture.json", ErrFixture, prefix)
	}
	if withLog && log == nil {
		return nil, nil, fmt.Errorf("%w: archive has no %skv/000004.log", ErrFixture, prefix)
	}
	return js, log, nil
}
