package vmstructs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Flag is one of the JVM's -XX flags, read from its JVMFlag table.
//
// Exactly one of Bool, Int, Uint, Double and Str is set, by Type: bool; int and intx; uint, uintx,
// uint64_t and size_t; double (nil when the value is not finite, which JSON cannot carry); ccstr and
// ccstrlist (nil for a null string). Value is the value as `jcmd <pid> VM.flags -all` prints it.
type Flag struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Value  string   `json:"value"`
	Bool   *bool    `json:"bool,omitempty"`
	Int    *int64   `json:"int,omitempty"`
	Uint   *uint64  `json:"uint,omitempty"`
	Double *float64 `json:"double,omitempty"`
	Str    *string  `json:"str,omitempty"`
	// Origin is where the value came from, as VM.flags -all prints it: "default", "command line",
	// "environment", "config file", "management", "ergonomic", "command line, ergonomic", "attach",
	// "internal", "jimage".
	Origin string `json:"origin"`
	// Kinds are the flag's kind bits in VM.flags -all order and spelling ("product", "manageable",
	// "diagnostic", "experimental", "notproduct", "develop", "pd", "C1", "C2", "ARCH", "JVMCI",
	// "lp64_product", "rw" on JDK 11); nil where the bit layout is unknown (see kindLayouts).
	Kinds []string `json:"kinds"`
	Addr  uint64   `json:"addr"` // address of the value in the JVM

	bits uint64 // JVMFlag::_flags
}

// ErrNoSuchFlag is returned for a flag name the JVM does not have.
var ErrNoSuchFlag = errors.New("no such flag")

// ErrFlagNotWritable is wrapped by SetBoolFlag's refusals.
var ErrFlagNotWritable = errors.New("flag cannot be written")

// Limits on the untrusted JVMFlag table.
const (
	maxFlagEntries = 16 << 10 // JDK 17 has 1,270 entries, JDK 25 1,290
	maxFlagName    = 256
	maxFlagValue   = 64 << 10 // ccstrlist values (many -XX:CompileCommand) can be long
	// flagPages bounds the page cache of one read of the table: its names and values sit in a few pages
	// of libjvm, so Flags makes ~40 reads instead of ~2,600.
	flagPages = 1024
)

// flagTypes is the JVMFlag::FlagType enum (src/hotspot/share/runtime/flags/jvmFlag.hpp:
// JVM_FLAG_NON_STRING_TYPES_DO, then ccstr and ccstrlist), the value of JVMFlag::_type since JDK 16.
// Verified on JDK 17 and 25 against the type column of VM.flags -all for every flag it prints.
var flagTypes = []string{"bool", "int", "uint", "intx", "uintx", "uint64_t", "size_t", "double", "ccstr", "ccstrlist"}

// kindBit is one kind bit of JVMFlag::_flags. VMStructs exports the origin constants
// (JVMFlagOrigin::*, VALUE_ORIGIN_MASK = bits 0-3, WAS_SET_ON_COMMAND_LINE = bit 17) but not the
// kind bits, whose positions changed between JDK 17 and 25.
type kindBit struct {
	bit  uint64
	name string
}

