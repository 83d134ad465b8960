package vmstructs

import (
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/internal/javaname"
)

// methodNameLayout is what naming a Method* needs from VMStructs.
type methodNameLayout struct {
	constMethod                F // Method::_constMethod
	cmConstants, cmName, cmSig F // ConstMethod
	cmRead                     uint64
	cpHolder, cpLength         F // ConstantPool
	cpSize, cpRead             uint64
	klassName                  F
	symLength                  F
	symLengthShift             uint // JDK 11/12: the length is the upper half of _length_and_refcount
	symBody                    uint64

	// VM-anonymous classes (Unsafe.defineAnonymousClass: lambdas and LambdaForms up to JDK 14) are
	// named "Name/0x<address of the InstanceKlass>" (Klass::external_name of JDK 9-14: Class.getName,
	// stack traces, Compiler.codelist); anonBit is 0 where the JVM has none (JDK 15+ hidden classes
	// carry their suffix in the name).
	anonBit   uint64
	miscFlags F // InstanceKlass::_misc_flags
}

func (j *JVM) methodNameLayout() (*methodNameLayout, error) {
	r := j.resolver()
	l := &methodNameLayout{
		constMethod: r.field("Method", "_constMethod"),
		cmConstants: r.field("ConstMethod", "_constants"),
		cmName:      r.field("ConstMethod", "_name_index"),
		cmSig:       r.field("ConstMethod", "_signature_index"),
		cpHolder:    r.field("ConstantPool", "_pool_holder"),
		cpLength:    r.optField("ConstantPool", "_length"),
		cpSize:      r.typeSize("ConstantPool"),
		klassName:   r.field("Klass", "_name"),
		symLength:   r.optField("Symbol", "_length"),
	}
	if !l.symLength.OK {
		l.symLength = r.field("Symbol", "_length_and_refcount")
		l.symLengthShift = 16
	}
	body := r.field("Symbol", "_body")
	if err := r.err("method names"); err != nil {
		return nil, err
	}
	l.symBody = body.Offset
	if bit, ok := j.Table.Int("InstanceKlass::_misc_is_anonymous"); ok && bit > 0 && bit < 1<<16 {
		l.miscFlags = r.optField("InstanceKlass", "_misc_flags")
		if l.miscFlags.OK && l.miscFlags.readSize() <= 4 {
			l.anonBit = uint64(bit)
		}
	}
	for _, f := range []F{l.cmConstants, l.cmName, l.cmSig} {
		l.cmRead = max(l.cmRead, f.Offset+max(f.Size, 1))
	}
	for _, f := range []F{l.cpHolder, l.cpLength} {
		if f.OK {
			l.cpRead = max(l.cpRead, f.Offset+max(f.Size, 1))
		}
	}
	if l.cmRead > 1024 || l.cpRead > 1024 || l.cpSize == 0 || l.cpSize > 1024 || l.symBody > 64 {
		return nil, fmt.Errorf("vmstructs: method names: implausible ConstMethod, ConstantPool or Symbol layout")
	}
	return l, nil
}

// Bounds for method metadata, which is untrusted.
const (
	maxCPIndex   = 1 << 16 // constant pool indices are u2
	symbolPrefix = 96      // bytes read at once for a Symbol: most are shorter
)

// methodNamer turns Method* into names, caching what methods share: symbols, classes and signatures.
type methodNamer struct {
	j       *JVM
	r       reader
	l       *methodNameLayout
	err     error
	syms    map[uint64]string
	holders map[uint64]poolHolder // ConstantPool* -> its class
	sigs    map[uint64][2]string
	methods map[uint64]namedMethod
	lines   map[uint64]lineTable // Method* -> its line numbers; nil until first used
	ll      *lineLayout
	llErr   error
}

type poolHolder struct {
	name   string
	length int64 // -1: unknown
	err    error
}

type namedMethod struct {
	constMethod uint64 // cookie: a freed and reused Method* rarely has the same ConstMethod*
	name        string
}

// newNamer returns a namer that reads through m (the JVM's memory, or a page cache over it).
func (j *JVM) newNamer(m Memory) *methodNamer {
	n := &methodNamer{j: j, r: reader{m}, syms: map[uint64]string{}, holders: map[uint64]poolHolder{},
		sigs: map[uint64][2]string{}, methods: map[uint64]namedMethod{}}
	n.l, n.err = j.methodNameLayout()
	return n
}

// MethodName formats a Method* as Compiler.perfmap does (Method::external_name):
// "return-type class.name(parameter types)", e.g. "int java.lang.String.indexOf(int, int)", with
// hidden classes as "pkg.Name/0x<address>".
func (j *JVM) MethodName(method uint64) (string, error) {
	n := j.newNamer(j.Mem)
	if n.err != nil {
		return "", n.err
	}
	return n.name(method)
}

