package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill Traefik if the test process dies first (a go test
// timeout, a crash), so no Traefik outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
