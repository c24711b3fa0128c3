package main
import ("os";"testing")
func TestZZWriteGenesis(t *testing.T){ os.WriteFile("/tmp/opg/genesis.json", newOPDiffSpec(1000).genesisJSON(), 0o644) }
