package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Call frame information: how native code says where its caller's registers are. Sources: the LSB
// "Exception Frames" chapter (.eh_frame and .eh_frame_hdr, the DW_EH_PE pointer encodings,
// augmentation strings), DWARF 4 section 6.4 (call frame instructions) and 2.5 (expressions), and the
// x86-64 psABI (register numbers, figure 3.36). Everything here is pure: it parses bytes and computes
// rules; nothing reads a process.

// DWARF register numbers of x86-64.
const (
	dwRAX = 0
	dwRBX = 3
	dwRBP = 6
	dwRSP = 7
	dwR13 = 13
	dwRA  = 16 // the return address column
)

// The registers the unwinder follows through native frames, as columns of a row: the ones the walk
// needs (pc, sp, fp) and the ones an interpreted top frame needs after a signal frame (rbx, r13, rax).
const (
	colAX = iota
	colBX
	colBP
	colSP
	colR13
	colPC // the return address column: the caller's pc
	nCols
)

// column maps a DWARF register number to its column; -1 for registers the unwinder does not follow.
func column(reg uint64) int {
	switch reg {
	case dwRAX:
		return colAX
	case dwRBX:
		return colBX
	case dwRBP:
		return colBP
	case dwRSP:
		return colSP
	case dwR13:
		return colR13
	case dwRA:
		return colPC
	}
	return -1
}

// Register rules (DWARF 4 6.4.1).
const (
	ruleSame      uint8 = iota // the caller's value is this frame's (callee-saved, not saved)
	ruleUndefined              // the caller's value is not recoverable; for the return address: the outermost frame
	ruleOffset                 // saved at CFA+Off
	ruleValOffset              // the value is CFA+Off
	ruleRegister               // in register Reg
	ruleExpr                   // saved at the address Expr computes (the CFA pushed first)
	ruleValExpr                // the value Expr computes (the CFA pushed first)
	ruleCFAReg                 // CFA only: register Reg plus Off
	ruleCFAExpr                // CFA only: the value Expr computes
)

// cfiRule is one column's rule, or the CFA's.
type cfiRule struct {
	Kind uint8
	Reg  uint8 // a DWARF register number
	Off  int64
	Expr []byte
}

// cfiRow is the call frame information in effect at one pc.
type cfiRow struct {
	CFA  cfiRule
	Cols [nCols]cfiRule
	// Signal marks a signal trampoline's frame (augmentation "S"): its caller was interrupted, not
	// calling, so the caller's pc is exact.
	Signal bool
}

// errNoFDE says that no FDE covers a pc: the code has no call frame information.
var errNoFDE = errors.New("no call frame information for this pc")

// errCFI is wrapped by errors in call frame information.
var errCFI = errors.New("malformed call frame information")

func cfiErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errCFI}, args...)...)
}

// ehFrame is a module's .eh_frame, indexed by pc.
type ehFrame struct {
	data  []byte
	addr  uint64     // the section's address (the module's own, link-time addresses)
	index []fdeIndex // sorted by pc
	cies  map[uint64]*cie
}

type fdeIndex struct {
	pc  uint64 // the FDE's first pc
	off uint32 // the FDE's offset in data
}

type cie struct {
	codeAlign  uint64
	dataAlign  int64
	raReg      uint64
	fdeEnc     byte
	signal     bool
	hasAugData bool // "z": FDEs carry an augmentation data length
	initial    []byte
}

// DW_EH_PE pointer encodings.
const (
	pePtr     = 0x00
	peULEB    = 0x01
	peUData2  = 0x02
	peUData4  = 0x03
	peUData8  = 0x04
	peSLEB    = 0x09
	peSData2  = 0x0a
	peSData4  = 0x0b
	peSData8  = 0x0c
	pePCRel   = 0x10
	peDataRel = 0x30
	peIndir   = 0x80
	peOmit    = 0xff
)

// maxFDEs bounds the index of one module (libjvm has about 45,000).
const maxFDEs = 1 << 21

