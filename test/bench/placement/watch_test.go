package placement

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// satisfiedWatch follows the Placements and notes when the first and the last of them is
// satisfied.
type satisfiedWatch struct {
	mu          sync.Mutex
	satisfied   map[string]bool
	want        int
	first, last time.Time
	done        chan struct{}
	lister      func() []*clusterv1beta1.Placement
	stop        func()
}

func (w *satisfiedWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.satisfied)
}

func (w *satisfiedWatch) observe(obj any) {
	p, ok := obj.(*clusterv1beta1.Placement)
	if !ok || !meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	if w.satisfied[key] || len(w.satisfied) == w.want {
		return
	}
	if len(w.satisfied) == 0 {
		w.first = now
	}
	w.satisfied[key] = true
	if len(w.satisfied) == w.want {
		w.last = now
		close(w.done)
	}
}

func watchSatisfied(ctx context.Context, cfg *rest.Config, want int) (*satisfiedWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := clusterinformers.NewSharedInformerFactory(clusterclient.NewForConfigOrDie(cfg), 0)
	informer := factory.Cluster().V1beta1().Placements()
	w := &satisfiedWatch{satisfied: map[string]bool{}, want: want, done: make(chan struct{}),
		stop: func() { cancel(); factory.Shutdown() }}
	w.lister = func() []*clusterv1beta1.Placement {
		list, _ := informer.Lister().List(labels.Everything())
		return list
	}
	if _, err := informer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("placement cache did not sync")
		}
	}
	// A list served from the API server's watch cache may not show the newest creates yet.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(w.lister()) == want, nil
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("%d placements in the cache, want %d: %w", len(w.lister()), want, err)
	}
	return w, nil
}
