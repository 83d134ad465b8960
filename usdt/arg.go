package usdt

import (
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ArgKind says where an argument's value is at the probe site.
type ArgKind uint8

// Argument kinds.
const (
	// ArgConst is a constant, Arg.Value.
	ArgConst ArgKind = iota + 1
	// ArgReg is the value of register Arg.Reg.
	ArgReg
	// ArgMem is Arg.Size bytes in the target's memory at Reg + Index*Scale + Value, plus the run-time address
	// of Symbol when there is one.
	ArgMem
)

func (k ArgKind) String() string {
	switch k {
	case ArgConst:
		return "const"
	case ArgReg:
		return "reg"
	case ArgMem:
		return "mem"
	}
	return "ArgKind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText makes ArgKind print as its name in JSON.
func (k ArgKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses the names MarshalText prints.
func (k *ArgKind) UnmarshalText(b []byte) error {
	for _, c := range []ArgKind{ArgConst, ArgReg, ArgMem} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("usdt: unknown argument kind %q", b)
}

// Arg is one parsed argument spec of a probe, such as "-4@%eax", "8@-144(%rbp)" or "-4@$-1" (x86-64) or
// "8@[x29, -8]" (arm64).
type Arg struct {
	Kind   ArgKind `json:"kind"`
	Size   int     `json:"size"`   // bytes: 1, 2, 4 or 8
	Signed bool    `json:"signed"` // a negative size in the spec: the value is sign-extended from Size bytes
	Float  bool    `json:"float,omitempty"`

	// Reg is the register of ArgReg, or the base register of ArgMem ("" for none), as written without "%":
	// "eax", "r9d", "dil", "x0", "w1", "sp". For "sym(%rip)" it is "rip", which then adds nothing: the address
	// is the symbol's.
	Reg string `json:"reg,omitempty"`
	// Index and Scale are the index register and its scale of an x86-64 SIB address, "disp(%base,%index,scale)".
	Index string `json:"index,omitempty"`
	Scale int    `json:"scale,omitempty"`
	// Value is the constant of ArgConst as written (a trace reports it truncated to Size bytes, and
	// sign-extended if Signed), or the displacement of ArgMem.
	Value int64 `json:"value,omitempty"`
	// Symbol is the symbol an ArgMem address is relative to, as in "glob+16(%rip)". SymbolAddr is its link-time
	// address, filled in by ParseNotes from the file's symbol tables (0 when ParseArg made the Arg).
	Symbol     string `json:"symbol,omitempty"`
	SymbolAddr uint64 `json:"symbol_addr,omitempty"`
}

// MaxArgs is the number of arguments a traced probe may have: sys/sdt.h goes up to STAP_PROBE12.
const MaxArgs = 12

// Decode converts a raw argument value as a trace reads it (Size bytes, sign-extended if Signed) to int64,
// uint64, float32 or float64.
func (a Arg) Decode(raw uint64) any {
	switch {
	case a.Float && a.Size == 4:
		return math.Float32frombits(uint32(raw))
	case a.Float && a.Size == 8:
		return math.Float64frombits(raw)
	case a.Signed:
		return int64(raw)
	}
	return raw
}

// normalize truncates v to the argument's size and sign-extends it when the argument is signed, the way a
// trace reports values.
func (a Arg) normalize(v uint64) uint64 {
	if a.Size <= 0 || a.Size >= 8 {
		return v
	}
	shift := uint(64 - 8*a.Size)
	if a.Signed && !a.Float {
		return uint64(int64(v<<shift) >> shift)
	}
	return v << shift >> shift
}

// ParseArgs parses the argument string of a note, the specs separated by spaces, for a file of the given
// machine (elf.EM_X86_64 or elf.EM_AARCH64). An empty string is a probe without arguments.
func ParseArgs(machine elf.Machine, s string) ([]Arg, error) {
	specs, err := splitArgs(s)
	if err != nil {
		return nil, err
	}
	args := make([]Arg, 0, len(specs))
	for i, spec := range specs {
		a, err := ParseArg(machine, spec)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		args = append(args, a)
	}
	return args, nil
}

// splitArgs splits an argument string at spaces outside brackets: arm64 specs contain "[x0, 8]".
func splitArgs(s string) ([]string, error) {
	var specs []string
	depth, start := 0, -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("argument string %q: unbalanced ']'", s)
			}
		case (c == ' ' || c == '\t') && depth == 0:
			if start >= 0 {
				specs = append(specs, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("argument string %q: unbalanced '['", s)
	}
	if start >= 0 {
		specs = append(specs, s[start:])
	}
	return specs, nil
}

// ParseArg parses one argument spec, "[-]N[f]@operand", for a file of the given machine.
//
// x86-64 operands (AT&T syntax, as gcc prints asm operands): "%reg", "$imm", "disp(%base)",
// "disp(%base,%index,scale)", "disp(,%index,scale)", "sym+disp(%rip)" and an absolute address "disp" or
// "sym+disp". arm64 operands: "reg", "imm", "[reg]" and "[reg, off]". A spec without "N@" is an unsigned
// 8-byte value.
func ParseArg(machine elf.Machine, spec string) (Arg, error) {
	a := Arg{Size: 8}
	operand := spec
	if size, op, ok := strings.Cut(spec, "@"); ok {
		operand = op
		if strings.HasPrefix(size, "-") {
			a.Signed = true
			size = size[1:]
		}
		if strings.HasSuffix(size, "f") {
			a.Float = true
			size = size[:len(size)-1]
		}
		switch size {
		case "1", "2", "4", "8":
			a.Size = int(size[0] - '0')
		default:
			return Arg{}, fmt.Errorf("spec %q: size %q is not 1, 2, 4 or 8", spec, size)
		}
		if a.Float && a.Size < 4 {
			return Arg{}, fmt.Errorf("spec %q: a %d-byte float", spec, a.Size)
		}
	}
	var err error
	switch machine {
	case elf.EM_X86_64:
		err = parseX86(&a, operand)
	case elf.EM_AARCH64:
		err = parseARM64(&a, operand)
	default:
		return Arg{}, fmt.Errorf("spec %q: %w: machine %v", spec, ErrNotSupported, machine)
	}
	if err != nil {
		return Arg{}, fmt.Errorf("spec %q: %w", spec, err)
	}
	return a, nil
}

func parseX86(a *Arg, op string) error {
	switch {
	case op == "":
		return errors.New("no operand")
	case op[0] == '%':
		r := op[1:]
		if _, ok := x86Regs[r]; !ok {
			return unknownRegister(r)
		}
		a.Kind, a.Reg = ArgReg, r
		return nil
	case op[0] == '$':
		v, err := parseInt(op[1:])
		if err != nil {
			return err
		}
		a.Kind, a.Value = ArgConst, v
		return nil
	}
	a.Kind = ArgMem
	disp, mem, hasMem := strings.Cut(op, "(")
	if err := parseDisp(a, disp); err != nil {
		return err
	}
	if !hasMem {
		if disp == "" {
			return errors.New("no operand")
		}
		return nil // an absolute address
	}
	inner, ok := strings.CutSuffix(mem, ")")
	if !ok || strings.ContainsAny(inner, "()") {
		return errors.New("unbalanced parentheses")
	}
	parts := strings.Split(inner, ",")
	if len(parts) > 3 {
		return errors.New("more than base, index and scale")
	}
	if parts[0] != "" {
		r, err := x86Operand(parts[0])
		if err != nil {
			return err
		}
		a.Reg = r
	}
	if len(parts) == 1 {
		if a.Reg == "" {
			return errors.New("empty address \"()\"")
		}
	} else {
		r, err := x86Operand(parts[1])
		if err != nil {
			return err
		}
		if r == "rip" {
			return errors.New("%rip as index register")
		}
		a.Index, a.Scale = r, 1
		if len(parts) == 3 {
			switch parts[2] {
			case "1", "2", "4", "8":
				a.Scale = int(parts[2][0] - '0')
			default:
				return fmt.Errorf("scale %q is not 1, 2, 4 or 8", parts[2])
			}
		}
	}
	if a.Reg == "rip" && (a.Symbol == "" || a.Index != "") {
		// Only "sym(%rip)" means something in a note: the operand is never assembled, so there is no
		// instruction for a bare rip-relative displacement to be relative to.
		return errors.New("%rip-relative address without a symbol")
	}
	return nil
}

// x86Operand parses "%reg" inside an address; only 64-bit registers (and %rip as base) address memory.
func x86Operand(s string) (string, error) {
	r, ok := strings.CutPrefix(s, "%")
	if !ok {
		return "", fmt.Errorf("%q is not a register", s)
	}
	if r == "rip" {
		return r, nil
	}
	x, ok := x86Regs[r]
	if !ok {
		return "", unknownRegister(r)
	}
	if x.name != r {
		return "", fmt.Errorf("%%%s: not a 64-bit register", r)
	}
	return r, nil
}

// parseDisp parses an x86 displacement: a sum of at most one symbol and numbers, such as "-144", "glob",
// "glob+16", "16+glob" or "glob-8".
func parseDisp(a *Arg, s string) error {
	if s == "" {
		return nil
	}
	var sum int64
	for i := 0; i < len(s); {
		neg := false
		if i > 0 || s[0] == '-' || s[0] == '+' {
			if s[i] != '+' && s[i] != '-' {
				return fmt.Errorf("displacement %q: expected + or -", s)
			}
			neg = s[i] == '-'
			i++
		}
		j := i
		for j < len(s) && s[j] != '+' && s[j] != '-' {
			j++
		}
		term := s[i:j]
		switch {
		case term == "":
			return fmt.Errorf("displacement %q: empty term", s)
		case term[0] >= '0' && term[0] <= '9':
			v, err := parseInt(term)
			if err != nil {
				return err
			}
			if neg {
				v = -v
			}
			sum += v
		case isSymbol(term):
			if a.Symbol != "" || neg {
				return fmt.Errorf("displacement %q: only one symbol, added, is supported", s)
			}
			a.Symbol = term
		default:
			return fmt.Errorf("displacement %q: %q is neither a number nor a symbol", s, term)
		}
		i = j
	}
	a.Value = sum
	return nil
}

func isSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '$'):
		default:
			return false
		}
	}
	return s != ""
}

