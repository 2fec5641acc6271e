package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/duradyn/duradyn/provider"
)

// maxTreeDepth bounds the walk up to the root.
const maxTreeDepth = 64

// treeNode is one instance of the tree of parent and sub-orchestrations.
type treeNode struct {
	ID, Name, Status string
	Current          bool
	Children         []*treeNode
	More             int // children not shown
}

// instanceTree returns the tree of info's root, with the path to info
// always shown and at most Options.MaxTreeNodes instances, and how many
// it left out.
func (c *Console) instanceTree(ctx context.Context, info *provider.InstanceInfo) (*treeNode, int, error) {
	path := []string{info.InstanceID}
	for parent := info.ParentInstanceID; parent != "" && len(path) < maxTreeDepth; {
		path = append(path, parent)
		next, err := c.admin.ParentID(ctx, parent)
		if errors.Is(err, provider.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("parent of %s: %w", parent, err)
		}
		parent = next
	}
	slices.Reverse(path)
	onPath := map[string]bool{}
	for _, id := range path {
		onPath[id] = true
	}
	root := &treeNode{ID: path[0]}
	nodes := []*treeNode{root}
	left, budget := 0, c.o.MaxTreeNodes-1
	for level := []*treeNode{root}; len(level) > 0; {
		var next []*treeNode
		for _, n := range level {
			kids, err := c.admin.ListChildren(ctx, n.ID)
			if err != nil {
				return nil, 0, fmt.Errorf("children of %s: %w", n.ID, err)
			}
			slices.Sort(kids)
			for _, k := range kids {
				if budget <= 0 && !onPath[k] {
					n.More++
					left++
					continue
				}
				budget--
				child := &treeNode{ID: k}
				n.Children = append(n.Children, child)
				next = append(next, child)
				nodes = append(nodes, child)
			}
		}
		level = next
	}
	if err := c.describeNodes(ctx, nodes, info.InstanceID); err != nil {
		return nil, 0, err
	}
	return root, left, nil
}

// describeNodes reads each node's name and status, eight at a time.
func (c *Console) describeNodes(ctx context.Context, nodes []*treeNode, current string) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		slots    = make(chan struct{}, 8)
	)
	for _, n := range nodes {
		n.Current = n.ID == current
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			info, err := c.admin.InstanceInfo(ctx, n.ID)
			if errors.Is(err, provider.ErrNotFound) {
				n.Status = "NotFound"
				return
			}
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
				return
			}
			n.Name, n.Status = info.OrchestrationName, displayStatus(info.Status, nil, info.Output)
		})
	}
	wg.Wait()
	return firstErr
}