// parseEhFrame indexes .eh_frame (data at address addr) by pc. hdr, the module's .eh_frame_hdr at
// hdrAddr, provides the index when it has a usable one; else .eh_frame is scanned.
func parseEhFrame(data []byte, addr uint64, hdr []byte, hdrAddr uint64) (*ehFrame, error) {
	e := &ehFrame{data: data, addr: addr, cies: map[uint64]*cie{}}
	if idx, ok := e.hdrIndex(hdr, hdrAddr); ok {
		e.index = idx
		return e, nil
	}
	if err := e.scan(); err != nil {
		return nil, err
	}
	return e, nil
}

// hdrIndex reads the sorted table of .eh_frame_hdr: version 1, then the encodings of the .eh_frame
// pointer, the count and the table, then those values and count (initial pc, FDE address) pairs.
func (e *ehFrame) hdrIndex(hdr []byte, hdrAddr uint64) ([]fdeIndex, bool) {
	if len(hdr) < 4 || hdr[0] != 1 || hdr[2] == peOmit || hdr[3] != peDataRel|peSData4 {
		return nil, false
	}
	r := cfiReader{b: hdr, addr: hdrAddr, pos: 4}
	if _, err := r.pointer(hdr[1], hdrAddr); err != nil {
		return nil, false
	}
	n, err := r.pointer(hdr[2], hdrAddr)
	if err != nil || n > maxFDEs || n*8 > uint64(len(hdr)-r.pos) {
		return nil, false
	}
	idx := make([]fdeIndex, 0, n)
	for range n {
		loc := hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(hdr[r.pos:]))))
		fde := hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(hdr[r.pos+4:]))))
		r.pos += 8
		if fde < e.addr || fde-e.addr >= uint64(len(e.data)) {
			return nil, false
		}
		idx = append(idx, fdeIndex{pc: loc, off: uint32(fde - e.addr)})
	}
	if !sort.SliceIsSorted(idx, func(i, j int) bool { return idx[i].pc < idx[j].pc }) {
		return nil, false
	}
	return idx, true
}

// scan indexes every FDE of .eh_frame.
func (e *ehFrame) scan() error {
	for off := uint64(0); off < uint64(len(e.data)); {
		length, body, next, err := e.entry(off)
		if err != nil {
			return err
		}
		if length == 0 {
			break // a terminator
		}
		if id := binary.LittleEndian.Uint32(e.data[body:]); id != 0 {
			f, err := e.fde(off)
			if err != nil {
				return err
			}
			if len(e.index) >= maxFDEs {
				return cfiErrorf("more than %d FDEs", maxFDEs)
			}
			e.index = append(e.index, fdeIndex{pc: f.start, off: uint32(off)})
		}
		off = next
	}
	sort.Slice(e.index, func(i, j int) bool { return e.index[i].pc < e.index[j].pc })
	return nil
}

// entry reads the length of the CIE or FDE at off: the offset of its body (after the length) and of
// the next entry. A length of 0 is a terminator.
func (e *ehFrame) entry(off uint64) (length, body, next uint64, err error) {
	if off+4 > uint64(len(e.data)) {
		return 0, 0, 0, cfiErrorf("entry at %#x beyond the section", off)
	}
	length = uint64(binary.LittleEndian.Uint32(e.data[off:]))
	body = off + 4
	if length == 0xffffffff {
		if off+12 > uint64(len(e.data)) {
			return 0, 0, 0, cfiErrorf("entry at %#x beyond the section", off)
		}
		length = binary.LittleEndian.Uint64(e.data[off+4:])
		body = off + 12
	}
	if length == 0 {
		return 0, body, body, nil
	}
	if length < 4 || length > uint64(len(e.data)) || body+length > uint64(len(e.data)) {
		return 0, 0, 0, cfiErrorf("entry at %#x: length %d", off, length)
	}
	return length, body, body + length, nil
}

type fde struct {
	cie        *cie
	start, end uint64
	insns      []byte
}

