package inventory

import (
	"hash/maphash"
)

// podIndex finds the pods of a Cluster by namespace and name. It is a hash
// table specialised for what a full build does most, inserting tens of
// thousands of new pods: records are kept densely in fixed-size chunks that
// are never copied, and the table holds only a hash tag and a record index
// per slot, so an insert probes a small pointer-free array that mostly stays
// in cache, growing it never reads the keys again, and looking a pod up
// hashes its name once.
//
// The table uses linear probing at a load of at most 3/4, with backward-shift
// deletion so it has no tombstones.
type podIndex struct {
	seed   maphash.Seed
	chunks [][]podRecord // each of chunkSize records, all full but the last
	n      int           // records held
	// slots are 0 when empty, else the key's tag (the high 32 bits of its
	// hash) in the high half and the record's index + 1 in the low half. A
	// key's probe starts at tag & mask.
	slots []uint64
	mask  uint32
}

type podRecord struct {
	namespace, name string
	podEntry
}

const chunkSize = 1024

func newPodIndex() *podIndex {
	return &podIndex{seed: maphash.MakeSeed()}
}

// Len returns the number of pods indexed.
func (x *podIndex) Len() int { return x.n }

// record returns record i.
func (x *podIndex) record(i int) *podRecord {
	return &x.chunks[i/chunkSize][i%chunkSize]
}

func (x *podIndex) tag(namespace, name string) uint32 {
	h := maphash.String(x.seed, name) ^ (maphash.String(x.seed, namespace) * 0x9e3779b97f4a7c15)
	return uint32(h >> 32)
}

// find returns the record of namespace/name, or nil.
func (x *podIndex) find(namespace, name string) *podRecord {
	if len(x.slots) == 0 {
		return nil
	}
	_, i := x.probe(x.tag(namespace, name), namespace, name)
	if i < 0 {
		return nil
	}
	return x.record(i)
}

// probe returns the slot holding namespace/name and its record index, or
// the empty slot where the probe ended and -1.
func (x *podIndex) probe(tag uint32, namespace, name string) (slot uint32, record int) {
	for s := tag & x.mask; ; s = (s + 1) & x.mask {
		v := x.slots[s]
		if v == 0 {
			return s, -1
		}
		if uint32(v>>32) == tag {
			i := int(uint32(v)) - 1
			if r := x.record(i); r.name == name && r.namespace == namespace {
				return s, i
			}
		}
	}
}

// upsert returns the record of namespace/name and true, or adds one with
// an empty podEntry and returns it and false. The record is valid until the
// index next changes.
func (x *podIndex) upsert(namespace, name string) (*podRecord, bool) {
	tag := x.tag(namespace, name)
	var s uint32
	if len(x.slots) > 0 {
		var i int
		if s, i = x.probe(tag, namespace, name); i >= 0 {
			return x.record(i), true
		}
	}
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
		s, _ = x.probe(tag, namespace, name)
	}
	if x.n%chunkSize == 0 && x.n/chunkSize == len(x.chunks) {
		x.chunks = append(x.chunks, make([]podRecord, chunkSize))
	}
	r := x.record(x.n)
	*r = podRecord{namespace: namespace, name: name}
	x.n++
	x.slots[s] = uint64(tag)<<32 | uint64(x.n)
	return r, false
}

// grow doubles the table and places every record again by its tag.
func (x *podIndex) grow() {
	n := max(16, 2*len(x.slots))
	old := x.slots
	x.slots = make([]uint64, n)
	x.mask = uint32(n - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		s := uint32(v>>32) & x.mask
		for x.slots[s] != 0 {
			s = (s + 1) & x.mask
		}
		x.slots[s] = v
	}
}

// remove forgets namespace/name if it is indexed, and returns what it was.
func (x *podIndex) remove(namespace, name string) (podEntry, bool) {
	if len(x.slots) == 0 {
		return podEntry{}, false
	}
	s, i := x.probe(x.tag(namespace, name), namespace, name)
	if i < 0 {
		return podEntry{}, false
	}
	e := x.record(i).podEntry
	x.deleteSlot(s)
	// Move the last record into the hole and repoint its slot.
	last := x.n - 1
	if i != last {
		r := *x.record(last)
		ls, _ := x.probe(x.tag(r.namespace, r.name), r.namespace, r.name)
		*x.record(i) = r
		x.slots[ls] = x.slots[ls]&^0xffffffff | uint64(i+1)
	}
	*x.record(last) = podRecord{}
	x.n--
	// Keep at most one empty chunk, so that a pod going and coming at a
	// chunk boundary does not allocate every time.
	if n := (x.n + chunkSize - 1) / chunkSize; len(x.chunks) > n+1 {
		clear(x.chunks[n+1:])
		x.chunks = x.chunks[:n+1]
	}
	return e, true
}

// deleteSlot empties slot s and shifts later members of its probe run back
// so that every key stays reachable from its starting slot (Knuth's
// Algorithm R for linear probing).
func (x *podIndex) deleteSlot(s uint32) {
	for {
		x.slots[s] = 0
		j := s
		for {
			j = (j + 1) & x.mask
			v := x.slots[j]
			if v == 0 {
				return
			}
			home := uint32(v>>32) & x.mask
			// The key at j may stay unless the hole at s lies cyclically
			// between its home and j.
			if s <= j {
				if s < home && home <= j {
					continue
				}
			} else if s < home || home <= j {
				continue
			}
			x.slots[s] = v
			s = j
			break
		}
	}
}
