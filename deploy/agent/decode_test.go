package agent_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// decodeAll decodes every document of manifests into typed objects.
func decodeAll(t *testing.T, manifests ...[]byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for _, m := range manifests {
		r := utilyaml.NewYAMLReader(bufioReader(m))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("decoding %s: %v", doc, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func find[T runtime.Object](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if typed, ok := o.(T); ok {
			if m, ok := any(typed).(interface{ GetName() string }); ok && m.GetName() == name {
				return typed
			}
		}
	}
	var zero T
	t.Fatalf("no %T %s", zero, name)
	return zero
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