// fde parses the FDE at off.
func (e *ehFrame) fde(off uint64) (*fde, error) {
	_, body, next, err := e.entry(off)
	if err != nil {
		return nil, err
	}
	if next-body < 4 {
		return nil, cfiErrorf("FDE at %#x too short", off)
	}
	ptr := uint64(binary.LittleEndian.Uint32(e.data[body:]))
	if ptr == 0 || ptr > body {
		return nil, cfiErrorf("FDE at %#x: CIE pointer %#x", off, ptr)
	}
	c, err := e.cie(body - ptr)
	if err != nil {
		return nil, err
	}
	r := cfiReader{b: e.data[:next], addr: e.addr, pos: int(body + 4)}
	start, err := r.pointer(c.fdeEnc, 0)
	if err != nil {
		return nil, err
	}
	n, err := r.pointer(c.fdeEnc&0x0f, 0)
	if err != nil {
		return nil, err
	}
	if c.hasAugData {
		l, err := r.uleb()
		if err != nil {
			return nil, err
		}
		if l > uint64(len(r.b)-r.pos) {
			return nil, cfiErrorf("FDE at %#x: augmentation data", off)
		}
		r.pos += int(l)
	}
	return &fde{cie: c, start: start, end: start + n, insns: r.b[r.pos:]}, nil
}

// cie parses (once) the CIE at off.
func (e *ehFrame) cie(off uint64) (*cie, error) {
	if c, ok := e.cies[off]; ok {
		return c, nil
	}
	_, body, next, err := e.entry(off)
	if err != nil {
		return nil, err
	}
	if next-body < 5 || binary.LittleEndian.Uint32(e.data[body:]) != 0 {
		return nil, cfiErrorf("no CIE at %#x", off)
	}
	r := cfiReader{b: e.data[:next], addr: e.addr, pos: int(body + 4)}
	version, _ := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, cfiErrorf("CIE at %#x: version %d", off, version)
	}
	aug, err := r.cstring()
	if err != nil {
		return nil, err
	}
	if version == 4 {
		addrSize, _ := r.u8()
		segSize, err := r.u8()
		if err != nil || addrSize != 8 || segSize != 0 {
			return nil, cfiErrorf("CIE at %#x: address size %d", off, addrSize)
		}
	}
	c := &cie{fdeEnc: pePtr}
	if c.codeAlign, err = r.uleb(); err != nil {
		return nil, err
	}
	if c.dataAlign, err = r.sleb(); err != nil {
		return nil, err
	}
	if version == 1 {
		ra, err := r.u8()
		if err != nil {
			return nil, err
		}
		c.raReg = uint64(ra)
	} else if c.raReg, err = r.uleb(); err != nil {
		return nil, err
	}
	if c.raReg != dwRA {
		return nil, cfiErrorf("CIE at %#x: return address in register %d", off, c.raReg)
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.hasAugData = true
		l, err := r.uleb()
		if err != nil || l > uint64(len(r.b)-r.pos) {
			return nil, cfiErrorf("CIE at %#x: augmentation data", off)
		}
		end := r.pos + int(l)
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				if c.fdeEnc, err = r.u8(); err != nil {
					return nil, err
				}
			case 'L':
				if _, err = r.u8(); err != nil {
					return nil, err
				}
			case 'P':
				enc, err := r.u8()
				if err != nil {
					return nil, err
				}
				if _, err := r.pointer(enc&^peIndir, 0); err != nil {
					return nil, err
				}
			case 'S':
				c.signal = true
			case 'B', 'G':
				// AArch64 pointer authentication key, MTE tagged frames: nothing to read.
			default:
				// Data we cannot interpret; "z" lets us skip it.
				r.pos = end
			}
			if r.pos > end {
				return nil, cfiErrorf("CIE at %#x: augmentation data", off)
			}
		}
		r.pos = end
	} else if aug != "" {
		return nil, cfiErrorf("CIE at %#x: augmentation %q", off, aug)
	}
	c.initial = r.b[r.pos:]
	e.cies[off] = c
	return c, nil
}

// row returns the rules in effect at pc (a module address). For the frame of a return address, pass
// the address minus one: the call is before it, and the function may end with it (a noreturn call).
func (e *ehFrame) row(pc uint64) (cfiRow, error) {
	i := sort.Search(len(e.index), func(i int) bool { return e.index[i].pc > pc }) - 1
	if i < 0 {
		return cfiRow{}, errNoFDE
	}
	f, err := e.fde(uint64(e.index[i].off))
	if err != nil {
		return cfiRow{}, err
	}
	if pc < f.start || pc >= f.end {
		return cfiRow{}, errNoFDE
	}
	return f.run(pc)
}

