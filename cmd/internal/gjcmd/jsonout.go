package gjcmd

import (
	"strconv"
	"unicode/utf8"

	"github.com/jvmkit/jvmkit/jcmd"
)

// gjcmd's --json documents are written by hand, byte for byte as encoding/json's Encoder with
// SetIndent("", "  ") writes them (TestJSONLikeEncodingJSON holds it to that): encoding/json would link
// reflection-driven encoders and encoding/base64, whose package init is part of every gjcmd start.

// jsonWriter writes one indented JSON document.
type jsonWriter struct {
	b     []byte
	depth int
	first bool // nothing written yet in the innermost object or array
}

func (w *jsonWriter) newline() {
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, "  "...)
	}
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.first = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	if !w.first {
		w.newline()
	}
	w.b = append(w.b, c)
	w.first = false
}

// elem starts an element of an array, or a member of an object.
func (w *jsonWriter) elem() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.newline()
	w.first = false
}

func (w *jsonWriter) key(k string) {
	w.elem()
	w.str(k)
	w.b = append(w.b, ": "...)
}

func (w *jsonWriter) strField(k, v string) {
	w.key(k)
	w.str(v)
}

func (w *jsonWriter) intField(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jsonWriter) boolField(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

// array writes member k, an array of n elements written by elem; null when isNil (a nil slice).
func (w *jsonWriter) array(k string, n int, isNil bool, elem func(i int)) {
	w.key(k)
	if isNil {
		w.b = append(w.b, "null"...)
		return
	}
	w.open('[')
	for i := range n {
		w.elem()
		elem(i)
	}
	w.close(']')
}

// str writes s as encoding/json does with HTML escaping on: <, > and & as \u003c, \u003e and \u0026,
// U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func (w *jsonWriter) str(s string) {
	const hex = "0123456789abcdef"
	w.b = append(w.b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				w.b = append(w.b, '\\', c)
			case c == '\b':
				w.b = append(w.b, `\b`...)
			case c == '\f':
				w.b = append(w.b, `\f`...)
			case c == '\n':
				w.b = append(w.b, `\n`...)
			case c == '\r':
				w.b = append(w.b, `\r`...)
			case c == '\t':
				w.b = append(w.b, `\t`...)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				w.b = append(w.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				w.b = append(w.b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			w.b = append(w.b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			w.b = append(w.b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			w.b = append(w.b, s[i:i+size]...)
		}
		i += size
	}
	w.b = append(w.b, '"')
}

// results writes the document of a run on several JVMs (schema jvmkit.gjcmd/v1).
func resultsJSON(results []*result) []byte {
	w := &jsonWriter{}
	w.open('{')
	w.strField("schema", "jvmkit.gjcmd/v1")
	w.array("results", len(results), results == nil, func(i int) { results[i].writeJSON(w) })
	w.close('}')
	return append(w.b, '\n')
}

func (r *result) writeJSON(w *jsonWriter) {
	if r == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.open('{')
	w.intField("pid", int64(r.PID))
	w.strField("command", r.Command)
	if r.Status != nil {
		w.intField("status", int64(*r.Status))
	}
	w.strField("output", r.Output)
	if r.Error != "" {
		w.strField("error", r.Error)
	}
	w.intField("exit", int64(r.Exit))
	if len(r.Files) > 0 {
		w.array("files", len(r.Files), false, func(i int) {
			f := r.Files[i]
			w.open('{')
			w.strField("path", f.Path)
			w.strField("host_path", f.HostPath)
			if f.CopiedTo != "" {
				w.strField("copied_to", f.CopiedTo)
			}
			if f.Size != 0 {
				w.intField("size", f.Size)
			}
			w.close('}')
		})
	}
	if len(r.Notes) > 0 {
		w.array("notes", len(r.Notes), false, func(i int) { w.str(r.Notes[i]) })
	}
	w.close('}')
}

// jvmsJSON writes the document of gjcmd -l --json (schema jvmkit.gjcmd.list/v1).
func jvmsJSON(jvms []jcmd.JVM) []byte {
	w := &jsonWriter{}
	w.open('{')
	w.strField("schema", "jvmkit.gjcmd.list/v1")
	w.array("jvms", len(jvms), jvms == nil, func(i int) {
		j := jvms[i]
		w.open('{')
		w.intField("pid", int64(j.PID))
		w.intField("nspid", int64(j.NSPID))
		w.intField("uid", int64(j.UID))
		w.strField("main_class", j.MainClass)
		w.strField("command", j.Command)
		w.boolField("hotspot", j.HotSpot)
		w.boolField("attachable", j.Attachable)
		if j.PerfData != "" {
			w.strField("perfdata", j.PerfData)
		}
		w.boolField("container", j.Container)
		w.close('}')
	})
	w.close('}')
	return append(w.b, '\n')
}
