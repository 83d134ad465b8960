package vmstructs

import (
	"errors"
	"fmt"
	"strings"
)

// Field is one entry of gHotSpotVMStructs: a field of a HotSpot C++ type.
type Field struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	TypeString string `json:"type_string,omitempty"` // C++ type of the field, e.g. "int", "CodeHeap*"
	Static     bool   `json:"static"`
	Offset     uint64 `json:"offset,omitempty"`  // byte offset in the object (non-static)
	Address    uint64 `json:"address,omitempty"` // absolute address in the process (static)
}

// Type is one entry of gHotSpotVMTypes.
type Type struct {
	Name       string `json:"name"`
	Superclass string `json:"superclass,omitempty"`
	Oop        bool   `json:"oop,omitempty"`
	Integer    bool   `json:"integer,omitempty"`
	Unsigned   bool   `json:"unsigned,omitempty"`
	Size       uint64 `json:"size"`
}

// Constant is one entry of gHotSpotVMIntConstants or gHotSpotVMLongConstants.
type Constant struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Table is the whole self-description HotSpot exports: its types, their fields and its constants.
type Table struct {
	Fields []Field    `json:"fields"`
	Types  []Type     `json:"types"`
	Ints   []Constant `json:"int_constants"`
	Longs  []Constant `json:"long_constants"`

	fields map[string]map[string]int
	types  map[string]int
	ints   map[string]int64
	longs  map[string]int64
}

// Field looks up a field of a type.
func (t *Table) Field(typ, name string) (Field, bool) {
	i, ok := t.fields[typ][name]
	if !ok {
		return Field{}, false
	}
	return t.Fields[i], true
}

// Type looks up a type.
func (t *Table) Type(name string) (Type, bool) {
	i, ok := t.types[name]
	if !ok {
		return Type{}, false
	}
	return t.Types[i], true
}

// Int looks up an int constant.
func (t *Table) Int(name string) (int64, bool) { v, ok := t.ints[name]; return v, ok }

// Long looks up a long constant.
func (t *Table) Long(name string) (int64, bool) { v, ok := t.longs[name]; return v, ok }

// index builds the lookup maps; the first entry of a name wins.
func (t *Table) index() {
	t.fields = map[string]map[string]int{}
	for i, f := range t.Fields {
		m := t.fields[f.Type]
		if m == nil {
			m = map[string]int{}
			t.fields[f.Type] = m
		}
		if _, dup := m[f.Name]; !dup {
			m[f.Name] = i
		}
	}
	t.types = map[string]int{}
	for i, ty := range t.Types {
		if _, dup := t.types[ty.Name]; !dup {
			t.types[ty.Name] = i
		}
	}
	t.ints = map[string]int64{}
	for _, c := range t.Ints {
		if _, dup := t.ints[c.Name]; !dup {
			t.ints[c.Name] = c.Value
		}
	}
	t.longs = map[string]int64{}
	for _, c := range t.Longs {
		if _, dup := t.longs[c.Name]; !dup {
			t.longs[c.Name] = c.Value
		}
	}
}

// NewTable builds a Table from its entries (recorded tables, tests).
func NewTable(fields []Field, types []Type, ints, longs []Constant) *Table {
	t := &Table{Fields: fields, Types: types, Ints: ints, Longs: longs}
	t.index()
	return t
}

// The exported symbols that describe the tables (src/hotspot/share/runtime/vmStructs.cpp).
var tableSymbols = []string{
	"gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride",
	"gHotSpotVMStructEntryTypeNameOffset", "gHotSpotVMStructEntryFieldNameOffset",
	"gHotSpotVMStructEntryTypeStringOffset", "gHotSpotVMStructEntryIsStaticOffset",
	"gHotSpotVMStructEntryOffsetOffset", "gHotSpotVMStructEntryAddressOffset",
	"gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride",
	"gHotSpotVMTypeEntryTypeNameOffset", "gHotSpotVMTypeEntrySuperclassNameOffset",
	"gHotSpotVMTypeEntryIsOopTypeOffset", "gHotSpotVMTypeEntryIsIntegerTypeOffset",
	"gHotSpotVMTypeEntryIsUnsignedOffset", "gHotSpotVMTypeEntrySizeOffset",
	"gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride",
	"gHotSpotVMIntConstantEntryNameOffset", "gHotSpotVMIntConstantEntryValueOffset",
	"gHotSpotVMLongConstants", "gHotSpotVMLongConstantEntryArrayStride",
	"gHotSpotVMLongConstantEntryNameOffset", "gHotSpotVMLongConstantEntryValueOffset",
}

// Limits that keep a damaged or hostile table from running away.
const (
	maxStride  = 256
	maxEntries = 128 << 10
	maxName    = 512
)

