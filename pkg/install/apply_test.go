package install

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResultString(t *testing.T) {
	for name, tc := range map[string]struct {
		r    Result
		want string
	}{
		"core":     {Result{Kind: "Namespace", Name: "fleetfit-system"}, "namespace/fleetfit-system serverside-applied"},
		"group":    {Result{Kind: "Deployment", Group: "apps", Namespace: "x", Name: "fleetfit-hub"}, "deployment.apps/fleetfit-hub serverside-applied"},
		"dry run":  {Result{Kind: "ClusterRole", Group: "rbac.authorization.k8s.io", Name: "fleetfit:hub", DryRun: true}, "clusterrole.rbac.authorization.k8s.io/fleetfit:hub serverside-applied (server dry run)"},
		"skipped":  {Result{Kind: "Service", Name: "s", DryRun: true, Skipped: "namespace x does not exist yet"}, "service/s serverside-applied (dry run, not sent to the server: namespace x does not exist yet)"},
		"CRD kind": {Result{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Name: "a.b"}, "customresourcedefinition.apiextensions.k8s.io/a.b serverside-applied"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.r.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// applyConflict is the error the API server returns for an apply whose
// fields other managers own, as k8s.io/apimachinery's field manager builds it.
func applyConflict(causes ...metav1.StatusCause) error {
	return apierrors.NewApplyConflict(causes, "Apply failed")
}

func cause(msg, field string) metav1.StatusCause {
	return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: msg, Field: field}
}

func TestConflicts(t *testing.T) {
	for name, tc := range map[string]struct {
		err          error
		wantManagers []string
		wantFields   []string
	}{
		"update by another manager": {
			err:          applyConflict(cause(`conflict with "kubectl-edit" using apps/v1 at 2026-01-02T03:04:05Z`, ".spec.replicas")),
			wantManagers: []string{"kubectl-edit"},
			wantFields:   []string{".spec.replicas"},
		},
		"several, sorted and unique": {
			err: applyConflict(
				cause(`conflict with "zz" using v1`, ".a"),
				cause(`conflict with "fleetfit" using v1`, ".b"),
				cause(`conflict with "zz"`, ".c"),
			),
			wantManagers: []string{"fleetfit", "zz"},
			wantFields:   []string{".a", ".b", ".c"},
		},
		"subresource": {
			err:          applyConflict(cause(`conflict with "hpa" with subresource "scale" using apps/v1`, ".spec.replicas")),
			wantManagers: []string{"hpa"},
			wantFields:   []string{".spec.replicas"},
		},
		"manager with quotes": {
			err:          applyConflict(cause(`conflict with "a \"b\""`, ".x")),
			wantManagers: []string{`a "b"`},
			wantFields:   []string{".x"},
		},
		"wrapped": {
			err:          fmt.Errorf("applying: %w", applyConflict(cause(`conflict with "m"`, ".x"))),
			wantManagers: []string{"m"},
			wantFields:   []string{".x"},
		},
		"other causes": {
			err: applyConflict(metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `conflict with "m"`}),
		},
		"not a status": {err: errors.New(`conflict with "m"`)},
		"a plain conflict": {
			err: apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "d", errors.New("the object has been modified")),
		},
	} {
		t.Run(name, func(t *testing.T) {
			managers, fields := conflicts(tc.err)
			if diff := cmp.Diff(tc.wantManagers, managers); diff != "" {
				t.Errorf("managers (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFields, fields); diff != "" {
				t.Errorf("fields (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	objs, err := Decode([]byte("# a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n"),
		[]byte(`{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "b", "namespace": "a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	if diff := cmp.Diff([]string{"Namespace /a", "ServiceAccount a/b"}, got); diff != "" {
		t.Errorf("objects (-want,+got):\n%s", diff)
	}
	for name, bad := range map[string]string{
		"no kind": "apiVersion: v1\nmetadata: {name: a}\n",
		"no name": "apiVersion: v1\nkind: Namespace\n",
		"yaml":    "apiVersion: [v1\n",
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
