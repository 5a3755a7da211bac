// Package ui serves fleetfit's web page of the live fleet and the JSON endpoints it reads:
//
//   - GET /api/fleet: every cluster as `fleetfit get clusters` shows it, with what its agent's
//     inventory says is free on single nodes (the largest free block on one node, one tile per
//     node for the picture) and, when asked, whether a request fits on one node there now;
//   - GET /api/placements: every Placement with its decisions, their scores, its HPAIntents and
//     where their workloads were delivered;
//   - GET /api/explain/<namespace>/<name>: per cluster, the filter that rejected it and why, and
//     each prioritizer's score, as `fleetfit explain placement -o json` prints it (the JSON of the
//     hub's /debug/placements/ endpoint);
//   - POST /api/whatif: posted Placements and HPAIntents scheduled over the hub's fleet as
//     `fleetfit simulate --from-hub -f` schedules them, changing nothing.
//
// Nothing here decides anything of its own: the fleet is read with simulate.FromHub, cluster
// rows are getcmd's, fit questions are answered by package inventory, explanations and what-ifs
// by simulate.Run, the hub's own scheduler. The server reads the hub with one identity, the one
// it was given (fleetfit ui gives it the user's kubeconfig), so the hub's RBAC decides what the
// page shows: a refusal from the hub is passed on with its status code and message, never
// replaced by data.
//
// # Bounded cost
//
// What the hub holds is read at most once per Options.MaxAge for each kind of view (clusters,
// placements, the whole fleet for explain and what-if), whatever the number of pages open, and
// concurrent requests share one read. Per-cluster summaries are computed once per read; a fleet
// request then costs a filter over them and the encoding of one page of at most MaxLimit
// clusters, each with at most MaxTiles node tiles.
//
// # Only for this machine
//
// The server is meant for a loopback address. It answers only requests whose Host is a
// loopback name or address (as kubectl proxy's --accept-hosts default), so that a web page
// of another site cannot reach it through DNS rebinding, and it refuses a POST from another
// origin.
package ui
