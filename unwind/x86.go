package unwind

// x86-64 instruction patterns of the code HotSpot generates around frames (src/hotspot/cpu/x86/
// macroAssembler_x86.cpp, c2_MacroAssembler_x86.cpp, c1_MacroAssembler_x86.cpp).

// isMovRBPRSP reports whether code starts with "mov rbp, rsp", in either encoding (HotSpot's
// assembler emits 8b /r, compilers 89 /r).
func isMovRBPRSP(code []byte) bool {
	return len(code) >= 3 && code[0] == 0x48 && (code[1] == 0x89 && code[2] == 0xe5 || code[1] == 0x8b && code[2] == 0xec)
}

// isSubRSP reports whether code starts with "sub rsp, imm": the prologue pushed rbp already.
func isSubRSP(code []byte) bool {
	return len(code) >= 3 && code[0] == 0x48 && (code[1] == 0x83 || code[1] == 0x81) && code[2] == 0xec
}

type epilogueState uint8

const (
	notEpilogue epilogueState = iota
	atPopRBP                  // "pop rbp" is next: the frame is gone but for the saved rbp and the return address
	atRet                     // only the return address is left: "ret", or the return poll before it
)

// epilogue tells where in a method's epilogue code lies: "[add rsp, n;] pop rbp; [cmp rsp, [r15+off];
// jb ok; <enable the reserved stack zone>; ok:] [cmp rsp, [r15+off]; ja slow;] [vzeroupper;] ret" (the
// return poll is JDK 16+, earlier JDKs poll before the add; the reserved stack check is in methods
// annotated @ReservedStackAccess, such as ReentrantLock's). Compiled code compares rsp with a
// JavaThread field only there, after the frame is gone.
func epilogue(code []byte) epilogueState {
	if len(code) == 0 {
		return notEpilogue
	}
	if code[0] == 0x5d {
		if rest := code[1:]; len(rest) > 0 && (rest[0] == 0xc3 || cmpRSPThread(rest) || retFollows(rest)) {
			return atPopRBP
		}
		return notEpilogue
	}
	if code[0] == 0xc3 || cmpRSPThread(code) || retFollows(code) {
		return atRet
	}
	return notEpilogue
}

// cmpRSPThread reports whether code starts with "cmp rsp, [r15+off]" (r15 is the JavaThread).
func cmpRSPThread(code []byte) bool {
	return len(code) >= 4 && code[0] == 0x49 && code[1] == 0x3b && (code[2] == 0xa7 || code[2] == 0x67)
}

// retFollows reports whether code is a return poll (JDK 16+: "cmp rsp, [r15+off]; ja slow"; JDK 11:
// "mov r10, [r15+off]; test [r10], eax") or vzeroupper followed by ret.
func retFollows(code []byte) bool {
	seen := false
	for i := 0; i < len(code); {
		switch {
		case code[i] == 0xc3:
			return seen
		case i+7 <= len(code) && code[i] == 0x49 && code[i+1] == 0x3b && code[i+2] == 0xa7: // cmp rsp, [r15+disp32]
			i += 7
		case i+4 <= len(code) && code[i] == 0x49 && code[i+1] == 0x3b && code[i+2] == 0x67: // cmp rsp, [r15+disp8]
			i += 4
		case i+6 <= len(code) && code[i] == 0x0f && code[i+1] == 0x87: // ja rel32
			i += 6
		case i+2 <= len(code) && code[i] == 0x77: // ja rel8
			i += 2
		case i+3 <= len(code) && code[i] == 0xc5 && code[i+1] == 0xf8 && code[i+2] == 0x77: // vzeroupper
			i += 3
		case i+7 <= len(code) && code[i] == 0x4d && code[i+1] == 0x8b && code[i+2] == 0x97: // mov r10, [r15+disp32] (JDK 11's poll)
			i += 7
		case i+4 <= len(code) && code[i] == 0x4d && code[i+1] == 0x8b && code[i+2] == 0x57: // mov r10, [r15+disp8]
			i += 4
		case i+3 <= len(code) && code[i] == 0x41 && code[i+1] == 0x85 && code[i+2] == 0x02: // test [r10], eax
			i += 3
		default:
			return false
		}
		seen = true
	}
	return false
}

