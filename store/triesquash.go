package store

import (
	"bytes"
	"fmt"
	"maps"

	"github.com/ethereum/go-ethereum/common"
)

// SquashTrieUpdates returns one update equal to ups applied in order, each
// computed on the trie of the one before it (ups[i] was computed on the
// same height and updates as ups[0], with ups[:i] above them: a pending
// block's pre-confirmations, StateTrie.On(ups[:i]...).Update). The result
// applies where ups[0] does: every node's last version, the storage roots
// each update last reported, the last root. A version that leaves its node
// as ups[0] found it (a node written and then put back, or made and
// deleted again) is dropped: a read falls through to the same node. So the
// squash of a block's pre-confirmations writes the node versions a single
// update of the block's whole diff writes that change a node (the single
// update may also write a node again unchanged).
//
// Nothing of ups is modified (snapshots still read through them).
func SquashTrieUpdates(ups ...*TrieUpdate) (*TrieUpdate, error) {
	if len(ups) == 0 {
		return nil, fmt.Errorf("squash no trie updates")
	}
	first := ups[0]
	if len(ups) == 1 {
		return first, nil
	}
	for i, u := range ups {
		if i > 0 {
			if err := checkOnUpdates(u, first, ups[:i]); err != nil {
				return nil, fmt.Errorf("squash trie update %d of %d: %w", i, len(ups), err)
			}
		}
	}
	// The first update's maps are cloned whole (a table copy, not an
	// insert per node), the later ones laid over them.
	out := &TrieUpdate{
		Root:         ups[len(ups)-1].Root,
		Parent:       first.Parent,
		under:        first.under,
		nodes:        maps.Clone(first.nodes),
		origins:      maps.Clone(first.origins),
		storageRoots: maps.Clone(first.storageRoots),
		clean:        true,
	}
	if out.nodes == nil {
		out.nodes, out.origins = make(map[string]trieNode), make(map[string][]byte)
	}
	if out.storageRoots == nil {
		out.storageRoots = make(map[common.Address]common.Hash)
	}
	for _, u := range ups[1:] {
		for k, nd := range u.nodes {
			if _, seen := out.nodes[k]; !seen {
				out.origins[k] = u.origins[k]
			}
			out.nodes[k] = nd
		}
		maps.Copy(out.storageRoots, u.storageRoots)
	}
	if !first.clean {
		dropUnchanged(out, first.nodes)
	}
	for _, u := range ups[1:] {
		dropUnchanged(out, u.nodes)
	}
	return out, nil
}

// dropUnchanged drops from out the versions of the entities of keys that
// leave their node as out's origin has it.
func dropUnchanged(out *TrieUpdate, keys map[string]trieNode) {
	for k := range keys {
		nd, ok := out.nodes[k]
		if ok && bytes.Equal(nd.blob, out.origins[k]) { // stored nodes are never empty: nil = nil only
			delete(out.nodes, k)
			delete(out.origins, k)
		}
	}
}

// checkOnUpdates checks that u was computed on first's trie with prev
// above it.
func checkOnUpdates(u, first *TrieUpdate, prev []*TrieUpdate) error {
	if u.Parent != first.Parent || len(u.under) != len(first.under)+len(prev) {
		return fmt.Errorf("applies on %d with %d updates above, not on %d with %d", u.Parent, len(u.under), first.Parent, len(first.under)+len(prev))
	}
	for i, w := range first.under {
		if u.under[i] != w {
			return fmt.Errorf("computed on other updates than the first")
		}
	}
	for i, w := range prev {
		if u.under[len(first.under)+i] != w {
			return fmt.Errorf("not computed on the updates before it")
		}
	}
	return nil
}
