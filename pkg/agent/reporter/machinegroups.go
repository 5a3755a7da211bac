package reporter

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

// machineGroups follows the spoke's MachineGroups for the report. It starts
// only when the spoke serves them; until its cache has synced, and when the
// spoke does not serve them, the report has no machine groups.
type machineGroups struct {
	client  fleetfitclient.Interface
	factory fleetfitinformers.SharedInformerFactory
	lister  fleetfitlisters.MachineGroupLister
	synced  cache.InformerSynced
	started bool
}

func newMachineGroups(client fleetfitclient.Interface, enqueue func()) (*machineGroups, error) {
	m := &machineGroups{client: client, factory: fleetfitinformers.NewSharedInformerFactory(client, 0)}
	gi := m.factory.Fleetfit().V1alpha1().MachineGroups()
	if err := gi.Informer().SetTransform(stripManagedFields); err != nil {
		return nil, fmt.Errorf("setting informer transform: %w", err)
	}
	// What is reported of a group is its spec and status; the controllers'
	// status writes are what moves the usage.
	if _, err := gi.Informer().AddEventHandler(handler.Funcs[*v1alpha1.MachineGroup]{
		Add: func(*v1alpha1.MachineGroup) { enqueue() },
		Update: func(old, cur *v1alpha1.MachineGroup) {
			if old.Generation != cur.Generation || !equality.Semantic.DeepEqual(old.Status, cur.Status) {
				enqueue()
			}
		},
		Delete: func(*v1alpha1.MachineGroup) { enqueue() },
	}); err != nil {
		return nil, fmt.Errorf("adding machine group handler: %w", err)
	}
	m.lister, m.synced = gi.Lister(), gi.Informer().HasSynced
	return m, nil
}

// start starts the informer unless the spoke does not serve MachineGroups,
// which it logs; a failed look-up starts it anyway, and the informer retries.
func (m *machineGroups) start(ctx context.Context) {
	served, err := machinegroup.Served(m.client.Discovery())
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Looking up the MachineGroup CRD; following MachineGroups anyway")
	case !served:
		klog.FromContext(ctx).Info("The cluster has no MachineGroup CRD; reporting no machine groups", "groupVersion", v1alpha1.SchemeGroupVersion.String())
		return
	}
	m.factory.Start(ctx.Done())
	m.started = true
}

func (m *machineGroups) shutdown() {
	if m.started {
		m.factory.Shutdown()
	}
}

// report is what the inventory says of the machine groups: none until the
// cache has synced.
func (m *machineGroups) report() ([]v1alpha1.ReportedMachineGroup, int32) {
	if m == nil || !m.started || !m.synced() {
		return nil, 0
	}
	groups, err := m.lister.List(labels.Everything())
	if err != nil {
		return nil, 0
	}
	return machinegroup.Report(groups)
}
