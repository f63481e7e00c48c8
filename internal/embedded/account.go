package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// account is who runs initdb and postgres. PostgreSQL refuses to run as
// root, so a root toolgate runs them as Debian's postgres system account;
// anyone else runs them as themselves.
type account struct {
	uid, gid int
	// cred switches the child to the account; nil runs it as this process.
	cred *syscall.Credential
}

// postgresAccount picks the account for this process.
func postgresAccount() (account, error) {
	if os.Geteuid() != 0 {
		return account{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return account{}, errors.New("running as root needs the postgres system account to run PostgreSQL; install it with: apt-get install -y postgresql")
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return account{}, fmt.Errorf("postgres account uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return account{}, fmt.Errorf("postgres account gid %q: %w", u.Gid, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	return account{uid: uid, gid: gid, cred: cred}, nil
}

// other reports whether the account differs from this process's user.
func (a account) other() bool { return a.cred != nil }

// chown gives path to the account when it is not this process's user.
func (a account) chown(path string) error {
	if !a.other() {
		return nil
	}
	if err := os.Lchown(path, a.uid, a.gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// chownTree gives a whole tree to the account, if its root belongs to
// someone else (a cluster made by another user or copied in).
func (a account) chownTree(root string) error {
	if !a.other() {
		return nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) == a.uid && int(st.Gid) == a.gid {
		return nil
	}
	return filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return a.chown(path)
	})
}

// canTraverse reports whether the account may search the directory.
func (a account) canTraverse(fi fs.FileInfo) bool {
	st := fi.Sys().(*syscall.Stat_t)
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == a.uid:
		return mode&0o100 != 0
	case int(st.Gid) == a.gid:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

// ensureReachable makes every directory from / down to dir searchable by
// the account. It adds o+x only to directories toolgate may change: dir
// itself and directories of this user under the temporary directory (test
// directories from os.MkdirTemp are 0700). Any other blocking directory is
// reported, all of them in one error.
func (a account) ensureReachable(dir string) error {
	if !a.other() {
		return nil
	}
	var fix, blocked []string
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		switch {
		case a.canTraverse(fi):
		case d == dir || ownTempDir(d, fi):
			fix = append(fix, d)
		default:
			blocked = append([]string{d}, blocked...)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if len(blocked) > 0 {
		return fmt.Errorf("the postgres account cannot reach %s; run chmod o+x %s or set TOOLGATE_DATA_DIR to another directory",
			dir, strings.Join(blocked, " "))
	}
	for _, d := range fix {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
			return fmt.Errorf("make %s searchable: %w", d, err)
		}
	}
	return nil
}

// ownTempDir reports whether d is this user's directory below os.TempDir.
func ownTempDir(d string, fi fs.FileInfo) bool {
	tmp := filepath.Clean(os.TempDir())
	if !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
		return false
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid) == os.Geteuid()
}