// MethodName is JVM.MethodName with the view's caches.
func (c *CodeCache) MethodName(method uint64) (string, error) {
	n := c.namer()
	if n.err != nil {
		return "", n.err
	}
	return n.name(method)
}

func (n *methodNamer) name(m uint64) (string, error) {
	if n.err != nil {
		return "", n.err
	}
	if m == 0 {
		return "", fmt.Errorf("vmstructs: method name: null Method*")
	}
	l, r := n.l, n.r
	cm, err := r.u64(m + l.constMethod.Offset)
	if err != nil {
		return "", fmt.Errorf("vmstructs: method %#x: %w", m, err)
	}
	if e, ok := n.methods[m]; ok && e.constMethod == cm {
		return e.name, nil
	}
	if cm == 0 || cm%8 != 0 {
		return "", fmt.Errorf("vmstructs: method %#x: bad ConstMethod* %#x", m, cm)
	}
	buf, err := r.bytes(cm, int(l.cmRead))
	if err != nil {
		return "", fmt.Errorf("vmstructs: method %#x: %w", m, err)
	}
	cp, _ := fieldIn(buf, 0, l.cmConstants)
	ni, _ := fieldIn(buf, 0, l.cmName)
	si, _ := fieldIn(buf, 0, l.cmSig)
	h := n.holder(cp)
	if h.err != nil {
		return "", fmt.Errorf("vmstructs: method %#x: %w", m, h.err)
	}
	if ni == 0 || si == 0 || ni >= maxCPIndex || si >= maxCPIndex ||
		h.length >= 0 && (int64(ni) >= h.length || int64(si) >= h.length) {
		return "", fmt.Errorf("vmstructs: method %#x: constant pool indices %d, %d out of range", m, ni, si)
	}
	nameSym, sigSym, err := n.slots(cp, ni, si)
	if err != nil {
		return "", fmt.Errorf("vmstructs: method %#x: %w", m, err)
	}
	name, err := n.symbol(nameSym)
	if err != nil {
		return "", fmt.Errorf("vmstructs: method %#x name: %w", m, err)
	}
	sig, err := n.signature(sigSym)
	if err != nil {
		return "", fmt.Errorf("vmstructs: method %#x signature: %w", m, err)
	}
	s := sig[0] + " " + h.name + "." + name + "(" + sig[1] + ")"
	n.methods[m] = namedMethod{constMethod: cm, name: s}
	return s, nil
}

// slots reads two Symbol* slots of a constant pool; the slots follow the ConstantPool object.
func (n *methodNamer) slots(cp, a, b uint64) (uint64, uint64, error) {
	base := cp + n.l.cpSize
	lo, hi := min(a, b), max(a, b)
	var va, vb uint64
	if hi-lo < 32 {
		buf, err := n.r.bytes(base+8*lo, int(8*(hi-lo+1)))
		if err != nil {
			return 0, 0, err
		}
		va, _ = decodeLE(buf, 8*(a-lo), 8)
		vb, _ = decodeLE(buf, 8*(b-lo), 8)
	} else {
		var err error
		if va, err = n.r.u64(base + 8*a); err != nil {
			return 0, 0, err
		}
		if vb, err = n.r.u64(base + 8*b); err != nil {
			return 0, 0, err
		}
	}
	// The low bit tags pseudo-strings; a Symbol* is at least 2-aligned.
	return va &^ 1, vb &^ 1, nil
}

func (n *methodNamer) holder(cp uint64) poolHolder {
	if h, ok := n.holders[cp]; ok {
		return h
	}
	h := n.readHolder(cp)
	n.holders[cp] = h
	return h
}

func (n *methodNamer) readHolder(cp uint64) poolHolder {
	l := n.l
	if cp == 0 || cp%8 != 0 {
		return poolHolder{err: fmt.Errorf("bad ConstantPool* %#x", cp)}
	}
	buf, err := n.r.bytes(cp, int(l.cpRead))
	if err != nil {
		return poolHolder{err: err}
	}
	k, _ := fieldIn(buf, 0, l.cpHolder)
	h := poolHolder{length: -1}
	if v, ok := intFieldIn(buf, 0, l.cpLength); ok {
		h.length = v
	}
	if k == 0 {
		return poolHolder{err: fmt.Errorf("constant pool %#x has no holder", cp)}
	}
	sym, err := n.r.u64(k + l.klassName.Offset)
	if err != nil {
		return poolHolder{err: err}
	}
	s, err := n.symbol(sym)
	if err != nil {
		return poolHolder{err: fmt.Errorf("class name: %w", err)}
	}
	h.name = javaname.ClassName(s)
	if l.anonBit != 0 {
		h.name += n.anonymousSuffix(k)
	}
	return h
}