func parseARM64(a *Arg, op string) error {
	if op == "" {
		return errors.New("no operand")
	}
	if inner, ok := strings.CutPrefix(op, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return errors.New("unbalanced brackets")
		}
		reg, off, hasOff := strings.Cut(inner, ",")
		reg = strings.TrimSpace(reg)
		if _, ok := arm64Regs[reg]; !ok {
			return unknownRegister(reg)
		}
		if reg[0] == 'w' {
			return fmt.Errorf("%s: not a 64-bit register", reg)
		}
		a.Kind, a.Reg = ArgMem, reg
		if hasOff {
			off = strings.TrimPrefix(strings.TrimSpace(off), "#")
			v, err := parseInt(off)
			if err != nil {
				return err
			}
			a.Value = v
		}
		return nil
	}
	if c := op[0]; c == '-' || c == '#' || c >= '0' && c <= '9' {
		v, err := parseInt(strings.TrimPrefix(op, "#"))
		if err != nil {
			return err
		}
		a.Kind, a.Value = ArgConst, v
		return nil
	}
	if _, ok := arm64Regs[op]; !ok {
		return unknownRegister(op)
	}
	a.Kind, a.Reg = ArgReg, op
	return nil
}

// parseInt parses a decimal or 0x-hexadecimal integer with an optional sign. Values up to 2^64-1 are
// accepted and wrap, as an assembler would store them.
func parseInt(s string) (int64, error) {
	t := s
	neg := false
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	base := 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		base, t = 16, t[2:]
	}
	if t == "" || strings.ContainsAny(t, "+-_") {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 64-bit number", s)
	}
	v := int64(u)
	if neg {
		v = -v
	}
	return v, nil
}