// maxRememberDepth bounds DW_CFA_remember_state nesting.
const maxRememberDepth = 16

// run executes the CIE's initial instructions and then the FDE's, up to pc.
func (f *fde) run(pc uint64) (cfiRow, error) {
	var row cfiRow
	row.Signal = f.cie.signal
	for i := range row.Cols {
		row.Cols[i].Kind = ruleSame
	}
	// Caller-saved: not recoverable unless a rule says where (a signal frame's).
	row.Cols[colAX].Kind = ruleUndefined
	x := cfiExec{f: f, row: &row, loc: f.start, target: pc}
	if err := x.exec(f.cie.initial, true); err != nil {
		return cfiRow{}, err
	}
	x.initial = row
	if err := x.exec(f.insns, false); err != nil {
		return cfiRow{}, err
	}
	if row.CFA.Kind != ruleCFAReg && row.CFA.Kind != ruleCFAExpr {
		return cfiRow{}, cfiErrorf("no CFA rule")
	}
	return row, nil
}

type cfiExec struct {
	f       *fde
	row     *cfiRow
	initial cfiRow
	stack   []cfiRow
	loc     uint64
	target  uint64
}

// errPastTarget stops the instructions once the location passes the target pc.
var errPastTarget = errors.New("past target")

func (x *cfiExec) exec(insns []byte, inCIE bool) error {
	r := cfiReader{b: insns}
	c := x.f.cie
	advance := func(delta uint64) error {
		x.loc += delta * c.codeAlign
		if x.loc > x.target {
			return errPastTarget
		}
		return nil
	}
	setCol := func(reg uint64, rule cfiRule) {
		if col := column(reg); col >= 0 {
			x.row.Cols[col] = rule
		}
	}
	for r.pos < len(r.b) {
		op, _ := r.u8()
		var err error
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			if err := advance(uint64(op & 0x3f)); err != nil {
				return nil
			}
			continue
		case 2: // DW_CFA_offset
			off, err := r.uleb()
			if err != nil {
				return err
			}
			setCol(uint64(op&0x3f), cfiRule{Kind: ruleOffset, Off: int64(off) * c.dataAlign})
			continue
		case 3: // DW_CFA_restore
			x.restore(uint64(op&0x3f), inCIE)
			continue
		}
		switch op {
		case 0x00: // DW_CFA_nop
		case 0x01: // DW_CFA_set_loc
			loc, err := r.pointer(c.fdeEnc, 0)
			if err != nil {
				return err
			}
			if loc > x.target {
				return nil
			}
			x.loc = loc
		case 0x02, 0x03, 0x04: // DW_CFA_advance_loc1, 2, 4
			var d uint64
			switch op {
			case 0x02:
				var b byte
				b, err = r.u8()
				d = uint64(b)
			case 0x03:
				d, err = r.fixed(2)
			default:
				d, err = r.fixed(4)
			}
			if err != nil {
				return err
			}
			if advance(d) != nil {
				return nil
			}
		case 0x05, 0x11, 0x14, 0x15, 0x2f: // offset_extended(_sf), val_offset(_sf), GNU_negative_offset_extended
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			off, err := r.offset(op == 0x11 || op == 0x15, c.dataAlign)
			if err != nil {
				return err
			}
			kind := ruleOffset
			switch op {
			case 0x14, 0x15:
				kind = ruleValOffset
			case 0x2f:
				off = -off
			}
			setCol(reg, cfiRule{Kind: kind, Off: off})
		case 0x06: // DW_CFA_restore_extended
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			x.restore(reg, inCIE)
		case 0x07, 0x08: // DW_CFA_undefined, DW_CFA_same_value
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			kind := ruleUndefined
			if op == 0x08 {
				kind = ruleSame
			}
			setCol(reg, cfiRule{Kind: kind})
		case 0x09: // DW_CFA_register
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			reg2, err := r.uleb()
			if err != nil {
				return err
			}
			if reg2 > 0xff {
				return cfiErrorf("register %d", reg2)
			}
			setCol(reg, cfiRule{Kind: ruleRegister, Reg: uint8(reg2)})
		case 0x0a: // DW_CFA_remember_state
			if len(x.stack) >= maxRememberDepth {
				return cfiErrorf("remember_state nested deeper than %d", maxRememberDepth)
			}
			x.stack = append(x.stack, *x.row)
		case 0x0b: // DW_CFA_restore_state
			if len(x.stack) == 0 {
				return cfiErrorf("restore_state without remember_state")
			}
			// The CFA stays: restore_state restores the register rules only... in practice GCC
			// emits both together, and libgcc restores the CFA too; so do we.
			*x.row = x.stack[len(x.stack)-1]
			x.stack = x.stack[:len(x.stack)-1]
		case 0x0c, 0x12: // DW_CFA_def_cfa(_sf)
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			off, err := r.cfaOffset(op == 0x12, c.dataAlign)
			if err != nil {
				return err
			}
			if reg > 0xff {
				return cfiErrorf("register %d", reg)
			}
			x.row.CFA = cfiRule{Kind: ruleCFAReg, Reg: uint8(reg), Off: off}
		case 0x0d: // DW_CFA_def_cfa_register
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			if reg > 0xff || x.row.CFA.Kind != ruleCFAReg {
				return cfiErrorf("def_cfa_register without a register CFA")
			}
			x.row.CFA.Reg = uint8(reg)
		case 0x0e, 0x13: // DW_CFA_def_cfa_offset(_sf)
			off, err := r.cfaOffset(op == 0x13, c.dataAlign)
			if err != nil {
				return err
			}
			if x.row.CFA.Kind != ruleCFAReg {
				return cfiErrorf("def_cfa_offset without a register CFA")
			}
			x.row.CFA.Off = off
		case 0x0f: // DW_CFA_def_cfa_expression
			expr, err := r.block()
			if err != nil {
				return err
			}
			x.row.CFA = cfiRule{Kind: ruleCFAExpr, Expr: expr}
		case 0x10, 0x16: // DW_CFA_expression, DW_CFA_val_expression
			reg, err := r.uleb()
			if err != nil {
				return err
			}
			expr, err := r.block()
			if err != nil {
				return err
			}
			kind := ruleExpr
			if op == 0x16 {
				kind = ruleValExpr
			}
			setCol(reg, cfiRule{Kind: kind, Expr: expr})
		case 0x2e: // DW_CFA_GNU_args_size
			if _, err := r.uleb(); err != nil {
				return err
			}
		default:
			return cfiErrorf("call frame instruction %#x", op)
		}
	}
	return nil
}