// The kind layouts, in the order in which JVMFlag::print_kind prints the names. The 17 and 25 ones
// were derived from the live JVMs: for every flag that VM.flags -all prints (diagnostic and
// experimental flags unlocked), the bit set by exactly the flags that show a kind. develop and
// notproduct flags are never printed by product builds: every flag that VM.flags -all leaves out has
// bit 8 or 9 (17) or bit 8 (25), and the flags known from the sources (ZapUnusedHeapArea develop,
// CheckCompressedOops notproduct in 17 and develop in 25) have the bits the table says.
var (
	// kinds11: JDK 11 (jvmFlag.hpp's JVMFlag::Flags, the same in 13; checked against VM.flags -all
	// of 11.0.24). KIND_READ_WRITE prints as "rw"; UseCompressedOops is {lp64_product} alone.
	kinds11 = []kindBit{
		{1 << 16, "JVMCI"}, {1 << 12, "C1"}, {1 << 13, "C2"}, {1 << 14, "ARCH"}, {1 << 10, "pd"},
		{1 << 4, "product"}, {1 << 5, "manageable"}, {1 << 6, "diagnostic"}, {1 << 7, "experimental"},
		{1 << 8, "notproduct"}, {1 << 9, "develop"}, {1 << 15, "lp64_product"}, {1 << 11, "rw"},
	}
	// kinds17: JDK 17 (jvmFlag.hpp of 17 agrees).
	kinds17 = []kindBit{
		{1 << 15, "JVMCI"}, {1 << 11, "C1"}, {1 << 12, "C2"}, {1 << 13, "ARCH"}, {1 << 10, "pd"},
		{1 << 4, "product"}, {1 << 5, "manageable"}, {1 << 6, "diagnostic"}, {1 << 7, "experimental"},
		{1 << 8, "notproduct"}, {1 << 9, "develop"}, {1 << 14, "lp64_product"},
	}
	// kinds25: JDK 25 (and 21). KIND_NOT_PRODUCT is gone (notproduct flags became develop flags) and
	// every kind from develop on moved down one bit.
	kinds25 = []kindBit{
		{1 << 14, "JVMCI"}, {1 << 10, "C1"}, {1 << 11, "C2"}, {1 << 12, "ARCH"}, {1 << 9, "pd"},
		{1 << 4, "product"}, {1 << 5, "manageable"}, {1 << 6, "diagnostic"}, {1 << 7, "experimental"},
		{1 << 8, "develop"}, {1 << 13, "lp64_product"},
	}
)

// kindLayouts are the known layouts with the release they were verified on and the kinds
// kindAnchor has under them.
var kindLayouts = []struct {
	major  int
	kinds  []kindBit
	anchor string
}{
	{11, kinds11, "lp64_product"},
	{17, kinds17, "product lp64_product"},
	{25, kinds25, "product lp64_product"},
}

// kindAnchor is a flag whose kinds are known in every JDK: its bits tell the layouts apart on
// releases we have not run (lp64_product is bit 15 in 11, 14 in 17, 13 in 25).
const kindAnchor = "UseCompressedOops"

// origins11 are JVMFlag::Flags' origins before JDK 16 moved them to JVMFlagOrigin and exported them
// (jvmFlag.hpp of 11 and 13): the low four bits, and ORIG_COMMAND_LINE for "command line, ergonomic".
var origins11 = map[int64]string{
	0: "default", 1: "command line", 2: "environment", 3: "config file", 4: "management", 5: "ergonomic",
	6: "attach", 7: "internal", 8: "jimage",
}

const (
	originMask11 = 0xf
	cmdline11    = 1 << 17
)

// flagTable is the resolved JVMFlag layout and its entries.
type flagTable struct {
	base, count, stride   uint64
	addr, name, typ, bits F
	typeIsString          bool // before JDK 16 _type was a const char* ("bool"); untested
	origins               map[int64]string
	originMask, cmdline   uint64
	kinds                 []kindBit // nil: not decoded
	r                     reader    // through a page cache, one per call
}