// anonymousSuffix is "/0x<address>" for a VM-anonymous class, as JDK 9-14's Klass::external_name
// names it (Class.getName, stack traces, Compiler.codelist); "" for any other class. JDK 11's JVMTI
// (GetClassSignature, perf-map-agent) and JFR name the same class by its mirror's identity hash instead.
func (n *methodNamer) anonymousSuffix(k uint64) string {
	flags, err := n.r.uint(k+n.l.miscFlags.Offset, n.l.miscFlags.readSize())
	if err != nil || flags&n.l.anonBit == 0 {
		return ""
	}
	return fmt.Sprintf("/0x%016x", k)
}

// symbol reads a Symbol: a length and that many bytes of (modified) UTF-8.
func (n *methodNamer) symbol(addr uint64) (string, error) {
	if s, ok := n.syms[addr]; ok {
		return s, nil
	}
	if addr == 0 {
		return "", fmt.Errorf("null Symbol*")
	}
	l, r := n.l, n.r
	buf, err := r.bytes(addr, symbolPrefix)
	if err != nil {
		// The symbol may end right before an unmapped page.
		if buf, err = r.bytes(addr, int(l.symBody)); err != nil {
			return "", err
		}
	}
	v, ok := fieldIn(buf, 0, l.symLength)
	if !ok {
		return "", fmt.Errorf("symbol at %#x: short read", addr)
	}
	length := v >> l.symLengthShift & 0xFFFF
	end := l.symBody + length
	if end > uint64(len(buf)) {
		rest, err := r.bytes(addr+uint64(len(buf)), int(end-uint64(len(buf))))
		if err != nil {
			return "", err
		}
		buf = append(buf, rest...)
	}
	s := string(buf[l.symBody:end])
	n.syms[addr] = s
	return s, nil
}

func (n *methodNamer) signature(addr uint64) ([2]string, error) {
	if s, ok := n.sigs[addr]; ok {
		return s, nil
	}
	raw, err := n.symbol(addr)
	if err != nil {
		return [2]string{}, err
	}
	mt, err := javaname.ParseMethodDescriptor(raw)
	if err != nil {
		return [2]string{}, fmt.Errorf("malformed signature: %w", err)
	}
	s := [2]string{mt.Return, strings.Join(mt.Params, ", ")}
	n.sigs[addr] = s
	return s, nil
}

// unsigned5Max is the longest UNSIGNED5 number: 5 bytes for 32 bits.
const unsigned5Max = 5

// readUnsigned5 decodes one UNSIGNED5 number (the Pack200 variable-length code HotSpot uses for
// debug information and line number tables; unsigned5.hpp): bytes below L = 256-x-64 end a number,
// each byte carries 6 more bits above the first. x is the number of excluded byte values: 1 from JDK
// 20 on, where a number never contains a zero byte; 0 before (CompressedReadStream).
func readUnsigned5(b []byte, pos int, x uint32) (v uint32, next int, ok bool) {
	const lgH = 6
	l := 256 - x - 1<<lgH
	if pos < 0 || pos >= len(b) || uint32(b[pos]) < x {
		return 0, pos, false
	}
	sum := uint32(b[pos]) - x
	if sum < l {
		return sum, pos + 1, true
	}
	shift := uint32(lgH)
	for i := 1; i < unsigned5Max; i++ {
		if pos+i >= len(b) || uint32(b[pos+i]) < x {
			return 0, pos, false
		}
		bi := uint32(b[pos+i])
		sum += (bi - x) << shift
		if bi < x+l || i == unsigned5Max-1 {
			return sum, pos + i + 1, true
		}
		shift += lgH
	}
	return 0, pos, false
}

// linePair is one entry of a method's line number table.
type linePair struct{ bci, line int32 }

// maxLinePairs bounds a decoded line number table.
const maxLinePairs = 1 << 16

// decodeLineTable decodes a compressed line number table (CompressedLineNumberReadStream): a byte b
// adds b>>3 to the bci and b&7 to the line; 0xFF is followed by two zig-zag signed UNSIGNED5 deltas
// (bci, then line); 0 ends the table. ok is false if the table does not end within b.
func decodeLineTable(b []byte, x uint32) (pairs []linePair, ok bool) {
	var bci, line int32
	for pos := 0; pos < len(b) && len(pairs) < maxLinePairs; {
		c := b[pos]
		pos++
		switch c {
		case 0:
			return pairs, true
		case 0xFF:
			var d [2]uint32
			for k := range d {
				var ok bool
				if d[k], pos, ok = readUnsigned5(b, pos, x); !ok {
					return pairs, false
				}
			}
			bci += int32(d[0]>>1) ^ -int32(d[0]&1)
			line += int32(d[1]>>1) ^ -int32(d[1]&1)
		default:
			bci += int32(c >> 3)
			line += int32(c & 7)
		}
		pairs = append(pairs, linePair{bci, line})
	}
	return pairs, false
}

