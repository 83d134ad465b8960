package vmstructs

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fakeImage lays out the four tables and their describing symbols in memory, the way libjvm does.
type fakeImage struct {
	mem  Bytes
	syms map[string]uint64
	next uint64
}

func newFakeImage() *fakeImage { return &fakeImage{syms: map[string]uint64{}, next: 0x10000} }

func (f *fakeImage) alloc(b []byte) uint64 {
	a := f.next
	f.mem.Add(a, b)
	f.next += uint64(len(b)+15) &^ 15
	return a
}

func (f *fakeImage) str(s string) uint64 { return f.alloc(append([]byte(s), 0)) }

func (f *fakeImage) u64sym(name string, v uint64) {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	f.syms[name] = f.alloc(b)
}

// build writes tables with HotSpot's real x86-64 layouts (strides 48/48/16/16).
func (f *fakeImage) build(fields []Field, types []Type, ints, longs []Constant) {
	var s []byte
	for _, fl := range append(fields, Field{}) {
		e := make([]byte, 48)
		if fl.Type != "" {
			binary.LittleEndian.PutUint64(e[0:], f.str(fl.Type))
			binary.LittleEndian.PutUint64(e[8:], f.str(fl.Name))
			binary.LittleEndian.PutUint64(e[16:], f.str(fl.TypeString))
			if fl.Static {
				binary.LittleEndian.PutUint32(e[24:], 1)
			}
			binary.LittleEndian.PutUint64(e[32:], fl.Offset)
			binary.LittleEndian.PutUint64(e[40:], fl.Address)
		}
		s = append(s, e...)
	}
	f.u64sym("gHotSpotVMStructs", f.alloc(s))
	for name, v := range map[string]uint64{"ArrayStride": 48, "TypeNameOffset": 0, "FieldNameOffset": 8, "TypeStringOffset": 16, "IsStaticOffset": 24, "OffsetOffset": 32, "AddressOffset": 40} {
		f.u64sym("gHotSpotVMStructEntry"+name, v)
	}
	var ts []byte
	for _, ty := range append(types, Type{}) {
		e := make([]byte, 48)
		if ty.Name != "" {
			binary.LittleEndian.PutUint64(e[0:], f.str(ty.Name))
			if ty.Superclass != "" {
				binary.LittleEndian.PutUint64(e[8:], f.str(ty.Superclass))
			}
			for i, b := range []bool{ty.Oop, ty.Integer, ty.Unsigned} {
				if b {
					binary.LittleEndian.PutUint32(e[16+4*i:], 1)
				}
			}
			binary.LittleEndian.PutUint64(e[32:], ty.Size)
		}
		ts = append(ts, e...)
	}
	f.u64sym("gHotSpotVMTypes", f.alloc(ts))
	for name, v := range map[string]uint64{"ArrayStride": 48, "TypeNameOffset": 0, "SuperclassNameOffset": 8, "IsOopTypeOffset": 16, "IsIntegerTypeOffset": 20, "IsUnsignedOffset": 24, "SizeOffset": 32} {
		f.u64sym("gHotSpotVMTypeEntry"+name, v)
	}
	for _, k := range []struct {
		kind string
		cs   []Constant
	}{{"Int", ints}, {"Long", longs}} {
		var cs []byte
		for _, c := range append(k.cs, Constant{}) {
			e := make([]byte, 16)
			if c.Name != "" {
				binary.LittleEndian.PutUint64(e[0:], f.str(c.Name))
				binary.LittleEndian.PutUint64(e[8:], uint64(c.Value))
				if k.kind == "Int" {
					binary.LittleEndian.PutUint32(e[12:], 0) // 32-bit value, padding
				}
			}
			cs = append(cs, e...)
		}
		f.u64sym("gHotSpotVM"+k.kind+"Constants", f.alloc(cs))
		f.u64sym("gHotSpotVM"+k.kind+"ConstantEntryArrayStride", 16)
		f.u64sym("gHotSpotVM"+k.kind+"ConstantEntryNameOffset", 0)
		f.u64sym("gHotSpotVM"+k.kind+"ConstantEntryValueOffset", 8)
	}
}

func (f *fakeImage) sym(name string) (uint64, bool) { v, ok := f.syms[name]; return v, ok }

