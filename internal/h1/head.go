package h1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// writeRequest writes req to w as net/http's Request.Write does, asking
// for gzip when gz is set. The usual request (no trace, no trailer, no
// Connection: close, a plain host and a body of known length) is written
// here: Request.Write sorts the header through a pool, formats with fmt
// and wraps the body in a transfer writer, a tenth of a small call's CPU.
// Anything else goes through Request.Write itself.
func writeRequest(w *bufio.Writer, req *http.Request, gz bool) error {
	host, ruri, ok := plainHead(req)
	if !ok {
		wire := req
		if gz {
			wire = withGzip(req)
		}
		return wire.Write(w)
	}
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(ruri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	userAgent := "Go-http-client/1.1"
	if _, set := req.Header["User-Agent"]; set {
		userAgent = req.Header.Get("User-Agent")
	}
	if userAgent != "" { // as net/http: checked before it is trimmed
		writeField(w, "User-Agent", trimSpace(userAgent))
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		writeField(w, "Content-Length", strconv.FormatInt(req.ContentLength, 10))
	}
	writeHeader(w, req.Header)
	if gz {
		writeField(w, "Accept-Encoding", "gzip")
	}
	w.WriteString("\r\n")
	return writeBody(w, req)
}

// plainHead returns the Host and request-target of a request writeRequest
// writes itself; ok is false for any other.
func plainHead(req *http.Request) (host, ruri string, ok bool) {
	if req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil || req.Method == "" ||
		!httpguts.ValidHeaderFieldName(req.Method) || httptrace.ContextClientTrace(req.Context()) != nil {
		return "", "", false
	}
	noBody := req.Body == nil || req.Body == http.NoBody
	if req.ContentLength < 0 || req.ContentLength == 0 && !noBody || req.ContentLength != 0 && noBody {
		// net/http probes the body for its length, or refuses a length
		// with no body to send.
		return "", "", false
	}
	host = req.Host
	if host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 || host[i] == '%' {
			return "", "", false // punycode, or an IPv6 zone to remove
		}
	}
	if !httpguts.ValidHostHeader(host) {
		return "", "", false
	}
	ruri = req.URL.RequestURI()
	for i := 0; i < len(ruri); i++ {
		if ruri[i] < ' ' || ruri[i] == 0x7f {
			return "", "", false
		}
	}
	return host, ruri, true
}

// writeHeader writes h as Request.Write does: sorted by name, less the
// fields the transport writes itself, each value trimmed. The values were
// checked by [Transport.takes]: none holds a line break.
func writeHeader(w *bufio.Writer, h http.Header) {
	var buf [24]string
	names := buf[:0]
	for name := range h {
		switch name {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range h[name] {
			writeField(w, name, trimSpace(v))
		}
	}
}

func writeField(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(": ")
	w.WriteString(value)
	w.WriteString("\r\n")
}

// writeBody copies the request's body, exactly ContentLength bytes of it,
// and closes it.
func writeBody(w *bufio.Writer, req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	defer req.Body.Close()
	n, err := io.Copy(w, io.LimitReader(req.Body, req.ContentLength))
	if err != nil {
		return err
	}
	if extra, _ := io.Copy(io.Discard, req.Body); extra > 0 || n != req.ContentLength {
		return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n+extra)
	}
	return nil
}

// trimSpace trims what textproto.TrimString does.
func trimSpace(s string) string {
	return strings.Trim(s, " \t\n\r")
}