// prologueState decodes a compiled method's prologue from its verified entry up to (not including)
// the sampled pc: whether rbp was pushed, whether the frame was allocated ("sub rsp, n") and whether
// the caller's rbp is saved in it. C1 pushes rbp before "sub rsp, n"; C2 allocates first and then
// stores rbp in the frame's second-to-last word ("sub rsp, n; mov [rsp+n-8], rbp"). Decoding stops at
// the first instruction it does not know.
func prologueState(code []byte) (pushed, built, saved bool) {
	for i := 0; i < len(code); {
		switch {
		case code[i] == 0x55: // push rbp
			pushed, saved = true, true
			i++
		case i+5 <= len(code) && code[i] == 0x48 && code[i+1] == 0x89 && code[i+2] == 0x6c && code[i+3] == 0x24: // mov [rsp+disp8], rbp
			saved = true
			i += 5
		case i+8 <= len(code) && code[i] == 0x48 && code[i+1] == 0x89 && code[i+2] == 0xac && code[i+3] == 0x24: // mov [rsp+disp32], rbp
			saved = true
			i += 8
		case i+7 <= len(code) && code[i] == 0x89 && code[i+1] == 0x84 && code[i+2] == 0x24: // mov [rsp+disp32], eax (stack bang)
			i += 7
		case isMovRBPRSP(code[i:]):
			i += 3
		case i+4 <= len(code) && code[i] == 0x48 && code[i+1] == 0x83 && code[i+2] == 0xec: // sub rsp, imm8
			built = true
			i += 4
		case i+7 <= len(code) && code[i] == 0x48 && code[i+1] == 0x81 && code[i+2] == 0xec: // sub rsp, imm32
			built = true
			i += 7
		case code[i] == 0x90: // nop
			i++
		case i+2 <= len(code) && code[i] == 0x66 && code[i+1] == 0x90: // xchg ax, ax
			i += 2
		default:
			return pushed, built, saved
		}
	}
	return pushed, built, saved
}

// directCallTarget decodes the 5 bytes before a return address ra as "call rel32" and returns the
// call's target.
func directCallTarget(code []byte, ra uint64) (uint64, bool) {
	if len(code) != 5 || code[0] != 0xe8 {
		return 0, false
	}
	rel := int32(uint32(code[1]) | uint32(code[2])<<8 | uint32(code[3])<<16 | uint32(code[4])<<24)
	return ra + uint64(int64(rel)), true
}

// indirectCall reports whether the 8 bytes before a return address end with an indirect near call
// ("call r/m64", ff /2): through a register ("call rax", "call r11"), through memory at a register plus
// a displacement, or rip-relative ("call [rip+disp32]"), the forms compilers and HotSpot emit.
func indirectCall(code []byte) bool {
	if len(code) != 8 {
		return false
	}
	call := func(i int) (mod, rm byte, ok bool) { // ff /2 at code[i]
		if code[i] != 0xff || (code[i+1]>>3)&7 != 2 {
			return 0, 0, false
		}
		return code[i+1] >> 6, code[i+1] & 7, true
	}
	// 2 bytes: ff /2 mod 11 (register) or mod 00 through a register ("call [rax]"); 3 with a REX
	// prefix.
	if mod, rm, ok := call(6); ok && (mod == 3 || mod == 0 && rm != 4 && rm != 5) {
		return true
	}
	// 3 bytes: ff /2 mod 01 disp8 (rm != 4); 4: with a SIB byte.
	if mod, rm, ok := call(5); ok && mod == 1 && rm != 4 {
		return true
	}
	if mod, rm, ok := call(4); ok && mod == 1 && rm == 4 {
		return true
	}
	// 6 bytes: ff /2 mod 10 disp32, or mod 00 rm 101 (rip-relative); 7 with a SIB byte.
	if mod, rm, ok := call(2); ok && (mod == 2 && rm != 4 || mod == 0 && rm == 5) {
		return true
	}
	if mod, rm, ok := call(1); ok && mod == 2 && rm == 4 {
		return true
	}
	return false
}

// interpreterState says where the return address of an interpreted method is while it returns.
type interpreterState uint8

const (
	retAtSP      interpreterState = iota + 1 // at sp (not popped yet); the caller's sp is in rbx
	retInR13                                 // in r13 (popped); the caller's sp is in rbx
	retInR13AtSP                             // in r13; sp is already the caller's
)

