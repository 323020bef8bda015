// kube-scheduler for egress's Kubernetes tests, mirroring upstream cmd/kube-scheduler/scheduler.go: it binds
// pods to kwok's simulated node so Deployment rollouts complete as they do for users.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
