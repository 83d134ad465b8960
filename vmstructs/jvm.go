package vmstructs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// JVM is a HotSpot JVM whose VMStructs have been read, live or from a core file.
type JVM struct {
	PID    int    // 0 for a core file
	LibJVM string // path of libjvm.so as the JVM sees it
	Bias   uint64 // load address of libjvm.so
	Mem    Memory
	Table  *Table

	syms   map[string]uint64 // libjvm's ELF symbols, relocated
	r      reader
	closer io.Closer

	// moreSyms loads the symbols not read at open (libjvm's .symtab), once, on the first miss.
	moreSyms   func() (map[string]uint64, error)
	moreOnce   sync.Once
	moreLoaded map[string]uint64
}

func newJVM(ctx context.Context, mem Memory, fileSyms map[string]uint64, bias uint64) (*JVM, error) {
	syms := make(map[string]uint64, len(fileSyms))
	for k, v := range fileSyms {
		syms[k] = v + bias
	}
	t, err := ReadTable(mem, func(name string) (uint64, bool) { v, ok := syms[name]; return v, ok })
	if err != nil {
		return nil, err
	}
	return &JVM{Bias: bias, Mem: mem, Table: t, syms: syms, r: reader{mem}}, ctx.Err()
}

// Close releases the memory handle.
func (j *JVM) Close() error {
	if j.closer != nil {
		return j.closer.Close()
	}
	return nil
}

// Symbol returns the address of one of libjvm's ELF symbols (dynamic or static) in the process.
// Static (.symtab) symbols are read on the first lookup that needs them.
func (j *JVM) Symbol(name string) (uint64, bool) {
	if v, ok := j.syms[name]; ok {
		return v, true
	}
	if j.moreSyms == nil {
		return 0, false
	}
	j.moreOnce.Do(func() {
		more, err := j.moreSyms()
		if err != nil {
			return
		}
		j.moreLoaded = make(map[string]uint64, len(more))
		for k, v := range more {
			j.moreLoaded[k] = v + j.Bias
		}
	})
	v, ok := j.moreLoaded[name]
	return v, ok
}

// ErrUnsupportedJVM says that the target JVM lacks what a feature needs; MissingError wraps it. This
// platform lacking a mechanism is ErrUnsupportedPlatform.
var ErrUnsupportedJVM = errors.New("not supported by this JVM")

// MissingError says which VMStructs entries a feature needs and this JVM does not export: the
// feature is unavailable, the rest works.
type MissingError struct {
	Feature string
	Missing []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("vmstructs: %s needs %s, which this JVM does not export", e.Feature, strings.Join(e.Missing, ", "))
}

func (e *MissingError) Unwrap() error { return ErrUnsupportedJVM }

// F is a resolved field: where it is and how wide it is.
type F struct {
	Type, Name string // the names that matched (one of the aliases)
	Offset     uint64 // non-static
	Addr       uint64 // static
	Size       uint64 // width in bytes, from the field's type string
	OK         bool
}

// readSize is the width a field is read with: its Size, or 8 (a pointer or a full word) where the
// types table does not say.
func (f F) readSize() uint64 {
	if f.Size == 0 {
		return 8
	}
	return f.Size
}

// resolver resolves fields and constants for one feature and remembers what is missing.
type resolver struct {
	j       *JVM
	missing []string
}

func (j *JVM) resolver() *resolver { return &resolver{j: j} }

// field resolves "TypeA|TypeB", "_name1|_name2": the first combination present wins.
func (r *resolver) field(types, names string) F {
	f, ok := r.j.lookupField(types, names)
	if !ok {
		r.missing = append(r.missing, types+"::"+names)
	}
	return f
}

// optField is field without recording a missing entry.
func (r *resolver) optField(types, names string) F {
	f, _ := r.j.lookupField(types, names)
	return f
}

// typeSize resolves the size of one of the aliased types.
func (r *resolver) typeSize(types string) uint64 {
	for _, t := range strings.Split(types, "|") {
		if ty, ok := r.j.Table.Type(t); ok {
			return ty.Size
		}
	}
	r.missing = append(r.missing, "sizeof("+types+")")
	return 0
}

// intConst resolves an int constant (aliases separated by |).
func (r *resolver) intConst(names string) int64 {
	for _, n := range strings.Split(names, "|") {
		if v, ok := r.j.Table.Int(n); ok {
			return v
		}
	}
	r.missing = append(r.missing, names)
	return 0
}

func (r *resolver) err(feature string) error {
	if len(r.missing) == 0 {
		return nil
	}
	return &MissingError{Feature: feature, Missing: r.missing}
}

func (j *JVM) lookupField(types, names string) (F, bool) {
	for _, t := range strings.Split(types, "|") {
		for _, n := range strings.Split(names, "|") {
			if f, ok := j.Table.Field(t, n); ok {
				return F{Type: t, Name: n, Offset: f.Offset, Addr: f.Address, Size: j.width(f.TypeString), OK: true}, true
			}
		}
	}
	return F{}, false
}

// width is the size of a field of C++ type ts: pointers are 8 bytes; everything else from the types
// table, so that fields whose width changed between JDKs are read right.
func (j *JVM) width(ts string) uint64 {
	ts = strings.TrimSpace(ts)
	// "const uint", "volatile int": qualifiers do not change the width.
	for _, q := range []string{"const ", "volatile "} {
		ts = strings.TrimPrefix(ts, q)
	}
	if strings.HasSuffix(ts, "*") {
		return 8
	}
	if ty, ok := j.Table.Type(ts); ok {
		return ty.Size
	}
	return 0
}

// get reads field f of the object at base as an unsigned integer of the field's width.
func (j *JVM) get(base uint64, f F) (uint64, error) {
	if !f.OK {
		return 0, fmt.Errorf("vmstructs: field not available")
	}
	return j.r.uint(base+f.Offset, f.readSize())
}

// getInt is get for signed fields.
func (j *JVM) getInt(base uint64, f F) (int64, error) {
	return j.r.int(base+f.Offset, f.readSize())
}

// static reads a static field's value.
func (j *JVM) static(f F) (uint64, error) {
	if !f.OK {
		return 0, fmt.Errorf("vmstructs: field not available")
	}
	return j.r.uint(f.Addr, f.readSize())
}

// Version returns the JVM's release string (e.g. "17.0.15+6-Debian-1deb12u1") from
// Abstract_VM_Version::_s_vm_release.
func (j *JVM) Version() (string, error) {
	r := j.resolver()
	rel := r.field("Abstract_VM_Version", "_s_vm_release")
	if err := r.err("version"); err != nil {
		return "", err
	}
	p, err := j.r.u64(rel.Addr)
	if err != nil {
		return "", err
	}
	return j.r.cstring(p, 256)
}

// vmMajor is the JVM's feature release, Abstract_VM_Version::_vm_major_version (17, 25, ...). A
// table without the entry gives a *MissingError for feature, which also names a failed read.
func (j *JVM) vmMajor(feature string) (int, error) {
	r := j.resolver()
	f := r.field("Abstract_VM_Version", "_vm_major_version")
	if err := r.err(feature); err != nil {
		return 0, err
	}
	v, err := j.static(f)
	if err != nil {
		return 0, fmt.Errorf("vmstructs: %s: read the JVM version: %w", feature, err)
	}
	return int(int32(v)), nil
}
