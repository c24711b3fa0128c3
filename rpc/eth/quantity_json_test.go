package eth

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
)

// The hand-encoded answers of eth_chainId and eth_blockNumber are what
// encoding/json makes of go-ethereum's hexutil types.
func TestQuantityJSONMatchesHexutil(t *testing.T) {
	for _, n := range []uint64{0, 1, 9, 10, 15, 16, 255, 256, 1337, 7357, 1 << 32, math.MaxUint64} {
		want, err := json.Marshal(hexutil.Uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		if got := uint64JSON(n); string(got) != string(want) {
			t.Errorf("uint64JSON(%d) = %s, want %s", n, got, want)
		}
		b := new(big.Int).SetUint64(n)
		b.Lsh(b, 70) // beyond 64 bits as well
		for _, v := range []*big.Int{new(big.Int).SetUint64(n), b} {
			want, err := json.Marshal((*hexutil.Big)(v))
			if err != nil {
				t.Fatal(err)
			}
			if got := quantityJSON(v); string(got) != string(want) {
				t.Errorf("quantityJSON(%v) = %s, want %s", v, got, want)
			}
		}
	}
	want, _ := json.Marshal((*hexutil.Big)(nil))
	if got := quantityJSON(nil); string(got) != string(want) {
		t.Errorf("quantityJSON(nil) = %s, want %s", got, want)
	}
}
