package framework

import "math/bits"

// Bitset is a set of cluster indexes in a Snapshot. Filter results, cluster-set membership
// and existing decisions are all bitsets, so combining them is a few word operations per 64
// clusters instead of map lookups.
type Bitset struct {
	words []uint64
	n     int
}

// NewBitset returns an empty set over n clusters.
func NewBitset(n int) *Bitset {
	return &Bitset{words: make([]uint64, (n+63)/64), n: n}
}

// NewFullBitset returns a set holding every index in [0, n).
func NewFullBitset(n int) *Bitset {
	b := NewBitset(n)
	for i := range b.words {
		b.words[i] = ^uint64(0)
	}
	b.trim()
	return b
}

func (b *Bitset) trim() {
	if r := b.n % 64; r != 0 && len(b.words) > 0 {
		b.words[len(b.words)-1] &= (uint64(1) << r) - 1
	}
}

// Len returns the size of the universe.
func (b *Bitset) Len() int { return b.n }

// Set adds i.
func (b *Bitset) Set(i int) { b.words[i>>6] |= 1 << (uint(i) & 63) }

// Clear removes i.
func (b *Bitset) Clear(i int) { b.words[i>>6] &^= 1 << (uint(i) & 63) }

// Has reports whether i is in the set.
func (b *Bitset) Has(i int) bool {
	if b == nil || i < 0 || i >= b.n {
		return false
	}
	return b.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Count returns the number of members.
func (b *Bitset) Count() int {
	if b == nil {
		return 0
	}
	c := 0
	for _, w := range b.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Clone returns an independent copy.
func (b *Bitset) Clone() *Bitset {
	c := &Bitset{words: make([]uint64, len(b.words)), n: b.n}
	copy(c.words, b.words)
	return c
}

// And keeps only the members also in o.
func (b *Bitset) And(o *Bitset) {
	for i := range b.words {
		b.words[i] &= o.words[i]
	}
}

// Or adds the members of o.
func (b *Bitset) Or(o *Bitset) {
	for i := range b.words {
		b.words[i] |= o.words[i]
	}
}

// AndNot removes the members of o.
func (b *Bitset) AndNot(o *Bitset) {
	for i := range b.words {
		b.words[i] &^= o.words[i]
	}
}

// Equal reports whether both sets hold the same members.
func (b *Bitset) Equal(o *Bitset) bool {
	if b.n != o.n {
		return false
	}
	for i := range b.words {
		if b.words[i] != o.words[i] {
			return false
		}
	}
	return true
}

// ForEach calls fn for each member in increasing order, which is cluster-name order in a
// Snapshot.
func (b *Bitset) ForEach(fn func(i int)) {
	if b == nil {
		return
	}
	for wi, w := range b.words {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			fn(wi<<6 + t)
			w &= w - 1
		}
	}
}

// Indexes returns the members in increasing order.
func (b *Bitset) Indexes() []int {
	out := make([]int, 0, b.Count())
	b.ForEach(func(i int) { out = append(out, i) })
	return out
}
