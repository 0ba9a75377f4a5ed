// Command etcd is etcd's own server binary (go.etcd.io/etcd/server/v3/main.go upstream), built
// from the module version that k8s.io/kubernetes requires; see ../../go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
