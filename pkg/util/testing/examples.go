package testing

// Names in the fwall example, for tests that look parts of it up.
const (
	FwallName            = "fwall"
	FwallCoreConsumer    = "core-fwall"
	FwallAPIConsumer     = "api-server"
	FwallCoreContainer   = "palo-alto-e3000"
	FwallAPIContainer    = "nginx"
	FwallGPURequirement  = "gpu"
	FwallCPURequirement  = "cpu"
	FwallMemRequirement  = "memory"
	FwallGPUResourceName = "nvidia.com/gpu"
)

// FwallHPAIntent is EMCO's firewall example as an HPAIntent named fwall
// whose placement is also fwall, ready to be completed or changed:
//
//   - core-fwall, the StatefulSet core-fwall's container palo-alto-e3000,
//     wants exclusive cores: 4 cpu (requests = limits), 1000 MB of memory in
//     EMCO's legacy units (requests = limits), and optionally one
//     nvidia.com/gpu (limits only) with weight 9;
//   - api-server, the Deployment api-server's container nginx, wants cpu
//     requests 1 limits 2, and memory requests 200 in units MB.
//
// It carries no workload manifests; add them with Manifest when a test
// delivers it.
func FwallHPAIntent(namespace string) *HPAIntentWrapper {
	return MakeHPAIntent(FwallName, namespace).
		Placement(FwallName).
		Consumer(
			MakeConsumer(FwallCoreConsumer).
				Target("StatefulSet", "core-fwall", FwallCoreContainer).
				ExclusiveCPU().
				Requirement(
					MakeResource(FwallCPURequirement, "cpu").Requests("4").Limits("4").Obj(),
					MakeResource(FwallMemRequirement, "memory").Requests("1000").Limits("1000").Units("MB").Obj(),
					MakeResource(FwallGPURequirement, FwallGPUResourceName).Limits("1").Optional(9).Obj(),
				).Obj(),
			MakeConsumer(FwallAPIConsumer).
				Target("Deployment", "api-server", FwallAPIContainer).
				Requirement(
					MakeResource(FwallCPURequirement, "cpu").Requests("1").Limits("2").Obj(),
					MakeResource(FwallMemRequirement, "memory").Requests("200").Units("MB").Obj(),
				).Obj(),
		)
}