func (j *JVM) flagTable() (*flagTable, error) {
	r := j.resolver()
	arr := r.field("JVMFlag", "flags")
	num := r.field("JVMFlag", "numFlags")
	t := &flagTable{
		addr:   r.field("JVMFlag", "_addr"),
		name:   r.field("JVMFlag", "_name"),
		typ:    r.field("JVMFlag", "_type"),
		bits:   r.optField("JVMFlag", "_flags"),
		stride: r.typeSize("JVMFlag"),
		r:      reader{Cached(j.Mem, flagPages)},
	}
	if err := r.err("flags"); err != nil {
		return nil, err
	}
	// Origins are optional: without them a flag has no Origin (and no Kinds), the values still read.
	if mask, ok := j.flagIntConst("JVMFlag::VALUE_ORIGIN_MASK"); ok && t.bits.OK {
		t.originMask = uint64(mask)
		t.origins = map[int64]string{}
		for c, s := range map[string]string{
			"DEFAULT": "default", "COMMAND_LINE": "command line", "ENVIRON_VAR": "environment",
			"CONFIG_FILE": "config file", "MANAGEMENT": "management", "ERGONOMIC": "ergonomic",
			"ATTACH_ON_DEMAND": "attach", "INTERNAL": "internal", "JIMAGE_RESOURCE": "jimage",
		} {
			if v, ok := j.flagIntConst("JVMFlagOrigin::" + c + "|JVMFlag::" + c); ok {
				t.origins[v] = s
			}
		}
		if v, ok := j.flagIntConst("JVMFlag::WAS_SET_ON_COMMAND_LINE|JVMFlag::ORIG_COMMAND_LINE"); ok {
			t.cmdline = uint64(v)
		}
	}
	t.typeIsString = strings.HasSuffix(strings.TrimSpace(j.flagFieldTypeString(t.typ)), "*")
	if t.origins == nil && t.typeIsString && t.bits.OK {
		t.origins, t.originMask, t.cmdline = origins11, originMask11, cmdline11
	}
	if t.stride == 0 || t.stride > maxStride {
		return nil, fmt.Errorf("vmstructs: flags: sizeof(JVMFlag) = %d is implausible", t.stride)
	}
	for _, f := range []F{t.addr, t.name, t.typ, t.bits} {
		w := f.Size
		if w == 0 || w > 8 {
			w = 8
		}
		if f.OK && f.Offset+w > t.stride {
			return nil, fmt.Errorf("vmstructs: flags: JVMFlag::%s at %d does not fit sizeof(JVMFlag) = %d", f.Name, f.Offset, t.stride)
		}
	}
	var err error
	if t.base, err = j.r.u64(arr.Addr); err != nil {
		return nil, fmt.Errorf("vmstructs: flags: read JVMFlag::flags: %w", err)
	}
	if t.count, err = j.static(num); err != nil {
		return nil, fmt.Errorf("vmstructs: flags: read JVMFlag::numFlags: %w", err)
	}
	if t.base == 0 || t.count == 0 {
		return nil, fmt.Errorf("vmstructs: flags: %w", ErrNotInitialized)
	}
	if t.count > maxFlagEntries {
		return nil, fmt.Errorf("vmstructs: flags: JVMFlag::numFlags = %d is implausible", t.count)
	}
	return t, nil
}

// chooseKinds picks the kind layout: the one under which the anchor flag reads as it should, else
// by release (11, 17 and 25 verified; others are not decoded).
func (t *flagTable) chooseKinds(raws []rawFlag, major int) {
	if t.origins == nil {
		return
	}
	for _, rf := range raws {
		if rf.name != kindAnchor {
			continue
		}
		var match [][]kindBit
		for _, l := range kindLayouts {
			if strings.Join(decodeKinds(l.kinds, rf.bits), " ") == l.anchor {
				match = append(match, l.kinds)
			}
		}
		if len(match) == 1 {
			t.kinds = match[0]
		}
		return
	}
	for _, l := range kindLayouts {
		if l.major == major {
			t.kinds = l.kinds
		}
	}
}

func decodeKinds(layout []kindBit, bits uint64) []string {
	out := []string{}
	for _, k := range layout {
		if bits&k.bit != 0 {
			out = append(out, k.name)
		}
	}
	return out
}

// flagIntConst looks up an int constant by aliases without recording anything missing.
func (j *JVM) flagIntConst(names string) (int64, bool) {
	for _, n := range strings.Split(names, "|") {
		if v, ok := j.Table.Int(n); ok {
			return v, true
		}
	}
	return 0, false
}

func (j *JVM) flagFieldTypeString(f F) string {
	if fl, ok := j.Table.Field(f.Type, f.Name); ok {
		return fl.TypeString
	}
	return ""
}

// flagsJDK is the JVM's feature release, 0 if unknown.
func (j *JVM) flagsJDK() int {
	if v, err := j.vmMajor("flags"); err == nil && v > 0 && v < 1000 {
		return v
	}
	v, err := j.Version()
	if err != nil {
		return 0
	}
	digits := strings.FieldsFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if len(digits) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(digits[0])
	return n
}