// lineFor is Method::line_number_from_bci: the line of an exact match, else that of the entry with
// the largest bci below it; -1 without one. The method entry (bci -1) counts as bci 0.
func lineFor(pairs []linePair, bci int, codeSize int) int {
	if bci == -1 {
		bci = 0
	}
	if bci < 0 || bci >= codeSize {
		return -1
	}
	bestBCI, best := int32(0), -1
	for _, p := range pairs {
		if int(p.bci) == bci {
			return int(p.line)
		}
		if int(p.bci) < bci && p.bci >= bestBCI {
			bestBCI, best = p.bci, int(p.line)
		}
	}
	return best
}

// lineLayout is what line numbers need from VMStructs.
type lineLayout struct {
	constMethod             F
	flags, codeSize, cmSize F
	cmSizeof, flag          uint64
	read                    uint64
	excluded                uint32
}

func (j *JVM) lineLayout() (*lineLayout, error) {
	r := j.resolver()
	l := &lineLayout{
		constMethod: r.field("Method", "_constMethod"),
		flags:       r.field("ConstMethod", "_flags|_flags._flags"),
		codeSize:    r.field("ConstMethod", "_code_size"),
		cmSize:      r.field("ConstMethod", "_constMethod_size"),
		cmSizeof:    r.typeSize("ConstMethod"),
		flag:        uint64(r.intConst("ConstMethod::_has_linenumber_table|ConstMethodFlags::_misc_has_linenumber_table")),
	}
	if err := r.err("line numbers"); err != nil {
		return nil, err
	}
	major, err := j.vmMajor("line numbers")
	if err != nil {
		return nil, err
	}
	if major >= 20 {
		l.excluded = 1
	}
	for _, f := range []F{l.flags, l.codeSize, l.cmSize} {
		l.read = max(l.read, f.Offset+max(f.Size, 1))
	}
	if l.read > 1024 || l.cmSizeof == 0 || l.cmSizeof > 1024 {
		return nil, fmt.Errorf("vmstructs: line numbers: implausible ConstMethod layout")
	}
	return l, nil
}

// lineTable is a method's decoded line number table.
type lineTable struct {
	constMethod uint64
	codeSize    int
	pairs       []linePair
}

// maxConstMethod bounds the bytes read for one ConstMethod (bytecodes are at most 64 KiB).
const maxConstMethod = 1 << 20

// line returns the source line of bci in method, or -1.
func (n *methodNamer) line(m uint64, bci int) (int, error) {
	if m == 0 {
		return -1, nil
	}
	if n.lines == nil {
		n.lines = map[uint64]lineTable{}
		n.ll, n.llErr = n.j.lineLayout()
	}
	if n.llErr != nil {
		return -1, n.llErr
	}
	cm, err := n.r.u64(m + n.ll.constMethod.Offset)
	if err != nil {
		return -1, err
	}
	t, ok := n.lines[m]
	if !ok || t.constMethod != cm {
		if t, err = n.readLineTable(cm); err != nil {
			return -1, err
		}
		n.lines[m] = t
	}
	return lineFor(t.pairs, bci, t.codeSize), nil
}

// readLineTable reads the compressed line number table, which follows the bytecodes in the
// ConstMethod when its flag is set.
func (n *methodNamer) readLineTable(cm uint64) (lineTable, error) {
	l := n.ll
	t := lineTable{constMethod: cm}
	hdr, err := n.r.bytes(cm, int(l.read))
	if err != nil {
		return t, err
	}
	flags, _ := fieldIn(hdr, 0, l.flags)
	code, _ := fieldIn(hdr, 0, l.codeSize)
	words, _ := intFieldIn(hdr, 0, l.cmSize)
	t.codeSize = int(code)
	if flags&l.flag == 0 {
		return t, nil
	}
	start, end := l.cmSizeof+code, uint64(words)*8
	if words <= 0 || end > maxConstMethod || start >= end {
		return t, fmt.Errorf("vmstructs: ConstMethod %#x: implausible size", cm)
	}
	b, err := n.r.bytes(cm+start, int(end-start))
	if err != nil {
		return t, err
	}
	if t.pairs, _ = decodeLineTable(b, l.excluded); len(t.pairs) == 0 {
		t.pairs = nil
	}
	return t, nil
}

// LineNumber returns the source line of a bci in a method (Method::line_number_from_bci), or -1 if
// the method has no line number table.
func (c *CodeCache) LineNumber(method uint64, bci int) (int, error) {
	return c.namer().line(method, bci)
}
