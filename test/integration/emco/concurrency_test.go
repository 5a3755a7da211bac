package emco

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// TestConcurrentPosts: requirements posted at once to one consumer, and consumers posted at
// once to one intent, all land, although each is a read-modify-write of the same HPAIntent.
func TestConcurrentPosts(t *testing.T) {
	const n = 16
	e := newEnv(t, "concurrency")
	c := e.client(editor)
	c.must(http.StatusCreated, http.MethodPost, "", "application/json", `{"metadata": {"name": "busy"}, "spec": {"app": "busy"}}`, nil)

	post := func(path string, body func(i int) string) {
		t.Helper()
		var wg sync.WaitGroup
		codes := make([]int, n)
		bodies := make([]string, n)
		for i := range n {
			wg.Go(func() {
				codes[i], bodies[i] = c.do(context.Background(), http.MethodPost, path, "application/json", []byte(body(i)))
			})
		}
		wg.Wait()
		for i := range n {
			if codes[i] != http.StatusCreated {
				t.Errorf("POST %d to %s: status %d: %s", i, path, codes[i], bodies[i])
			}
		}
	}
	post("/busy/hpa-resource-consumers", func(i int) string {
		return fmt.Sprintf(`{"metadata": {"name": "c%02d"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "c%02d", "container-name": "main"}}}`, i, i)
	})
	post("/busy/hpa-resource-consumers/c00/resource-requirements", func(i int) string {
		// Optional, so that several may ask for the same resource.
		return fmt.Sprintf(`{"metadata": {"name": "r%02d", "description": "requirement %d"}, "spec": {"allocatable": true, "mandatory": false, "weight": %d, "name": "example.com/r%d", "requests": %d}}`, i, i, i%10+1, i, i+1)
	})

	in := e.intent("busy")
	var consumers, requirements []string
	for _, c := range in.Spec.Consumers {
		consumers = append(consumers, c.Name)
		if c.Name != "c00" {
			continue
		}
		for _, r := range c.Requirements {
			requirements = append(requirements, r.Name)
		}
	}
	slices.Sort(consumers)
	slices.Sort(requirements)
	var wantConsumers, wantRequirements []string
	for i := range n {
		wantConsumers = append(wantConsumers, fmt.Sprintf("c%02d", i))
		wantRequirements = append(wantRequirements, fmt.Sprintf("r%02d", i))
	}
	if !slices.Equal(consumers, wantConsumers) {
		t.Errorf("consumers %v, want %v", consumers, wantConsumers)
	}
	if !slices.Equal(requirements, wantRequirements) {
		t.Errorf("requirements of c00 %v, want %v", requirements, wantRequirements)
	}
	// Each requirement's metadata landed with it.
	for i := range n {
		var r struct {
			Metadata struct{ Description string }
		}
		c.must(http.StatusOK, http.MethodGet, fmt.Sprintf("/busy/hpa-resource-consumers/c00/resource-requirements/r%02d", i), "", "", &r)
		if want := fmt.Sprintf("requirement %d", i); r.Metadata.Description != want {
			t.Errorf("r%02d: description %q, want %q", i, r.Metadata.Description, want)
		}
	}
}
