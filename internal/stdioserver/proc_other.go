//go:build !linux

package stdioserver

import "syscall"

type signal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// processGroupAttr puts a stdio server in its own process group, so it and
// its children can be signalled together. Only Linux kills it when toolgate
// dies.
func processGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// proc is a noted process; without /proc none are noted.
type proc struct{ pid int }

func descendants(int) []proc { return nil }

func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func straysAlive([]proc) bool { return false }

func signalAll(pgid int, _ []proc, sig signal) { _ = syscall.Kill(-pgid, sig) }
