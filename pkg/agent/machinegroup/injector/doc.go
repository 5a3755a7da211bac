// Package injector is the pod resource injector of machine groups: a
// mutating admission webhook, served by fleetfit-agent over TLS, that gives a
// guest pod the machine type it names.
//
// A guest pod is one labelled machines.fleetfit.io/pod-role=guest; it names
// its machine group and machine type with the labels machine-group and
// machine-type, and optionally the container to inject with
// injecting-container (the first container by default). On CREATE the
// injector sets that container's requests and limits to the machine type's
// cpu, memory and GPUs (requests = limits), ANDs the type's node requirements
// into every term of the pod's required node affinity (pkg/mutation, which
// never drops a user's term), and adds the tolerations of the type's pool
// nodes. A guest whose group, type or container does not exist, or that
// lacks the group or type label, is refused with a message naming what
// exists. Injecting a pod that already has everything changes nothing, so
// the webhook may be reinvoked.
//
// Which pods reach it is decided by the MutatingWebhookConfiguration of
// deploy/agent: Pod CREATE in namespaces labelled
// machines.fleetfit.io/inject-resource=enabled, with the guest label as
// objectSelector, so that no other pod waits on the agent. Its failurePolicy
// is Fail: a guest that did not get its resources must not run.
//
// The serving certificate is issued and rotated by the agent with
// library-go's certrotation (see SignerSecret), which also keeps the
// configuration's caBundle current; or it is read from Options.CertDir.
package injector