// ErrNotInitialized: the JVM has not filled in its tables yet (its static initialisers run early
// in libjvm's start-up; a process caught before that reads zeros).
var ErrNotInitialized = errors.New("vmstructs: tables not initialised yet")

// TableError is a malformed table.
type TableError struct {
	Table string
	Entry int
	Err   error
}

func (e *TableError) Error() string {
	if e.Entry >= 0 {
		return fmt.Sprintf("vmstructs: %s entry %d: %v", e.Table, e.Entry, e.Err)
	}
	return fmt.Sprintf("vmstructs: %s: %v", e.Table, e.Err)
}

func (e *TableError) Unwrap() error { return e.Err }

// ReadTable reads the four tables from memory. sym gives the address (in m) of each exported
// symbol of tableSymbols. The strides and offsets are read from memory too: they live in .bss and
// are computed by the JVM's static initialisers, so the file alone does not have them.
func ReadTable(m Memory, sym func(name string) (uint64, bool)) (*Table, error) {
	// A few thousand entries and their strings: read page by page, not field by field (40 ms -> 3 ms
	// through /proc/<pid>/mem).
	r := reader{&tablePages{m: m, pages: map[uint64][]byte{}}}
	vals := map[string]uint64{}
	for _, name := range tableSymbols {
		addr, ok := sym(name)
		if !ok {
			return nil, fmt.Errorf("vmstructs: symbol %s not found (not a HotSpot libjvm?)", name)
		}
		v, err := r.u64(addr)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: read %s: %w", name, err)
		}
		vals[name] = v
	}
	t := &Table{}
	var err error
	if t.Fields, err = readFields(r, vals); err != nil {
		return nil, err
	}
	if t.Types, err = readTypes(r, vals); err != nil {
		return nil, err
	}
	if t.Ints, err = readConstants(r, vals, "Int", true); err != nil {
		return nil, err
	}
	if t.Longs, err = readConstants(r, vals, "Long", false); err != nil {
		return nil, err
	}
	t.index()
	return t, nil
}

// layout checks a table's stride and member offsets.
func layout(table string, stride uint64, offs map[string]uint64, widths map[string]uint64) error {
	if stride == 0 {
		return &TableError{Table: table, Entry: -1, Err: ErrNotInitialized}
	}
	if stride > maxStride {
		return &TableError{Table: table, Entry: -1, Err: fmt.Errorf("stride %d is implausible", stride)}
	}
	for name, off := range offs {
		if off+widths[name] > stride {
			return &TableError{Table: table, Entry: -1, Err: fmt.Errorf("member %s at %d does not fit the stride %d", name, off, stride)}
		}
	}
	return nil
}

func readFields(r reader, v map[string]uint64) ([]Field, error) {
	const p = "gHotSpotVMStructEntry"
	base, stride := v["gHotSpotVMStructs"], v[p+"ArrayStride"]
	offs := map[string]uint64{
		"typeName": v[p+"TypeNameOffset"], "fieldName": v[p+"FieldNameOffset"], "typeString": v[p+"TypeStringOffset"],
		"isStatic": v[p+"IsStaticOffset"], "offset": v[p+"OffsetOffset"], "address": v[p+"AddressOffset"],
	}
	if err := layout("structs", stride, offs, map[string]uint64{"typeName": 8, "fieldName": 8, "typeString": 8, "isStatic": 4, "offset": 8, "address": 8}); err != nil {
		return nil, err
	}
	if base == 0 {
		return nil, &TableError{Table: "structs", Entry: -1, Err: ErrNotInitialized}
	}
	var out []Field
	for i := 0; ; i++ {
		if i >= maxEntries {
			return nil, &TableError{Table: "structs", Entry: i, Err: errors.New("no end marker")}
		}
		e := base + uint64(i)*stride
		b, err := r.bytes(e, int(stride))
		if err != nil {
			return nil, &TableError{Table: "structs", Entry: i, Err: err}
		}
		typeName, fieldName := leUint(b, offs["typeName"], 8), leUint(b, offs["fieldName"], 8)
		if typeName == 0 || fieldName == 0 {
			return out, nil
		}
		f := Field{
			Static:  leUint(b, offs["isStatic"], 4) != 0,
			Offset:  leUint(b, offs["offset"], 8),
			Address: leUint(b, offs["address"], 8),
		}
		if f.Type, err = r.cstring(typeName, maxName); err == nil {
			if f.Name, err = r.cstring(fieldName, maxName); err == nil {
				if ts := leUint(b, offs["typeString"], 8); ts != 0 {
					f.TypeString, err = r.cstring(ts, maxName)
				}
			}
		}
		if err != nil {
			return nil, &TableError{Table: "structs", Entry: i, Err: err}
		}
		if f.Static {
			f.Offset = 0
		} else {
			f.Address = 0
		}
		out = append(out, f)
	}
}

