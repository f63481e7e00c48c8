// Package spawner starts child processes from one goroutine locked to an
// OS thread that never exits. Linux sends a child's Pdeathsig when the
// thread that started it exits, not when the process does
// (go.dev/issue/27505); starting every child from a thread that lives as
// long as toolgate means the signal comes only when toolgate dies.
package spawner

import (
	"os/exec"
	"runtime"
	"sync"
)

var spawner struct {
	once sync.Once
	reqs chan request
}

type request struct {
	cmd   *exec.Cmd
	reply chan error
}

// Start starts cmd (cmd.Start) on the spawner's thread.
func Start(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan request)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for req := range spawner.reqs {
				req.reply <- req.cmd.Start()
			}
		}()
	})
	reply := make(chan error, 1)
	spawner.reqs <- request{cmd: cmd, reply: reply}
	return <-reply
}
