package sigdecision

import (
	"context"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	sigv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	sigclient "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"
)

// CRDName is the name of the SIG PlacementDecision CustomResourceDefinition.
const CRDName = "placementdecisions." + sigv1alpha1.Group

// Watcher runs the mirror while the hub serves the SIG PlacementDecision API: it watches that
// one CustomResourceDefinition, starts the mirror once the CRD is established with the
// v1alpha1 version served, whether that is before or after the hub started, and stops it when
// the CRD goes away. It reads the CRD only by name, so its identity needs get, list and watch
// on that single customresourcedefinition.
type Watcher struct {
	apiext apiextensionsclient.Interface
	sig    sigclient.Interface
	ocm    clusterinformers.SharedInformerFactory
}

// NewWatcher returns a Watcher that mirrors the decisions of the ocm informers with sig.
func NewWatcher(apiext apiextensionsclient.Interface, sig sigclient.Interface, ocm clusterinformers.SharedInformerFactory) *Watcher {
	return &Watcher{apiext: apiext, sig: sig, ocm: ocm}
}

// Run follows the CRD until ctx ends, and stops the mirror before it returns.
func (w *Watcher) Run(ctx context.Context) {
	// Named here only: the mirror's own loop names its logger the same.
	logger := klog.FromContext(ctx).WithName("sigdecisions")
	factory := apiextensionsinformers.NewSharedInformerFactoryWithOptions(w.apiext, 0,
		apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", CRDName).String()
		}))
	informer := factory.Apiextensions().V1().CustomResourceDefinitions()
	// Every event only says "look again": the one CRD's state is read from the lister.
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := informer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, cur any) { poke(cur) },
		DeleteFunc: poke,
	})
	if err != nil {
		logger.Error(err, "Not mirroring decisions into the SIG-Multicluster PlacementDecision API")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return
	}
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	poke(nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		crd, err := informer.Lister().Get(CRDName)
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Reading the SIG PlacementDecision CRD")
			continue
		}
		switch serves := err == nil && Serves(crd); {
		case serves && stop == nil:
			logger.Info("The hub serves the SIG-Multicluster PlacementDecision API: mirroring PlacementDecisions into it", "crd", CRDName)
			stop = w.start(ctx)
		case !serves && stop != nil:
			logger.Info("The hub no longer serves the SIG-Multicluster PlacementDecision API: mirror stopped", "crd", CRDName)
			stop()
			stop = nil
		}
	}
}

// start runs the mirror and returns the function that stops it and waits for it.
func (w *Watcher) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	factory := NewSIGInformers(w.sig)
	ctrl, err := New(w.sig, w.ocm, factory)
	if err != nil {
		cancel()
		klog.FromContext(ctx).Error(err, "Starting the SIG PlacementDecision mirror")
		return func() {}
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
		factory.Shutdown()
	}
}

// Serves reports whether a CRD is established and serves the version the mirror writes.
func Serves(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if !crd.DeletionTimestamp.IsZero() {
		return false
	}
	established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
	served := slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == sigv1alpha1.Version && v.Served
	})
	return established && served
}
