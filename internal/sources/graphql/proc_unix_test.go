//go:build unix

package graphql

import (
	"os/exec"
	"syscall"
	"time"
)

// inGroup runs cmd in its own process group and kills the whole group
// when its context ends, so no node process outlives the test.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}
