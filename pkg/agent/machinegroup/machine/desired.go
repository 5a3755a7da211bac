package machine

import (
	"encoding/hex"
	"encoding/json"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// AnnotationTemplateHash on a reservation StatefulSet is the hash of the pod
// template the controller wrote. The API server defaults many fields of a
// template, so the controller compares this hash, not the template, to
// decide whether to write it again.
const AnnotationTemplateHash = machinegroup.Prefix + "template-hash"

// reservationContainer is the name of a reservation pod's one container.
const reservationContainer = "reservation"

// pauseUser is the user the pause image runs as.
const pauseUser = 65535

// ownerRef makes the group the controller of a reservation object, so that the
// garbage collector removes the object with the group.
func ownerRef(g *v1alpha1.MachineGroup) metav1.OwnerReference {
	return *metav1.NewControllerRef(g, v1alpha1.SchemeGroupVersion.WithKind("MachineGroup"))
}

// desiredService is the headless Service of machine type t of group g.
func desiredService(g *v1alpha1.MachineGroup, t *v1alpha1.MachineType, namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            machinegroup.ReservationName(g.Name, t.Name),
			Namespace:       namespace,
			Labels:          machinegroup.ReservationLabels(g.Name, t.Name),
			OwnerReferences: []metav1.OwnerReference{ownerRef(g)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  machinegroup.ReservationLabels(g.Name, t.Name),
		},
	}
}

// desiredStatefulSet is the reservation StatefulSet of machine type t of group
// g with the given replicas. Its pods hold one machine each: one container
// that idles with the type's resources as requests and limits, tolerating
// the type's taints and requiring its node labels. Pods are created and
// removed in parallel, so that a guest taking over a reservation never waits
// for other reservation pods.
func desiredStatefulSet(g *v1alpha1.MachineGroup, t *v1alpha1.MachineType, replicas int32, opts Options) *appsv1.StatefulSet {
	name := machinegroup.ReservationName(g.Name, t.Name)
	template := reservationTemplate(g, t, opts.ReservationImage)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       opts.Namespace,
			Labels:          machinegroup.ReservationLabels(g.Name, t.Name),
			Annotations:     map[string]string{AnnotationTemplateHash: templateHash(&template)},
			OwnerReferences: []metav1.OwnerReference{ownerRef(g)},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: machinegroup.ReservationLabels(g.Name, t.Name)},
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            template,
		},
	}
}

func reservationTemplate(g *v1alpha1.MachineGroup, t *v1alpha1.MachineType, image string) corev1.PodTemplateSpec {
	resources := machinegroup.Resources(t)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: machinegroup.ReservationLabels(g.Name, t.Name)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  reservationContainer,
				Image: image,
				Resources: corev1.ResourceRequirements{
					Requests: resources,
					Limits:   resources.DeepCopy(),
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Tolerations: machinegroup.Tolerations(g.Name, t),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: machinegroup.NodeRequirements(g.Name, t)}},
				},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](pauseUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// A reservation pod does nothing: it needs no token, no service
			// environment, and no time to shut down.
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

// templateHash is a short digest of a pod template as the controller builds it.
func templateHash(t *corev1.PodTemplateSpec) string {
	// json.Marshal of API types cannot fail, and it writes map keys sorted,
	// so equal templates hash equally.
	b, _ := json.Marshal(t)
	h := fnv.New64a()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
