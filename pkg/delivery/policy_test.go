package delivery

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func object(apiVersion, kind, namespace, name string) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		kinds, namespaces []string
		manifest          map[string]any
		want              []string
	}{
		"a Deployment of the intent's namespace": {
			manifest: object("apps/v1", "Deployment", "", "web"),
		},
		"a Deployment naming the intent's namespace": {
			manifest: object("apps/v1", "Deployment", "team", "web"),
		},
		"its own Namespace": {
			manifest: object("v1", "Namespace", "", "team"),
		},
		"a kube-system Pod": {
			manifest: object("v1", "Pod", "kube-system", "p"),
			want:     []string{"spec.workload.manifests[0] (Pod p): namespace kube-system: an intent of namespace team delivers only into team; leave metadata.namespace empty to deliver into team"},
		},
		"another namespace the admin allows": {
			namespaces: []string{"shared"},
			manifest:   object("v1", "ConfigMap", "shared", "c"),
		},
		"a ClusterRoleBinding": {
			manifest: object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "admin"),
			want:     []string{"spec.workload.manifests[0] (ClusterRoleBinding admin): rbac.authorization.k8s.io/ClusterRoleBinding is cluster-scoped and never delivered: an intent's workload may only hold namespaced objects of its namespace (and that Namespace); ask the managed clusters' admins to install it"},
		},
		"another Namespace": {
			manifest: object("v1", "Namespace", "", "kube-public"),
			want:     []string{"spec.workload.manifests[0] (Namespace kube-public): an intent of namespace team may deliver only the Namespaces team"},
		},
		"a Role is not a default kind": {
			manifest: object("rbac.authorization.k8s.io/v1", "Role", "", "r"),
			want: []string{"spec.workload.manifests[0] (Role r): the hub does not deliver rbac.authorization.k8s.io/Role (it delivers ConfigMap, Namespace, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount, apps/DaemonSet, apps/Deployment, apps/ReplicaSet, apps/StatefulSet, batch/CronJob, batch/Job, resource.k8s.io/ResourceClaimTemplate); " +
				"remove it, or ask the hub's admin to add it to --delivery-allowed-kinds"},
		},
		"a kind the admin added": {
			kinds:    []string{"apps/Deployment", "rbac.authorization.k8s.io/Role"},
			manifest: object("rbac.authorization.k8s.io/v1", "Role", "", "r"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := NewPolicy(tc.kinds, tc.namespaces)
			if err != nil {
				t.Fatal(err)
			}
			in := ut.MakeHPAIntent("web", "team").Placement("p").Manifest(tc.manifest).Obj()
			if diff := cmp.Diff(tc.want, p.Check(in)); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNewPolicyRefuses(t *testing.T) {
	for _, kinds := range [][]string{{"rbac.authorization.k8s.io/ClusterRole"}, {"apps/"}, {"a/b/C"}} {
		if _, err := NewPolicy(kinds, nil); err == nil {
			t.Errorf("NewPolicy(%q) accepted", kinds)
		}
	}
}