// restore sets a register's rule back to the CIE's.
func (x *cfiExec) restore(reg uint64, inCIE bool) {
	col := column(reg)
	if col < 0 || inCIE {
		return
	}
	x.row.Cols[col] = x.initial.Cols[col]
}

// cfiReader reads the fields of call frame information.
type cfiReader struct {
	b    []byte
	addr uint64 // the address of b[0], for pc-relative pointers
	pos  int
}

var errShort = cfiErrorf("truncated")

func (r *cfiReader) u8() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errShort
	}
	v := r.b[r.pos]
	r.pos++
	return v, nil
}

func (r *cfiReader) fixed(n int) (uint64, error) {
	if r.pos+n > len(r.b) || r.pos+n < r.pos {
		return 0, errShort
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(r.b[r.pos+i])
	}
	r.pos += n
	return v, nil
}

func (r *cfiReader) uleb() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b, err := r.u8()
		if err != nil {
			return 0, err
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v, nil
		}
		if shift > 70 {
			return 0, cfiErrorf("LEB128 too long")
		}
	}
}

func (r *cfiReader) sleb() (int64, error) {
	var v int64
	var shift uint
	for {
		b, err := r.u8()
		if err != nil {
			return 0, err
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
		if shift > 70 {
			return 0, cfiErrorf("LEB128 too long")
		}
	}
}

// offset reads a register rule's offset: a signed or unsigned LEB128 times the data alignment.
func (r *cfiReader) offset(signed bool, dataAlign int64) (int64, error) {
	if signed {
		v, err := r.sleb()
		return v * dataAlign, err
	}
	v, err := r.uleb()
	return int64(v) * dataAlign, err
}

// cfaOffset reads a CFA offset: factored by the data alignment only in the signed ("_sf") forms.
func (r *cfiReader) cfaOffset(signed bool, dataAlign int64) (int64, error) {
	if signed {
		return r.offset(true, dataAlign)
	}
	return r.offset(false, 1)
}

func (r *cfiReader) cstring() (string, error) {
	for i := r.pos; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.pos:i])
			r.pos = i + 1
			return s, nil
		}
	}
	return "", errShort
}

