package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked means another toolgate holds the data directory.
var ErrLocked = errors.New("data directory is in use by another toolgate")

// lockedError names the directory and, when known, the holder's pid.
type lockedError struct {
	dir string
	pid int
}

func (e *lockedError) Error() string {
	holder := "another toolgate"
	if e.pid > 0 {
		holder = fmt.Sprintf("another toolgate (pid %d)", e.pid)
	}
	return fmt.Sprintf("data directory %s is in use by %s; stop it or set TOOLGATE_DATA_DIR", e.dir, holder)
}

func (e *lockedError) Unwrap() error { return ErrLocked }

// dirLock is an exclusive flock on dir/toolgate.lock, which also records the
// holder's pid for the message a second toolgate prints.
type dirLock struct {
	f *os.File
}

// acquireLock takes the data directory's lock or fails at once with ErrLocked.
func acquireLock(dir string) (*dirLock, error) {
	path := filepath.Join(dir, "toolgate.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &lockedError{dir: dir, pid: readPID(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release gives the lock up. The file stays: removing it would let two
// processes lock two different files of the same name.
func (l *dirLock) release() error {
	if err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN); err != nil {
		l.f.Close()
		return fmt.Errorf("unlock data directory: %w", err)
	}
	return l.f.Close()
}

// readPID reads the first line of a pid file; 0 when there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
