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

// MkdirTemp creates a temporary data directory for short-lived services
// (tests), named <prefix><pid>-<random> under os.TempDir. It first removes
// the directories with the same prefix whose process no longer runs, which
// is what a test binary that panicked or was killed leaves behind.
func MkdirTemp(prefix string) (string, error) {
	sweepTemp(prefix)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", prefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("create temporary directory: %w", err)
	}
	return dir, nil
}

// sweepTemp removes prefix's directories of processes that have ended.
func sweepTemp(prefix string) {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*-*"))
	for _, dir := range matches {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || processExists(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// processExists reports whether a process with this pid exists.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