// rawFlag is one JVMFlag entry before its value is read.
type rawFlag struct {
	name       string
	typ        int64
	typeString string
	addr, bits uint64
}

// readFlags reads the JVMFlag array at once, then each entry's name. The table ends at numFlags or at
// the first entry without a name (HotSpot's terminator).
func (j *JVM) readFlags() (*flagTable, []rawFlag, error) {
	t, err := j.flagTable()
	if err != nil {
		return nil, nil, err
	}
	buf, err := t.r.bytes(t.base, int(t.count*t.stride))
	if err != nil {
		return nil, nil, fmt.Errorf("vmstructs: flags: read the JVMFlag array: %w", err)
	}
	raws := make([]rawFlag, 0, t.count)
	for i := uint64(0); i < t.count; i++ {
		e := buf[i*t.stride : (i+1)*t.stride]
		namePtr := leUint(e, t.name.Offset, 8)
		if namePtr == 0 {
			break
		}
		name, err := t.r.cstring(namePtr, maxFlagName)
		if err != nil {
			return nil, nil, fmt.Errorf("vmstructs: flags: entry %d: name: %w", i, err)
		}
		rf := rawFlag{name: name, addr: leUint(e, t.addr.Offset, 8)}
		if t.bits.OK {
			rf.bits = leUint(e, t.bits.Offset, t.bits.Size)
		}
		if t.typeIsString {
			if p := leUint(e, t.typ.Offset, 8); p != 0 {
				rf.typeString, _ = t.r.cstring(p, 32)
			}
			rf.typ = -1
		} else {
			size := t.typ.Size
			if size == 0 || size > 8 {
				size = 4
			}
			rf.typ = signExtend(leUint(e, t.typ.Offset, size), size)
		}
		raws = append(raws, rf)
	}
	t.chooseKinds(raws, j.flagsJDK())
	return t, raws, nil
}