func unknownRegister(r string) error {
	if strings.HasPrefix(r, "xmm") || strings.HasPrefix(r, "ymm") || strings.HasPrefix(r, "st") ||
		len(r) > 1 && (r[0] == 'v' || r[0] == 'd' || r[0] == 's' || r[0] == 'q') && r[1] >= '0' && r[1] <= '9' {
		return fmt.Errorf("register %q: floating-point and vector registers are not in pt_regs", r)
	}
	return fmt.Errorf("unknown register %q", r)
}

// Format prints the argument the way a note of the given machine spells it. Specs as gcc writes them print
// back unchanged, except that displacements are decimal and a symbol comes first ("glob+16(%rip)").
func (a Arg) Format(machine elf.Machine) string {
	var b strings.Builder
	if a.Signed {
		b.WriteByte('-')
	}
	b.WriteString(strconv.Itoa(a.Size))
	if a.Float {
		b.WriteByte('f')
	}
	b.WriteByte('@')
	arm := machine == elf.EM_AARCH64
	switch a.Kind {
	case ArgConst:
		if !arm {
			b.WriteByte('$')
		}
		b.WriteString(strconv.FormatInt(a.Value, 10))
	case ArgReg:
		if !arm {
			b.WriteByte('%')
		}
		b.WriteString(a.Reg)
	case ArgMem:
		if arm {
			b.WriteString("[" + a.Reg)
			if a.Value != 0 {
				b.WriteString(", " + strconv.FormatInt(a.Value, 10))
			}
			b.WriteString("]")
			break
		}
		b.WriteString(a.Symbol)
		if a.Value != 0 || a.Symbol == "" && a.Reg == "" && a.Index == "" {
			if a.Symbol != "" && a.Value > 0 {
				b.WriteByte('+')
			}
			b.WriteString(strconv.FormatInt(a.Value, 10))
		}
		if a.Reg != "" || a.Index != "" {
			b.WriteByte('(')
			if a.Reg != "" {
				b.WriteString("%" + a.Reg)
			}
			if a.Index != "" {
				b.WriteString(",%" + a.Index + "," + strconv.Itoa(a.Scale))
			}
			b.WriteByte(')')
		}
	default:
		b.WriteString("?")
	}
	return b.String()
}

