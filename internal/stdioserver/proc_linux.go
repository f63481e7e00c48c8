package stdioserver

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

type signal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// processGroupAttr puts a stdio server in its own process group, so it and
// its children can be signalled together, and kills it if toolgate dies.
func processGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // start time in clock ticks since boot
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgrp, _ = strconv.Atoi(string(f[2]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return p, true
}

// procs lists every process.
func procs() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]proc, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// running reports a process that is neither a zombie nor dead.
func (p proc) running() bool { return p.state != 'Z' && p.state != 'X' && p.state != 'x' }

// descendants returns the running descendants of pid, whatever their group.
func descendants(pid int) []proc {
	all := procs()
	children := map[int][]proc{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			if c.running() {
				out = append(out, c)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// groupAlive reports whether a process group still has a running member.
// Zombies do not count: an orphan whose new parent does not reap it has
// ended all the same.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	for _, p := range procs() {
		if p.pgrp == pgid && p.running() {
			return true
		}
	}
	return false
}

// straysAlive reports whether a noted process (the same one: same start
// time, so a recycled pid does not count) still runs.
func straysAlive(strays []proc) bool {
	for _, s := range strays {
		if p, ok := readProc(s.pid); ok && p.start == s.start && p.running() {
			return true
		}
	}
	return false
}

// signalAll sends sig to the process group pgid and to every noted stray
// that is still the same process.
func signalAll(pgid int, strays []proc, sig signal) {
	_ = syscall.Kill(-pgid, sig)
	for _, s := range strays {
		if p, ok := readProc(s.pid); ok && p.start == s.start && p.running() {
			_ = syscall.Kill(s.pid, sig)
		}
	}
}