// Flags reads every flag of the JVM's JVMFlag table (JVMFlag::flags, JVMFlag::numFlags), sorted by
// name like VM.flags -all. It includes the flags that VM.flags -all leaves out: locked diagnostic and
// experimental flags and, in product builds, the develop (and on JDK 17 notproduct) flags, whose
// values are compile-time constants (their Kinds say so).
//
// A flag whose value cannot be read (a string freed and unmapped while we read it) is returned
// without a value, and the error, returned with the flags, names it.
func (j *JVM) Flags() ([]Flag, error) {
	t, raws, err := j.readFlags()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(raws, func(a, b rawFlag) int { return strings.Compare(a.name, b.name) }) // names are unique
	out := make([]Flag, 0, len(raws))
	var errs []error
	for _, rf := range raws {
		f, err := j.decodeFlag(t, rf)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

// Flag reads one flag by its name; ErrNoSuchFlag if the JVM has none of that name.
func (j *JVM) Flag(name string) (Flag, error) {
	t, raws, err := j.readFlags()
	if err != nil {
		return Flag{}, err
	}
	for _, rf := range raws {
		if rf.name == name {
			return j.decodeFlag(t, rf)
		}
	}
	return Flag{}, fmt.Errorf("vmstructs: %w: %s", ErrNoSuchFlag, name)
}

// decodeFlag reads a flag's value and formats it the way JVMFlag::print_on does.
func (j *JVM) decodeFlag(t *flagTable, rf rawFlag) (Flag, error) {
	f := Flag{Name: rf.name, Addr: rf.addr, bits: rf.bits, Type: rf.typeString}
	if !t.typeIsString {
		if rf.typ >= 0 && rf.typ < int64(len(flagTypes)) {
			f.Type = flagTypes[rf.typ]
		} else {
			f.Type = fmt.Sprintf("type%d", rf.typ)
		}
	}
	if t.origins != nil {
		f.Origin = t.origin(rf.bits)
	}
	if t.kinds != nil {
		f.Kinds = decodeKinds(t.kinds, rf.bits)
	}
	if rf.addr == 0 {
		return f, nil
	}
	if err := j.readFlagValue(t.r, &f); err != nil {
		return f, fmt.Errorf("vmstructs: flags: %s: %w", f.Name, err)
	}
	return f, nil
}

func (t *flagTable) origin(bits uint64) string {
	o := int64(bits & t.originMask)
	s, ok := t.origins[o]
	if !ok {
		return fmt.Sprintf("origin %d", o)
	}
	if s == "ergonomic" && t.cmdline != 0 && bits&t.cmdline != 0 {
		return "command line, ergonomic"
	}
	return s
}

// flagWidths are the LP64 sizes of the flag types, used only where the types table lacks one.
var flagWidths = map[string]uint64{"bool": 1, "int": 4, "uint": 4, "intx": 8, "uintx": 8, "uint64_t": 8, "size_t": 8}

// flagTypeWidth is the size of a flag's C type from the types table. HotSpot does not export double
// (8 bytes on every platform it supports).
func (j *JVM) flagTypeWidth(name string, fallback uint64) uint64 {
	if ty, ok := j.Table.Type(name); ok && ty.Size > 0 && ty.Size <= 8 {
		return ty.Size
	}
	return fallback
}

func (j *JVM) readFlagValue(r reader, f *Flag) error {
	switch f.Type {
	case "bool":
		v, err := r.uint(f.Addr, j.flagTypeWidth("bool", 1))
		if err != nil {
			return err
		}
		b := v != 0
		f.Bool = &b
		f.Value = strconv.FormatBool(b)
	case "int", "intx":
		v, err := r.int(f.Addr, j.flagTypeWidth(f.Type, flagWidths[f.Type]))
		if err != nil {
			return err
		}
		f.Int = &v
		f.Value = strconv.FormatInt(v, 10)
	case "uint", "uintx", "uint64_t", "size_t":
		v, err := r.uint(f.Addr, j.flagTypeWidth(f.Type, flagWidths[f.Type]))
		if err != nil {
			return err
		}
		f.Uint = &v
		f.Value = strconv.FormatUint(v, 10)
	case "double":
		v, err := r.u64(f.Addr)
		if err != nil {
			return err
		}
		d := math.Float64frombits(v)
		if !math.IsNaN(d) && !math.IsInf(d, 0) {
			f.Double = &d
		}
		f.Value = formatDouble(d)
	case "ccstr", "ccstrlist":
		p, err := r.u64(f.Addr)
		if err != nil {
			return err
		}
		if p == 0 {
			return nil
		}
		s, err := r.cstring(p, maxFlagValue)
		if err != nil {
			return err
		}
		f.Str = &s
		f.Value = s
	}
	return nil
}

// formatDouble is C's printf("%f"), which HotSpot uses for double flags.
func formatDouble(d float64) string {
	switch {
	case math.IsNaN(d):
		if math.Signbit(d) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(d, 1):
		return "inf"
	case math.IsInf(d, -1):
		return "-inf"
	}
	return strconv.FormatFloat(d, 'f', 6, 64)
}

func (f Flag) hasKind(k string) bool {
	for _, s := range f.Kinds {
		if s == k {
			return true
		}
	}
	return false
}

// Writer writes into a live JVM's memory. OpenProcessMemoryWriter returns one; it is separate from
// Memory so that nothing writes unless the caller opened a Writer on purpose.
type Writer interface {
	WriteAt(p []byte, addr uint64) (int, error)
	PID() int // the process written to
}

// SetBoolFlag stores v into the bool flag name of a live JVM through w and returns the value it
// replaced; SetBoolFlag(name, old, w) restores it. Nothing else is written: not the flag's origin,
// which VM.flags keeps showing as before.
//
// It refuses (ErrFlagNotWritable) flags that are not bool, develop and notproduct flags (constants in
// product builds: the JVM's code never reads the variable), and flags whose value is not a byte holding
// 0 or 1 inside libjvm's own writable data (.data, .bss), where HotSpot keeps every flag variable.
//
// The risk is the caller's: the JVM reads its flags without synchronisation, expecting most of them
// never to change after start-up. A one-byte store is atomic on x86-64 and arm64, so the JVM sees either
// the old or the new value, but code that read the flag earlier and relies on it staying the same (GC
// and compiler choices such as UseG1GC or UseCompressedOops, code already compiled with the old value)
// can misbehave or crash. Many flags are read only at start-up: changing them has no effect at all.
// Manageable flags (Kinds contains "manageable") are the ones HotSpot itself lets tools change at run
// time (jcmd VM.set_flag); prefer that when the JVM's attach mechanism works.
func (j *JVM) SetBoolFlag(name string, v bool, w Writer) (old bool, err error) {
	if w == nil {
		return false, fmt.Errorf("vmstructs: set flag %s: no writer", name)
	}
	if j.PID == 0 {
		return false, fmt.Errorf("vmstructs: set flag %s: %w: not a live process", name, ErrFlagNotWritable)
	}
	if w.PID() != j.PID {
		return false, fmt.Errorf("vmstructs: set flag %s: the writer is for process %d, the JVM is %d", name, w.PID(), j.PID)
	}
	f, err := j.Flag(name)
	if err != nil {
		return false, err
	}
	if f.Type != "bool" {
		return false, fmt.Errorf("vmstructs: set flag %s: %w: it is %s, only bool flags can be written", name, ErrFlagNotWritable, f.Type)
	}
	if f.hasKind("develop") || f.hasKind("notproduct") {
		return false, fmt.Errorf("vmstructs: set flag %s: %w: a %s flag is a constant in this build", name, ErrFlagNotWritable, strings.Join(f.Kinds, " "))
	}
	if f.Addr == 0 {
		return false, fmt.Errorf("vmstructs: set flag %s: %w: no address", name, ErrFlagNotWritable)
	}
	if err := checkFlagAddr(j.PID, j.LibJVM, f.Addr); err != nil {
		return false, fmt.Errorf("vmstructs: set flag %s: %w", name, err)
	}
	cur, err := j.r.u8(f.Addr)
	if err != nil {
		return false, fmt.Errorf("vmstructs: set flag %s: %w", name, err)
	}
	if cur > 1 {
		return false, fmt.Errorf("vmstructs: set flag %s: %w: the byte at %#x holds %d, not a bool", name, ErrFlagNotWritable, f.Addr, cur)
	}
	old = cur == 1
	if old == v {
		return old, nil
	}
	b := []byte{0}
	if v {
		b[0] = 1
	}
	if n, err := w.WriteAt(b, f.Addr); err != nil || n != 1 {
		if err == nil {
			err = errors.New("short write")
		}
		return old, fmt.Errorf("vmstructs: set flag %s: write at %#x: %w", name, f.Addr, err)
	}
	got, err := j.r.u8(f.Addr)
	if err != nil {
		return old, fmt.Errorf("vmstructs: set flag %s: read back: %w", name, err)
	}
	if got != b[0] {
		return old, fmt.Errorf("vmstructs: set flag %s: read back %d after writing %d (changed concurrently?)", name, got, b[0])
	}
	return old, nil
}

// InliningAtEveryPC reports whether the JIT records where it inlined what at every pc (PcDescs between
// safepoints), so that a compiled frame's inlined methods are exact wherever a sample stops it: with
// -XX:+DebugNonSafepoints, or, with the flag at its default, while a JVMTI agent asks for
// CompiledMethodLoad events (async-profiler, a perf-map agent: HotSpot then records them for what it
// compiles from then on, JvmtiExport::_should_post_compiled_method_load). known is false when neither
// could be read.
func (j *JVM) InliningAtEveryPC() (exact, known bool) {
	f, err := j.Flag("DebugNonSafepoints")
	if err != nil || f.Bool == nil {
		return false, false
	}
	if *f.Bool {
		return true, true
	}
	if f.Origin != "" && f.Origin != "default" {
		return false, true // set false on purpose: the agent's events do not override it
	}
	addr, ok := j.Symbol("_ZN11JvmtiExport33_should_post_compiled_method_loadE")
	if !ok {
		return false, false
	}
	v, err := j.r.uint(addr, 1)
	if err != nil {
		return false, false
	}
	return v != 0, true
}