func (r *cfiReader) block() ([]byte, error) {
	n, err := r.uleb()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.pos) {
		return nil, errShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// pointer reads a DW_EH_PE encoded pointer. datarel is the base of data-relative pointers.
func (r *cfiReader) pointer(enc byte, datarel uint64) (uint64, error) {
	if enc == peOmit {
		return 0, nil
	}
	if enc&peIndir != 0 {
		return 0, cfiErrorf("indirect pointer")
	}
	at := r.addr + uint64(r.pos)
	var v uint64
	var err error
	switch enc & 0x0f {
	case pePtr, peUData8, peSData8:
		v, err = r.fixed(8)
	case peULEB:
		v, err = r.uleb()
	case peSLEB:
		var s int64
		s, err = r.sleb()
		v = uint64(s)
	case peUData2:
		v, err = r.fixed(2)
	case peSData2:
		v, err = r.fixed(2)
		v = uint64(int64(int16(v)))
	case peUData4:
		v, err = r.fixed(4)
	case peSData4:
		v, err = r.fixed(4)
		v = uint64(int64(int32(v)))
	default:
		return 0, cfiErrorf("pointer encoding %#x", enc)
	}
	if err != nil {
		return 0, err
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	case peDataRel:
		v += datarel
	default:
		return 0, cfiErrorf("pointer encoding %#x", enc)
	}
	return v, nil
}

// nativeRegs are the values of the columns in one frame; valid has bit i set where column i is known.
type nativeRegs struct {
	v     [nCols]uint64
	valid uint8
}

func (r *nativeRegs) set(col int, v uint64) { r.v[col], r.valid = v, r.valid|1<<col }

func (r *nativeRegs) get(reg uint64) (uint64, bool) {
	col := column(reg)
	if col < 0 || r.valid&(1<<col) == 0 {
		return 0, false
	}
	return r.v[col], true
}

// errUnwindReg says that a rule needs a register the unwinder does not follow or does not know.
var errUnwindReg = errors.New("call frame information needs an unknown register")

// step computes the caller's registers from this frame's (cur, whose colPC is this frame's pc) and
// the row in effect at its pc. read reads a word of the stack. outermost is true when the return
// address is undefined: this frame is the thread's first.
func (row *cfiRow) step(cur nativeRegs, read func(addr uint64) (uint64, error)) (next nativeRegs, outermost bool, err error) {
	var cfa uint64
	switch row.CFA.Kind {
	case ruleCFAReg:
		v, ok := cur.get(uint64(row.CFA.Reg))
		if !ok {
			return next, false, errUnwindReg
		}
		cfa = v + uint64(row.CFA.Off)
	case ruleCFAExpr:
		if cfa, err = evalExpr(row.CFA.Expr, cur, read, nil); err != nil {
			return next, false, err
		}
	default:
		return next, false, cfiErrorf("no CFA rule")
	}
	if row.Cols[colPC].Kind == ruleUndefined {
		return next, true, nil
	}
	next.set(colSP, cfa) // the CFA is the caller's sp, unless a rule says otherwise
	for col := range nCols {
		rule := &row.Cols[col]
		var v uint64
		switch rule.Kind {
		case ruleSame:
			if cur.valid&(1<<col) == 0 || col == colSP || col == colPC {
				continue
			}
			v = cur.v[col]
		case ruleUndefined:
			if col == colSP {
				next.valid &^= 1 << colSP
			}
			continue
		case ruleOffset:
			a := cfa + uint64(rule.Off)
			if sp, ok := cur.get(dwRSP); ok && a < sp && cur.valid&(1<<col) != 0 {
				// Below the stack pointer: an epilogue popped the register already (GCC keeps the
				// save rules until the frame is gone), so it holds the saved value, and the memory is
				// dead: a sample's stack copy starts at sp.
				v = cur.v[col]
				break
			}
			if v, err = read(a); err != nil {
				return next, false, err
			}
		case ruleValOffset:
			v = cfa + uint64(rule.Off)
		case ruleRegister:
			var ok bool
			if v, ok = cur.get(uint64(rule.Reg)); !ok {
				return next, false, errUnwindReg
			}
		case ruleExpr, ruleValExpr:
			a, err := evalExpr(rule.Expr, cur, read, &cfa)
			if err != nil {
				return next, false, err
			}
			v = a
			if rule.Kind == ruleExpr {
				if v, err = read(a); err != nil {
					return next, false, err
				}
			}
		default:
			return next, false, cfiErrorf("rule %d", rule.Kind)
		}
		next.set(col, v)
	}
	if next.valid&(1<<colPC) == 0 {
		return next, false, errUnwindReg
	}
	return next, false, nil
}

// maxExprSteps bounds the operations one DWARF expression executes (branches can loop).
const maxExprSteps = 256

// evalExpr runs a DWARF expression (DWARF 4 2.5) over the frame's registers; push, if set, is pushed
// first (the CFA, for register rules). It knows the operations call frame information uses.
func evalExpr(expr []byte, regs nativeRegs, read func(uint64) (uint64, error), push *uint64) (uint64, error) {
	var stack [64]uint64
	sp := 0
	pushv := func(v uint64) error {
		if sp == len(stack) {
			return cfiErrorf("expression stack overflow")
		}
		stack[sp] = v
		sp++
		return nil
	}
	pop := func() (uint64, error) {
		if sp == 0 {
			return 0, cfiErrorf("expression stack underflow")
		}
		sp--
		return stack[sp], nil
	}
	if push != nil {
		_ = pushv(*push)
	}
	r := cfiReader{b: expr}
	for steps := 0; r.pos < len(r.b); steps++ {
		if steps >= maxExprSteps {
			return 0, cfiErrorf("expression runs too long")
		}
		op, _ := r.u8()
		var err error
		switch {
		case op >= 0x30 && op <= 0x4f: // DW_OP_lit0..31
			err = pushv(uint64(op - 0x30))
		case op >= 0x70 && op <= 0x8f: // DW_OP_breg0..31
			off, e := r.sleb()
			if e != nil {
				return 0, e
			}
			v, ok := regs.get(uint64(op - 0x70))
			if !ok {
				return 0, errUnwindReg
			}
			err = pushv(v + uint64(off))
		case op == 0x92: // DW_OP_bregx
			reg, e := r.uleb()
			if e != nil {
				return 0, e
			}
			off, e := r.sleb()
			if e != nil {
				return 0, e
			}
			v, ok := regs.get(reg)
			if !ok {
				return 0, errUnwindReg
			}
			err = pushv(v + uint64(off))
		case op == 0x03: // DW_OP_addr
			v, e := r.fixed(8)
			if e != nil {
				return 0, e
			}
			err = pushv(v)
		case op >= 0x08 && op <= 0x0f: // DW_OP_const1u ... const8s
			size := 1 << ((op - 0x08) / 2)
			v, e := r.fixed(size)
			if e != nil {
				return 0, e
			}
			if (op-0x08)%2 == 1 { // signed
				shift := 64 - 8*size
				v = uint64(int64(v<<shift) >> shift)
			}
			err = pushv(v)
		case op == 0x10: // DW_OP_constu
			v, e := r.uleb()
			if e != nil {
				return 0, e
			}
			err = pushv(v)
		case op == 0x11: // DW_OP_consts
			v, e := r.sleb()
			if e != nil {
				return 0, e
			}
			err = pushv(uint64(v))
		case op == 0x06, op == 0x94: // DW_OP_deref, DW_OP_deref_size
			size := 8
			if op == 0x94 {
				b, e := r.u8()
				if e != nil {
					return 0, e
				}
				size = int(b)
				if size < 1 || size > 8 {
					return 0, cfiErrorf("deref_size %d", size)
				}
			}
			a, e := pop()
			if e != nil {
				return 0, e
			}
			v, e := read(a)
			if e != nil {
				return 0, e
			}
			if size < 8 {
				v &= 1<<(8*size) - 1
			}
			err = pushv(v)
		case op == 0x12: // DW_OP_dup
			if sp == 0 {
				return 0, cfiErrorf("expression stack underflow")
			}
			err = pushv(stack[sp-1])
		case op == 0x13: // DW_OP_drop
			_, err = pop()
		case op == 0x14: // DW_OP_over
			if sp < 2 {
				return 0, cfiErrorf("expression stack underflow")
			}
			err = pushv(stack[sp-2])
		case op == 0x15: // DW_OP_pick
			i, e := r.u8()
			if e != nil {
				return 0, e
			}
			if int(i) >= sp {
				return 0, cfiErrorf("expression stack underflow")
			}
			err = pushv(stack[sp-1-int(i)])
		case op == 0x16: // DW_OP_swap
			if sp < 2 {
				return 0, cfiErrorf("expression stack underflow")
			}
			stack[sp-1], stack[sp-2] = stack[sp-2], stack[sp-1]
		case op == 0x17: // DW_OP_rot
			if sp < 3 {
				return 0, cfiErrorf("expression stack underflow")
			}
			stack[sp-1], stack[sp-2], stack[sp-3] = stack[sp-2], stack[sp-3], stack[sp-1]
		case op == 0x19, op == 0x1f, op == 0x20: // DW_OP_abs, neg, not
			a, e := pop()
			if e != nil {
				return 0, e
			}
			switch op {
			case 0x19:
				if int64(a) < 0 {
					a = -a
				}
			case 0x1f:
				a = -a
			default:
				a = ^a
			}
			err = pushv(a)
		case op == 0x23: // DW_OP_plus_uconst
			v, e := r.uleb()
			if e != nil {
				return 0, e
			}
			a, e := pop()
			if e != nil {
				return 0, e
			}
			err = pushv(a + v)
		case op >= 0x1a && op <= 0x2e && op != 0x28: // binary operations
			b, e := pop()
			if e != nil {
				return 0, e
			}
			a, e := pop()
			if e != nil {
				return 0, e
			}
			v, e := binaryOp(op, a, b)
			if e != nil {
				return 0, e
			}
			err = pushv(v)
		case op == 0x28, op == 0x2f: // DW_OP_bra, DW_OP_skip
			d, e := r.fixed(2)
			if e != nil {
				return 0, e
			}
			jump := true
			if op == 0x28 {
				c, e := pop()
				if e != nil {
					return 0, e
				}
				jump = c != 0
			}
			if jump {
				to := r.pos + int(int16(d))
				if to < 0 || to > len(r.b) {
					return 0, cfiErrorf("branch out of the expression")
				}
				r.pos = to
			}
		case op == 0x96: // DW_OP_nop
		default:
			return 0, cfiErrorf("expression operation %#x", op)
		}
		if err != nil {
			return 0, err
		}
	}
	return pop()
}

func binaryOp(op byte, a, b uint64) (uint64, error) {
	bool64 := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case 0x1a:
		return a & b, nil
	case 0x1b:
		if b == 0 {
			return 0, cfiErrorf("division by zero")
		}
		return uint64(int64(a) / int64(b)), nil
	case 0x1c:
		return a - b, nil
	case 0x1d:
		if b == 0 {
			return 0, cfiErrorf("division by zero")
		}
		return a % b, nil
	case 0x1e:
		return a * b, nil
	case 0x21:
		return a | b, nil
	case 0x22:
		return a + b, nil
	case 0x24:
		if b >= 64 {
			return 0, nil
		}
		return a << b, nil
	case 0x25:
		if b >= 64 {
			return 0, nil
		}
		return a >> b, nil
	case 0x26:
		if b >= 64 {
			b = 63
		}
		return uint64(int64(a) >> b), nil
	case 0x27:
		return a ^ b, nil
	case 0x29:
		return bool64(a == b), nil
	case 0x2a:
		return bool64(int64(a) >= int64(b)), nil
	case 0x2b:
		return bool64(int64(a) > int64(b)), nil
	case 0x2c:
		return bool64(int64(a) <= int64(b)), nil
	case 0x2d:
		return bool64(int64(a) < int64(b)), nil
	case 0x2e:
		return bool64(a != b), nil
	}
	return 0, cfiErrorf("expression operation %#x", op)
}