func readTypes(r reader, v map[string]uint64) ([]Type, error) {
	const p = "gHotSpotVMTypeEntry"
	base, stride := v["gHotSpotVMTypes"], v[p+"ArrayStride"]
	offs := map[string]uint64{
		"typeName": v[p+"TypeNameOffset"], "superclassName": v[p+"SuperclassNameOffset"],
		"isOopType": v[p+"IsOopTypeOffset"], "isIntegerType": v[p+"IsIntegerTypeOffset"],
		"isUnsigned": v[p+"IsUnsignedOffset"], "size": v[p+"SizeOffset"],
	}
	if err := layout("types", stride, offs, map[string]uint64{"typeName": 8, "superclassName": 8, "isOopType": 4, "isIntegerType": 4, "isUnsigned": 4, "size": 8}); err != nil {
		return nil, err
	}
	if base == 0 {
		return nil, &TableError{Table: "types", Entry: -1, Err: ErrNotInitialized}
	}
	var out []Type
	for i := 0; ; i++ {
		if i >= maxEntries {
			return nil, &TableError{Table: "types", Entry: i, Err: errors.New("no end marker")}
		}
		b, err := r.bytes(base+uint64(i)*stride, int(stride))
		if err != nil {
			return nil, &TableError{Table: "types", Entry: i, Err: err}
		}
		name := leUint(b, offs["typeName"], 8)
		if name == 0 {
			return out, nil
		}
		ty := Type{
			Oop:      leUint(b, offs["isOopType"], 4) != 0,
			Integer:  leUint(b, offs["isIntegerType"], 4) != 0,
			Unsigned: leUint(b, offs["isUnsigned"], 4) != 0,
			Size:     leUint(b, offs["size"], 8),
		}
		if ty.Name, err = r.cstring(name, maxName); err == nil {
			if sc := leUint(b, offs["superclassName"], 8); sc != 0 {
				ty.Superclass, err = r.cstring(sc, maxName)
			}
		}
		if err != nil {
			return nil, &TableError{Table: "types", Entry: i, Err: err}
		}
		out = append(out, ty)
	}
}

func readConstants(r reader, v map[string]uint64, kind string, int32Value bool) ([]Constant, error) {
	p := "gHotSpotVM" + kind + "ConstantEntry"
	table := strings.ToLower(kind) + " constants"
	base, stride := v["gHotSpotVM"+kind+"Constants"], v[p+"ArrayStride"]
	width := uint64(8)
	if int32Value {
		width = 4
	}
	offs := map[string]uint64{"name": v[p+"NameOffset"], "value": v[p+"ValueOffset"]}
	if err := layout(table, stride, offs, map[string]uint64{"name": 8, "value": width}); err != nil {
		return nil, err
	}
	if base == 0 {
		return nil, &TableError{Table: table, Entry: -1, Err: ErrNotInitialized}
	}
	var out []Constant
	for i := 0; ; i++ {
		if i >= maxEntries {
			return nil, &TableError{Table: table, Entry: i, Err: errors.New("no end marker")}
		}
		b, err := r.bytes(base+uint64(i)*stride, int(stride))
		if err != nil {
			return nil, &TableError{Table: table, Entry: i, Err: err}
		}
		name := leUint(b, offs["name"], 8)
		if name == 0 {
			return out, nil
		}
		c := Constant{}
		if int32Value {
			c.Value = int64(int32(leUint(b, offs["value"], 4)))
		} else {
			c.Value = int64(leUint(b, offs["value"], 8))
		}
		if c.Name, err = r.cstring(name, maxName); err != nil {
			return nil, &TableError{Table: table, Entry: i, Err: err}
		}
		out = append(out, c)
	}
}

// tablePages serves reads from whole 4 KiB pages read once; a page that cannot be read whole is
// read directly instead.
type tablePages struct {
	m     Memory
	pages map[uint64][]byte // nil value: not readable as a whole page
}

const tablePageSize = 4096

func (c *tablePages) ReadAt(p []byte, addr uint64) (int, error) {
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		base := a &^ (tablePageSize - 1)
		page, seen := c.pages[base]
		if !seen {
			if len(c.pages) >= 4096 {
				clear(c.pages) // a bounded cache: 16 MiB at most
			}
			buf := make([]byte, tablePageSize)
			if _, err := c.m.ReadAt(buf, base); err == nil {
				page = buf
			}
			c.pages[base] = page
		}
		if page == nil {
			m, err := c.m.ReadAt(p[n:], a)
			return n + m, err
		}
		n += copy(p[n:], page[a-base:])
	}
	return n, nil
}