// x86Reg is where an x86-64 register name lives in the kernel's struct pt_regs
// (arch/x86/include/asm/ptrace.h): the full register's byte offset, and a shift for %ah..%dh.
type x86Reg struct {
	name  string // the full 64-bit register
	off   int16
	shift uint8
}

// x86Regs maps every general-purpose register name gcc prints to its pt_regs slot.
var x86Regs = func() map[string]x86Reg {
	m := make(map[string]x86Reg)
	full := []struct {
		name    string
		off     int16
		aliases []string
	}{
		{"r15", 0, nil}, {"r14", 8, nil}, {"r13", 16, nil}, {"r12", 24, nil},
		{"rbp", 32, []string{"ebp", "bp", "bpl"}},
		{"rbx", 40, []string{"ebx", "bx", "bl"}},
		{"r11", 48, nil}, {"r10", 56, nil}, {"r9", 64, nil}, {"r8", 72, nil},
		{"rax", 80, []string{"eax", "ax", "al"}},
		{"rcx", 88, []string{"ecx", "cx", "cl"}},
		{"rdx", 96, []string{"edx", "dx", "dl"}},
		{"rsi", 104, []string{"esi", "si", "sil"}},
		{"rdi", 112, []string{"edi", "di", "dil"}},
		{"rsp", 152, []string{"esp", "sp", "spl"}},
	}
	for _, r := range full {
		m[r.name] = x86Reg{r.name, r.off, 0}
		aliases := r.aliases
		if r.name[1] >= '0' && r.name[1] <= '9' { // r8..r15: r8d, r8w, r8b
			aliases = []string{r.name + "d", r.name + "w", r.name + "b"}
		}
		for _, a := range aliases {
			m[a] = x86Reg{r.name, r.off, 0}
		}
	}
	for _, h := range []string{"ah", "bh", "ch", "dh"} {
		x := m[string(h[0])+"l"]
		m[h] = x86Reg{x.name, x.off, 8}
	}
	return m
}()

// arm64Regs maps arm64 register names to their offsets in struct pt_regs (arch/arm64/include/asm/ptrace.h,
// user_pt_regs first: regs[31], sp, pc, pstate).
var arm64Regs = func() map[string]int16 {
	m := map[string]int16{"sp": 31 * 8, "fp": 29 * 8, "lr": 30 * 8}
	for i := range 31 {
		m["x"+strconv.Itoa(i)] = int16(i * 8)
		m["w"+strconv.Itoa(i)] = int16(i * 8)
	}
	return m
}()
