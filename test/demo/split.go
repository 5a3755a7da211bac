package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// SplitExample is "web", an intent whose 7 replicas of 500m cpu and 512Mi are divided evenly
// among up to three clusters (spec.split), each share capped at what the cluster's nodes hold,
// instead of all 7 running on each.
func SplitExample() Example {
	in := ut.MakeHPAIntent("web", Namespace).Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "web").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("500m").Obj(),
			ut.MakeResource("memory", "memory").Requests("512Mi").Obj(),
		).Obj(),
	).Split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitEvenly}).Manifest(deployment("web", "web", 7)).Obj()
	return Example{Placement: ut.MakePlacement("web", Namespace).NumberOfClusters(3).Obj(), Intent: in, Replicas: 7}
}

// showSplit has the hub place "web", waits until every cluster runs its share, Ready, and
// prints the shares.
func showSplit(ctx context.Context, con *console, f *framework.Fleet, timeout time.Duration) error {
	web := SplitExample()
	if err := applyExamples(ctx, f, []Example{web}); err != nil {
		return err
	}
	intents := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(Namespace)
	var shares []string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		in, err := intents.Get(ctx, web.Intent.Name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		s := in.Status.Split
		if s == nil || s.Unplaced > 0 || len(s.Shares) == 0 {
			last = fmt.Errorf("HPAIntent web's split is %+v", s)
			return false, nil
		}
		shares = shares[:0]
		for _, sh := range s.Shares {
			running, err := runningApp(ctx, f, sh.ClusterName, "web")
			if err != nil || running != int(sh.Replicas) {
				last = fmt.Errorf("%s runs %d of its share of %d (%v)", sh.ClusterName, running, sh.Replicas, err)
				return false, nil
			}
			shares = append(shares, fmt.Sprintf("%s %d", sh.ClusterName, sh.Replicas))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", err, last)
	}
	con.step("fleetfit-hub split web's 7 replicas evenly, each share within what the cluster's nodes hold: %s; every one Running", strings.Join(shares, ", "))
	return nil
}

// runningApp counts the Running, Ready pods labelled app=app in the demo's namespace of the
// named managed cluster.
func runningApp(ctx context.Context, f *framework.Fleet, cluster, app string) (int, error) {
	for i, spoke := range f.Spokes {
		if framework.SpokeName(i) != cluster {
			continue
		}
		pods, err := spoke.AdminClient().CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && podReady(&p) {
				n++
			}
		}
		return n, nil
	}
	return 0, fmt.Errorf("no managed cluster %s", cluster)
}
