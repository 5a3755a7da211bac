package simulate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// objectCount is how many objects a fleet holds, of every kind.
func objectCount(f *Fleet) int {
	n := len(f.Clusters) + len(f.Sets) + len(f.Bindings) + len(f.Scores) + len(f.Inventories) +
		len(f.Decisions) + len(f.Placements) + len(f.Intents) + len(f.Pods)
	for _, nodes := range f.Nodes {
		n += len(nodes)
	}
	for _, groups := range f.MachineGroups {
		n += len(groups)
	}
	return n
}

// streamOf writes a fleet's objects as a JSON stream.
func streamOf(t *testing.T, f *Fleet) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	var objs []any
	for _, o := range f.Clusters {
		objs = append(objs, o)
	}
	for _, o := range f.Sets {
		objs = append(objs, o)
	}
	for _, o := range f.Bindings {
		objs = append(objs, o)
	}
	for _, o := range f.Scores {
		objs = append(objs, o)
	}
	for _, o := range f.Inventories {
		objs = append(objs, o)
	}
	for _, o := range f.Decisions {
		objs = append(objs, o)
	}
	for _, o := range f.Placements {
		objs = append(objs, o)
	}
	for _, o := range f.Intents {
		objs = append(objs, o)
	}
	for _, nodes := range f.Nodes {
		for _, o := range nodes {
			objs = append(objs, o)
		}
	}
	for _, o := range f.Pods {
		objs = append(objs, o)
	}
	for _, groups := range f.MachineGroups {
		for _, o := range groups {
			objs = append(objs, o)
		}
	}
	for _, o := range objs {
		if err := enc.Encode(o); err != nil {
			t.Fatalf("encoding %v: %v", o, err)
		}
	}
	return buf.Bytes()
}

// FuzzDecode: decoding a fleet file never panics; an accepted file has every object it holds
// in the fleet, once, and the fleet written back as a JSON stream reads the same; a refused
// one is told so in a message without control characters (never the raw bytes of the input).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(cluster("c1") + "\n---\n" + gpuNode("c1", "n1", "8", "1")))
	f.Add([]byte(strings.Join(append(poolNodes("c1"), machineGroup("c1", "general-machine", ""),
		machinePod("c1", "fleetfit-agent", "r-0", "reservation", "compute-xlarge", "c1-xl-0")), "\n---\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		fleet := &Fleet{}
		if err := fleet.Decode(t.Context(), bytes.NewReader(data), "fuzz.yaml"); err != nil {
			for _, r := range err.Error() {
				if unicode.IsControl(r) {
					t.Fatalf("the error holds the control character %U: %q", r, err.Error())
				}
			}
			return
		}
		if got, want := objectCount(fleet), len(fleet.places); got != want {
			t.Fatalf("the fleet holds %d objects, but %d were read", got, want)
		}
		again := &Fleet{}
		if err := again.Decode(t.Context(), bytes.NewReader(streamOf(t, fleet)), "again.json"); err != nil {
			t.Fatalf("the accepted objects, written as a JSON stream, are refused: %v", err)
		}
		if diff := cmp.Diff(objectsOf(fleet), objectsOf(again)); diff != "" {
			t.Fatalf("the accepted objects read again (-first,+again):\n%s", diff)
		}
	})
}
