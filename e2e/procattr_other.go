//go:build !linux

package e2e

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death signal; Stop and the
// tests' cleanups end Traefik.
func dieWithParent(cmd *exec.Cmd) {}
