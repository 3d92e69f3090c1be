package track

import (
	"container/heap"
	"sort"
)

// candidate is an actor whose activity is counted (space-saving: when the table is full the
// least active candidate is replaced and the newcomer inherits its count).
type candidate struct {
	hash  uint64
	name  string
	count float64
	index int
}

// candidateHeap is a min-heap on count.
type candidateHeap []*candidate

func (h candidateHeap) Len() int           { return len(h) }
func (h candidateHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h candidateHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *candidateHeap) Push(x any) {
	c := x.(*candidate)
	c.index = len(*h)
	*h = append(*h, c)
}
func (h *candidateHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// actorLabels assigns label values: up to topK actors keep their own name, all others share
// OtherLabel. Assignment is stable: a labelled actor loses its label only on a rebalance, when an
// unlabelled candidate is more than twice as active.
type actorLabels struct {
	topK, maxCandidates int
	minCount            float64
	byHash              map[uint64]*candidate
	heap                candidateHeap
	labels              map[uint64]string
	demotions           uint64
}

func newActorLabels(topK, maxCandidates int, minCount float64) *actorLabels {
	return &actorLabels{
		topK: topK, maxCandidates: maxCandidates, minCount: minCount,
		byHash: make(map[uint64]*candidate, maxCandidates),
		heap:   make(candidateHeap, 0, maxCandidates),
		labels: make(map[uint64]string, topK),
	}
}

// observe counts one request by the actor and returns its label value.
func (a *actorLabels) observe(hash uint64, name string) string {
	c := a.byHash[hash]
	switch {
	case c != nil:
		c.count++
		heap.Fix(&a.heap, c.index)
	case len(a.heap) < a.maxCandidates:
		c = &candidate{hash: hash, name: name, count: 1}
		a.byHash[hash] = c
		heap.Push(&a.heap, c)
	default:
		c = a.heap[0]
		delete(a.byHash, c.hash)
		c.hash, c.name = hash, name
		c.count++
		a.byHash[hash] = c
		heap.Fix(&a.heap, 0)
	}
	if l, ok := a.labels[hash]; ok {
		return l
	}
	if len(a.labels) < a.topK && c.count >= a.minCount {
		a.labels[hash] = name
		return name
	}
	return OtherLabel
}

// label returns the actor's label value without counting.
func (a *actorLabels) label(hash uint64) string {
	if l, ok := a.labels[hash]; ok {
		return l
	}
	return OtherLabel
}

// decay halves every count (heap order is unchanged) and rebalances the labels: while the most
// active unlabelled candidate is more than twice as active as the least active labelled actor,
// they swap. It returns the label values that were taken away.
func (a *actorLabels) decay() (demoted []string) {
	for _, c := range a.heap {
		c.count /= 2
	}
	countOf := func(hash uint64) float64 {
		if c := a.byHash[hash]; c != nil {
			return c.count
		}
		return 0
	}
	var unlabelled []*candidate
	for _, c := range a.heap {
		if _, ok := a.labels[c.hash]; !ok && c.count >= a.minCount {
			unlabelled = append(unlabelled, c)
		}
	}
	sort.Slice(unlabelled, func(i, j int) bool {
		if unlabelled[i].count != unlabelled[j].count {
			return unlabelled[i].count > unlabelled[j].count
		}
		return unlabelled[i].name < unlabelled[j].name
	})
	for _, u := range unlabelled {
		if len(a.labels) < a.topK {
			a.labels[u.hash] = u.name
			continue
		}
		var worst uint64
		worstCount, worstName, found := 0.0, "", false
		for h, name := range a.labels {
			cnt := countOf(h)
			if !found || cnt < worstCount || cnt == worstCount && name > worstName {
				worst, worstCount, worstName, found = h, cnt, name, true
			}
		}
		if !found || u.count <= 2*worstCount {
			break
		}
		delete(a.labels, worst)
		demoted = append(demoted, worstName)
		a.demotions++
		a.labels[u.hash] = u.name
	}
	return demoted
}
