// Package static serves the console's stylesheet, scripts and icons from the
// binary. URLs carry a fingerprint of the file's content, so browsers cache
// them for a year and a new build is fetched at once.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"strings"
)

//go:embed css js vendor img/*.svg
var files embed.FS

// FS is the embedded tree, rooted at this folder.
var FS fs.FS = files

// Prefix is where the files are served.
const Prefix = "/static/"

var (
	fingerprints = map[string]string{} // file name -> fingerprint
	byURL        = map[string]string{} // fingerprinted path -> file name
)

func init() {
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		fingerprints[p] = hex.EncodeToString(sum[:5])
		byURL[strings.TrimPrefix(Path(p), Prefix)] = p
		return nil
	})
}

// Path is the fingerprinted URL of an embedded file, e.g. Path("css/app.css")
// is "/static/css/app.3f2a1b9c0d.css". It panics on a file that is not
// embedded, so a typo fails the first test that renders the page.
func Path(name string) string {
	fp, ok := fingerprints[name]
	if !ok {
		panic("static: no embedded file " + name)
	}
	ext := path.Ext(name)
	if strings.HasSuffix(name, ".min.js") {
		ext = ".min.js"
	}
	return Prefix + strings.TrimSuffix(name, ext) + "." + fp + ext
}

// Open resolves a fingerprinted URL path (without Prefix) to the embedded
// file name; ok is false when the name or fingerprint is unknown.
func Open(urlPath string) (name string, ok bool) {
	name, ok = byURL[urlPath]
	return name, ok
}