func sampleTable() ([]Field, []Type, []Constant, []Constant) {
	return []Field{
			{Type: "CodeBlob", Name: "_name", TypeString: "const char*", Offset: 8},
			{Type: "CodeBlob", Name: "_frame_size", TypeString: "int16_t", Offset: 44},
			{Type: "CodeCache", Name: "_heaps", TypeString: "GrowableArray<CodeHeap*>*", Static: true, Address: 0x7f00001000},
		}, []Type{
			{Name: "int16_t", Integer: true, Size: 2},
			{Name: "CodeBlob", Size: 64},
			{Name: "nmethod", Superclass: "CodeBlob", Size: 256},
			{Name: "oop", Oop: true, Size: 8},
			{Name: "uint32_t", Integer: true, Unsigned: true, Size: 4},
		}, []Constant{{Name: "InvocationEntryBci", Value: -1}, {Name: "CodeBlobKind::Nmethod", Value: 1}},
		[]Constant{{Name: "markWord::hash_mask", Value: 0x7fffffff}}
}

func TestReadTable(t *testing.T) {
	fields, types, ints, longs := sampleTable()
	img := newFakeImage()
	img.build(fields, types, ints, longs)
	got, err := ReadTable(&img.mem, img.sym)
	if err != nil {
		t.Fatal(err)
	}
	want := NewTable(fields, types, ints, longs)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Table{})); diff != "" {
		t.Error(diff)
	}
	if f, ok := got.Field("CodeBlob", "_frame_size"); !ok || f.Offset != 44 {
		t.Errorf("Field: %+v %v", f, ok)
	}
	if v, ok := got.Int("InvocationEntryBci"); !ok || v != -1 {
		t.Errorf("Int: %d %v", v, ok)
	}
	// Widths come from the types table, aliases resolve in order.
	j := &JVM{Table: got, Mem: &img.mem, r: reader{&img.mem}}
	r := j.resolver()
	if f := r.field("nmethod|CodeBlob", "_code_begin|_frame_size"); !f.OK || f.Type != "CodeBlob" || f.Size != 2 {
		t.Errorf("alias resolution: %+v", f)
	}
	if f := r.field("CodeBlob", "_name"); f.Size != 8 {
		t.Errorf("pointer width: %+v", f)
	}
	r.field("Nope", "_x")
	var me *MissingError
	if err := r.err("test"); !errors.As(err, &me) || len(me.Missing) != 1 || !errors.Is(err, ErrUnsupportedJVM) {
		t.Errorf("missing: %v", err)
	}
}

func TestReadTableErrors(t *testing.T) {
	fields, types, ints, longs := sampleTable()
	img := newFakeImage()
	img.build(fields, types, ints, longs)
	// Not initialised: strides still zero.
	zero := newFakeImage()
	zero.build(fields, types, ints, longs)
	binary.LittleEndian.PutUint64(zero.mem.regions[indexOf(&zero.mem, zero.syms["gHotSpotVMStructEntryArrayStride"])].data, 0)
	if _, err := ReadTable(&zero.mem, zero.sym); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("zero stride: %v", err)
	}
	// A missing symbol.
	if _, err := ReadTable(&img.mem, func(n string) (uint64, bool) {
		if n == "gHotSpotVMTypes" {
			return 0, false
		}
		return img.sym(n)
	}); err == nil {
		t.Error("missing symbol: no error")
	}
	// Truncated memory: the tables point into nothing.
	var short Bytes
	for n, a := range img.syms {
		if n != "gHotSpotVMStructs" {
			b := make([]byte, 8)
			img.mem.ReadAt(b, a)
			short.Add(a, b)
		}
	}
	if _, err := ReadTable(&short, img.sym); !errors.Is(err, ErrFault) {
		t.Errorf("truncated: %v", err)
	}
}

func indexOf(b *Bytes, addr uint64) int {
	for i, r := range b.regions {
		if r.addr == addr {
			return i
		}
	}
	return -1
}

// FuzzReadTable mutates the bytes of a valid image: the reader must stop with an error or a table,
// never panic or loop.
func FuzzReadTable(f *testing.F) {
	fields, types, ints, longs := sampleTable()
	img := newFakeImage()
	img.build(fields, types, ints, longs)
	var flat []byte
	for _, r := range img.mem.regions {
		flat = append(flat, r.data...)
	}
	f.Add(flat, uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, data []byte, pos uint16, val byte) {
		var m Bytes
		off := 0
		for _, r := range img.mem.regions {
			if off+len(r.data) > len(data) {
				break
			}
			b := append([]byte(nil), data[off:off+len(r.data)]...)
			m.Add(r.addr, b)
			off += len(r.data)
		}
		if len(m.regions) > 0 {
			rr := m.regions[int(pos)%len(m.regions)]
			if len(rr.data) > 0 {
				rr.data[int(pos)%len(rr.data)] = val
			}
		}
		_, _ = ReadTable(&m, img.sym)
	})
}