// interpreterReturn decodes the end of the interpreter's return from a method (InterpreterMacroAssembler::
// remove_activation and the jump after it) from code at the pc on: after "leave", "[mov byte
// [r15+off], 0;] pop r13; mov rsp, rbx; [cmp rsp, [r15+off]; jb; mov qword [r15+off], 0;] jmp r13", where
// rbx holds the sender's sp. What is still ahead of the pc says what was done: a "pop r13" ahead
// leaves the return address at sp, a "mov rsp, rbx" ahead leaves the caller's sp in rbx. ok is false
// unless the code runs into "jmp r13" through these only.
func interpreterReturn(code []byte) (state interpreterState, ok bool) {
	pop, mov := false, false
	for i := 0; i < len(code); {
		c := code[i:]
		switch {
		case len(c) >= 3 && c[0] == 0x41 && c[1] == 0xff && c[2] == 0xe5: // jmp r13
			switch {
			case pop && mov:
				return retAtSP, true
			case mov:
				return retInR13, true
			case pop:
				return 0, false // "pop r13" with sp left where it was: not this code
			}
			return retInR13AtSP, true
		case len(c) >= 8 && c[0] == 0x41 && c[1] == 0xc6 && c[2] == 0x87: // mov byte [r15+disp32], imm8
			i += 8
		case len(c) >= 2 && c[0] == 0x41 && c[1] == 0x5d: // pop r13
			if pop || mov {
				return 0, false
			}
			pop = true
			i += 2
		case len(c) >= 3 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0xe3: // mov rsp, rbx
			if mov {
				return 0, false
			}
			mov = true
			i += 3
		case cmpRSPThread(c) && len(c) >= 7 && c[2] == 0xa7: // cmp rsp, [r15+disp32]
			i += 7
		case cmpRSPThread(c): // cmp rsp, [r15+disp8]
			i += 4
		case len(c) >= 2 && c[0] == 0x72: // jb rel8
			i += 2
		case len(c) >= 6 && c[0] == 0x0f && c[1] == 0x82: // jb rel32
			i += 6
		case len(c) >= 11 && c[0] == 0x49 && c[1] == 0xc7 && c[2] == 0x87: // mov qword [r15+disp32], imm32
			i += 11
		default:
			return 0, false
		}
	}
	return 0, false
}

// c2iReturn decodes where a c2i adapter (SharedRuntime's gen_c2i_adapter) keeps its return address at
// the pc: the adapter pops it into rax, makes room for the arguments and stores it back at the new sp
// ("pop rax; [mov r13, rsp;] sub rsp, n; mov [rsp], rax" on JDK 11-17, "lea r13, [rsp+8]; pop rax;
// sub rsp, n; push rax" on later JDKs), and r13 is the caller's sp once set. inRAX says the pc is
// between the pop and the store, where no copy of the return address is on the stack; r13Set says r13
// holds the caller's sp (else sp does: "mov r13, rsp" is still ahead).
func c2iReturn(code []byte) (inRAX, r13Set bool) {
	r13Set = true
	for i := 0; i < len(code); {
		c := code[i:]
		switch {
		case c[0] == 0x50, len(c) >= 4 && c[0] == 0x48 && c[1] == 0x89 && c[2] == 0x04 && c[3] == 0x24: // push rax, mov [rsp], rax
			return true, r13Set
		case len(c) >= 3 && c[0] == 0x4c && c[1] == 0x8b && c[2] == 0xec: // mov r13, rsp
			if !r13Set {
				return false, false
			}
			r13Set = false
			i += 3
		case len(c) >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xec: // sub rsp, imm8
			i += 4
		case len(c) >= 7 && c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xec: // sub rsp, imm32
			i += 7
		default:
			return false, false
		}
	}
	return false, false
}

// poppedAfterCall counts the "pop" instructions that start code at a return address (at most 4), rbp's
// left out: code that pushed arguments for a call pops them right after it (C1 passes the two klasses of
// its slow subtype check on the stack), so the caller's frame is that many words above the return
// address. A "pop rbp" there would be an epilogue's, part of the frame itself.
func poppedAfterCall(code []byte) int {
	n := 0
	for i := 0; n < 4 && i < len(code); n++ {
		switch c := code[i:]; {
		case c[0] >= 0x58 && c[0] <= 0x5f && c[0] != 0x5d: // pop rax..rdi
			i++
		case len(c) >= 2 && c[0] == 0x41 && c[1] >= 0x58 && c[1] <= 0x5f: // pop r8..r15
			i += 2
		default:
			return n
		}
	}
	return n
}
