package preset

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain"
)

//go:embed chains/*.json
var files embed.FS

// Preset is one chain's preset (see the package doc).
type Preset struct {
	// Name is what --chain takes; Aliases are other accepted names
	// (op-geth's --op-network names).
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	// OPGethNetwork is the chain's name for op-geth's --op-network
	// (geth --op-network NAME dumpgenesis writes its genesis file).
	OPGethNetwork string `json:"opGethNetwork"`
	Title         string `json:"title"`
	// Network is the L1 the chain settles on: mainnet or sepolia.
	Network string `json:"network"`
	// Sources says where each number comes from.
	Sources map[string]string `json:"sources"`
	// PublicRPC is the chain's public JSON-RPC endpoint in the registry
	// (a light upstream: it may not serve old state).
	PublicRPC string `json:"publicRpc"`
	BlockTime uint64 `json:"blockTime"`
	// Start is the first block the chain's execution rules run: block 0,
	// or the Bedrock block of a chain with legacy history (OP Mainnet).
	Start struct {
		Number uint64      `json:"number"`
		Hash   common.Hash `json:"hash"`
		Time   uint64      `json:"time"`
	} `json:"start"`
	// Config is the chain config in op-geth's genesis format.
	Config json.RawMessage `json:"config"`
	// Predeploys are the predeploy addresses by contract name.
	Predeploys map[string]common.Address `json:"predeploys"`

	chainID uint64
}

// ChainID is the preset's chain id.
func (p *Preset) ChainID() uint64 { return p.chainID }

// StartsAtGenesis reports a chain whose execution starts at block 0 (its
// genesis file can be initialised); false for OP Mainnet.
func (p *Preset) StartsAtGenesis() bool { return p.Start.Number == 0 }

// All returns every embedded preset, by name, each parsed and validated.
func All() ([]*Preset, error) {
	entries, err := files.ReadDir("chains")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPreset, err)
	}
	var out []*Preset
	seen := map[string]string{}
	for _, e := range entries {
		raw, err := files.ReadFile(path.Join("chains", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPreset, err)
		}
		p, err := parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrPreset, e.Name(), err)
		}
		if p.Name+".json" != e.Name() {
			return nil, fmt.Errorf("%w: %s names itself %q", ErrPreset, e.Name(), p.Name)
		}
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			if other, dup := seen[n]; dup {
				return nil, fmt.Errorf("%w: name %q of %s is also %s's", ErrPreset, n, p.Name, other)
			}
			seen[n] = p.Name
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func parse(raw []byte) (*Preset, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	p := new(Preset)
	if err := dec.Decode(p); err != nil {
		return nil, err
	}
	g, err := chain.ParseChainConfig(p.Config)
	if err != nil {
		return nil, err
	}
	if g.OP == nil {
		return nil, fmt.Errorf("config has no \"optimism\" object")
	}
	if g.OP.BedrockBlock.Uint64() != p.Start.Number {
		return nil, fmt.Errorf("start block %d, config's bedrockBlock %v", p.Start.Number, g.OP.BedrockBlock)
	}
	if p.Start.Hash == (common.Hash{}) {
		return nil, fmt.Errorf("no start block hash")
	}
	p.chainID = g.Config.ChainID.Uint64()
	return p, nil
}

// Names lists the presets' names (not the aliases).
func Names() []string {
	all, err := All()
	if err != nil {
		return nil
	}
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name
	}
	return names
}

// Lookup returns the preset called name (or one of its aliases); an
// unknown name is ErrUnknown listing the presets.
func Lookup(name string) (*Preset, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
		for _, a := range p.Aliases {
			if a == name {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("%w %q: the presets are %s", ErrUnknown, name, strings.Join(Names(), ", "))
}

// ByChainID returns the preset of chain id (nil when no preset has it).
func ByChainID(id uint64) (*Preset, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if p.chainID == id {
			return p, nil
		}
	}
	return nil, nil
}

// Genesis is the preset's chain as a Genesis without a block (chain
// config and OP part: what an init at a recent block needs).
func (p *Preset) Genesis() (*chain.Genesis, error) {
	g, err := chain.ParseGenesisConfig(p.Spec())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPreset, p.Name, err)
	}
	return g, nil
}

// Spec is a genesis spec holding only the preset's chain config (for an
// init at a recent block, whose state comes from elsewhere).
func (p *Preset) Spec() []byte {
	spec, _ := json.Marshal(map[string]json.RawMessage{"config": p.Config})
	return spec
}

// derivationOnly are chain-config members op-geth does not read and that a
// genesis file may carry or not without being another chain.
var derivationOnly = map[string]bool{"deltaTime": true}

// CheckConfig checks that rawConfig (a genesis file's "config") is the
// preset's chain config, member by member (numbers by value); the error
// names the first member that differs and both values.
func (p *Preset) CheckConfig(rawConfig json.RawMessage) error {
	var given, want map[string]any
	if err := decodeNumbers(rawConfig, &given); err != nil {
		return fmt.Errorf("%w %s: the chain config is not a JSON object: %v", ErrMismatch, p.Name, err)
	}
	if err := decodeNumbers(p.Config, &want); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrPreset, p.Name, err)
	}
	// Another chain is named as such first.
	if id, ok := given["chainId"]; !ok || !sameValue(id, want["chainId"]) {
		return fmt.Errorf("%w: config.chainId is %s: not chain %d, --chain %s", ErrMismatch, show(id, ok), p.chainID, p.Name)
	}
	return p.compare("", given, want)
}

func decodeNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func (p *Preset) compare(prefix string, given, want map[string]any) error {
	keys := map[string]bool{}
	for k := range given {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if prefix == "" && derivationOnly[k] {
			continue
		}
		g, gok := given[k]
		w, wok := want[k]
		if gm, ok := g.(map[string]any); ok {
			if wm, ok := w.(map[string]any); ok {
				if err := p.compare(prefix+k+".", gm, wm); err != nil {
					return err
				}
				continue
			}
		}
		if gok && wok && sameValue(g, w) {
			continue
		}
		return fmt.Errorf("%w %s (chain %d): config.%s%s is %s, the preset's is %s", ErrMismatch, p.Name, p.chainID, prefix, k, show(g, gok), show(w, wok))
	}
	return nil
}

func sameValue(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		return an.String() == bn.String()
	}
	if as, ok := a.(string); ok {
		if bs, ok := b.(string); ok {
			return strings.EqualFold(as, bs)
		}
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func show(v any, ok bool) string {
	if !ok {
		return "absent"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// CheckChainID checks that an upstream or store of chain id is the
// preset's chain.
func (p *Preset) CheckChainID(what string, id uint64) error {
	if id != p.chainID {
		return fmt.Errorf("%w: %s is chain %d, --chain %s is chain %d", ErrMismatch, what, id, p.Name, p.chainID)
	}
	return nil
}

// CheckGenesisHash checks block 0's hash against the preset's (a chain
// that starts at genesis); nil for a chain with legacy history, whose
// preset gives its Bedrock block instead.
func (p *Preset) CheckGenesisHash(what string, h common.Hash) error {
	if !p.StartsAtGenesis() || h == p.Start.Hash {
		return nil
	}
	return fmt.Errorf("%w: %s has genesis %s, --chain %s (chain %d) has %s", ErrMismatch, what, h.Hex(), p.Name, p.chainID, p.Start.Hash.Hex())
}
