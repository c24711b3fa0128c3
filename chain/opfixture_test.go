package chain_test

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/chain/op/optest"
)

// The kona fixtures' parent state is a chain.Backend.
var _ chain.Backend = (*optest.State)(nil)

// TestOPFixtureBackend reads the L1Block predeploy of a real OP Sepolia
// parent state through chain's StateDB, the path block execution takes; a
// fixture whose preimages lack the code makes the StateDB report an error.
func TestOPFixtureBackend(t *testing.T) {
	f := optest.Load(t, optest.Blocks()[0])
	s := chain.NewStateDB(f.State())
	code := s.GetCode(optest.L1Block)
	if len(code) == 0 || crypto.Keccak256Hash(code) != s.GetCodeHash(optest.L1Block) || s.GetState(optest.L1Block, common.Hash{}) == (common.Hash{}) {
		t.Fatalf("L1Block: %d bytes of code, slot 0 %s, err %v", len(code), s.GetState(optest.L1Block, common.Hash{}), s.Error())
	}
	if err := s.Error(); err != nil {
		t.Fatal(err)
	}
	delete(f.Preimages, s.GetCodeHash(optest.L1Block))
	s = chain.NewStateDB(f.State())
	if s.GetCode(optest.L1Block); s.Error() == nil {
		t.Fatal("code missing from the preimages read without an error")
	}
}
