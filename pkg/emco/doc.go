// Package emco serves EMCO's HPA intent REST API (hpa-intents, their
// hpa-resource-consumers and those consumers' resource-requirements, under
// /v2/projects/{project}/composite-apps/{app}/{version}/deployment-intent-groups/{dig})
// over HPAIntent objects on the hub. It keeps no state of its own: every
// request reads, and every change writes, one HPAIntent through the hub API
// server, with optimistic concurrency, so that concurrent requests are never
// lost and a failed one changes nothing (writes.go: this hub's changes of one
// intent are made one at a time, and a conflict with another writer is
// retried until the change lands). Every name of a path or a body follows
// one rule per kind of name, checked before anything is read (names.go).
//
// The mapping:
//
//   - A project is a namespace of the hub. The composite app, its version and
//     the deployment intent group are labels of the HPAIntent (LabelCompositeApp,
//     LabelCompositeAppVersion, LabelDeploymentIntentGroup); an intent is only
//     seen under the path its labels name.
//   - An intent is the HPAIntent of the same name; its spec.app is
//     spec.placementRef.name, the app's Placement in the namespace.
//   - A consumer is an entry of spec.consumers and a requirement an entry of
//     its requirements, under their REST names. An allocatable requirement is
//     a resource amount (name, requests, limits, units: EMCO's legacy integers
//     with units go through the conversion the CRD already accepts), and a
//     non-allocatable one a node label feature ({key, value}, or {name,
//     value} as EMCO's design writes it).
//   - What Kubernetes has no field for — description and userData of the
//     intent, its consumers and requirements, and how amounts were spelt —
//     is kept in annotations, so that every GET returns what was posted.
//
// Bodies are checked by the HPAIntent's own validation (package validation,
// the Go mirror of admission) with the messages admission gives, their paths
// rewritten to the fields of the REST body; a refusal by the API server is
// turned into the same 400.
//
// Callers are authenticated by the hub's delegated authentication and
// authorised with a SubjectAccessReview on hpaintents (group fleetfit.io) in
// the project's namespace: create for a new intent, list for the list of
// intents, get to read one (its consumers and requirements included), update
// to add, change or remove its consumers and requirements, delete to delete
// it. Then the hub acts with its own credentials.
package emco
