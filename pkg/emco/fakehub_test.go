package emco

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/hubauth"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// Where the fake hub's objects are: the project, its deployment intent group's path, and
// the intent "i" with the consumer "c", which has no requirements.
const (
	fakeProject  = "proj"
	fakeIntents  = "/v2/projects/proj/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents"
	fakeIntent   = fakeIntents + "/i"
	fakeConsumer = fakeIntent + "/hpa-resource-consumers/c"
)

// allowAll allows every request.
type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// fakeHub is the handler on fake clients holding the project and the intent i.
type fakeHub struct {
	handler  *Handler
	fleetfit *fleetfitfake.Clientset
}

func newFakeHub() *fakeHub {
	in := utiltesting.MakeHPAIntent("i", fakeProject).Placement("app").Consumer(
		utiltesting.MakeConsumer("c").Target("Deployment", "c", "main").Obj()).Obj()
	in.Labels = map[string]string{LabelCompositeApp: "capp", LabelCompositeAppVersion: "v1", LabelDeploymentIntentGroup: "dig"}
	f := &fakeHub{fleetfit: fleetfitfake.NewSimpleClientset(in)}
	f.handler = New(Clients{
		Kube:     kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fakeProject}}),
		Fleetfit: f.fleetfit,
		Cluster:  clusterfake.NewSimpleClientset(),
	}, hubauth.New(nil, allowAll{}))
	return f
}

// intent returns the HPAIntent i as the fake holds it.
func (f *fakeHub) intent() *v1alpha1.HPAIntent {
	in, err := f.fleetfit.FleetfitV1alpha1().HPAIntents(fakeProject).Get(context.Background(), "i", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return in
}

// do serves one request for target (a path with an optional query) as an authenticated
// user; ok is false when target is no request target at all.
func (f *fakeHub) do(ctx context.Context, method, target, contentType, body string) (code int, answer string, ok bool) {
	req, err := http.NewRequestWithContext(ctx, method, "http://hub"+target, strings.NewReader(body))
	if err != nil {
		return 0, "", false
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req = req.WithContext(request.WithUser(req.Context(), &user.DefaultInfo{Name: "editor", Groups: []string{user.AllAuthenticated}}))
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String(), true
}
