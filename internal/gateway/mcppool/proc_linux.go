package mcppool

import "syscall"

// processGroupAttr puts a stdio server in its own process group, so it and
// its children are signalled together, and kills it if toolgate dies.
func processGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
