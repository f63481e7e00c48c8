//go:build !unix

package graphql

import (
	"os/exec"
	"time"
)

// inGroup kills cmd when its context ends (the default) and stops waiting
// for its output soon after.
func inGroup(cmd *exec.Cmd) { cmd.WaitDelay = 5 * time.Second }
