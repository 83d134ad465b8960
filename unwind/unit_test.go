package unwind

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		code []byte
		want epilogueState
	}{
		{[]byte{0xc3}, atRet},
		{[]byte{0x5d, 0xc3}, atPopRBP},
		{[]byte{0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03, 0, 0, 0x0f, 0x87, 1, 0, 0, 0, 0xc3}, atPopRBP},
		{[]byte{0x49, 0x3b, 0xa7, 0x40, 0x03, 0, 0, 0x0f, 0x87, 1, 0, 0, 0, 0xc3}, atRet},
		{[]byte{0x0f, 0x87, 1, 0, 0, 0, 0xc3}, atRet},
		{[]byte{0xc5, 0xf8, 0x77, 0xc3}, atRet},
		{[]byte{0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3}, notEpilogue}, // add rsp: the frame size still applies
		{[]byte{0x5d, 0x48}, notEpilogue},
		// JDK 11's return poll.
		{[]byte{0x5d, 0x4d, 0x8b, 0x97, 0x08, 0x01, 0, 0, 0x41, 0x85, 0x02, 0xc3}, atPopRBP},
		{[]byte{0x4d, 0x8b, 0x97, 0x08, 0x01, 0, 0, 0x41, 0x85, 0x02, 0xc3}, atRet},
		{[]byte{0x41, 0x85, 0x02, 0xc3}, atRet},
		// The reserved stack check of @ReservedStackAccess methods (JDK 17's C2).
		{[]byte{0x5d, 0x49, 0x3b, 0xa7, 0xb8, 0x03, 0, 0, 0x0f, 0x82, 0x3f, 0, 0, 0, 0x49, 0x8b, 0xff}, atPopRBP},
		{[]byte{0x49, 0x3b, 0xa7, 0xb8, 0x03, 0, 0, 0x0f, 0x82, 0x3f, 0, 0, 0, 0x49, 0x8b, 0xff}, atRet},
		{nil, notEpilogue},
	} {
		if got := epilogue(c.code); got != c.want {
			t.Errorf("epilogue(% x) = %v, want %v", c.code, got, c.want)
		}
	}
	bang := []byte{0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff}
	for _, c := range []struct {
		code                 []byte
		pushed, built, saved bool
	}{
		{nil, false, false, false},
		{bang, false, false, false},
		{append(append([]byte{}, bang...), 0x55), true, false, true},
		{append(append([]byte{}, bang...), 0x55, 0x48, 0x83, 0xec, 0x10), true, true, true},
		{append(append([]byte{}, bang...), 0x55, 0x48, 0x83, 0xec, 0x10, 0x41, 0x81), true, true, true},
		{[]byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x81, 0xec, 0, 1, 0, 0}, true, true, true},
		{[]byte{0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x10}, true, true, true},
		// C2: "sub rsp, 0x18", then "mov [rsp+0x10], rbp".
		{[]byte{0x48, 0x81, 0xec, 0x18, 0, 0, 0}, false, true, false},
		{[]byte{0x48, 0x81, 0xec, 0x18, 0, 0, 0, 0x48, 0x89, 0x6c, 0x24, 0x10}, false, true, true},
	} {
		if p, b, s := prologueState(c.code); p != c.pushed || b != c.built || s != c.saved {
			t.Errorf("prologueState(% x) = %v, %v, %v, want %v, %v, %v", c.code, p, b, s, c.pushed, c.built, c.saved)
		}
	}
}

// TestInterpreterReturn decodes the interpreter's return from a method at each of its pcs (JDK 11 and
// JDK 25 as disassembled from live JVMs).
func TestInterpreterReturn(t *testing.T) {
	jdk11 := []byte{0x41, 0x5d, 0x48, 0x8b, 0xe3, 0x41, 0xff, 0xe5}
	jdk25 := []byte{0x41, 0xc6, 0x87, 0xbe, 0x03, 0, 0, 0, 0x41, 0x5d, 0x48, 0x8b, 0xe3, 0x49, 0x3b, 0xa7, 0x20, 0x06, 0, 0,
		0x72, 0x0b, 0x49, 0xc7, 0x87, 0x20, 0x06, 0, 0, 0, 0, 0, 0, 0x41, 0xff, 0xe5}
	for _, c := range []struct {
		code []byte
		want interpreterState
	}{
		{jdk11, retAtSP},
		{jdk11[2:], retInR13},
		{jdk11[5:], retInR13AtSP},
		{jdk25, retAtSP},
		{jdk25[8:], retAtSP},
		{jdk25[10:], retInR13},
		{jdk25[13:], retInR13AtSP},
		{jdk25[20:], retInR13AtSP},
		{jdk25[33:], retInR13AtSP},
		{append([]byte{0xc9}, jdk11...), 0}, // at "leave": the frame is still there
		{[]byte{0x41, 0x5d, 0x41, 0xff, 0xe5}, 0},
		{jdk11[:5], 0},
		{nil, 0},
	} {
		got, ok := interpreterReturn(c.code)
		if got != c.want || ok != (c.want != 0) {
			t.Errorf("interpreterReturn(% x) = %v, %v, want %v", c.code, got, ok, c.want)
		}
	}
}

// TestC2IReturn decodes a c2i adapter's return address at each of its pcs (JDK 17 and 25).
func TestC2IReturn(t *testing.T) {
	jdk17 := []byte{0x58, 0x4c, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x10, 0x48, 0x89, 0x04, 0x24, 0x89, 0x74, 0x24, 0x08}
	jdk25 := []byte{0x4c, 0x8d, 0x6c, 0x24, 0x08, 0x58, 0x48, 0x83, 0xec, 0x10, 0x50, 0x89, 0x74, 0x24, 0x08}
	for _, c := range []struct {
		code          []byte
		inRAX, r13Set bool
	}{
		{jdk17, false, false},
		{jdk17[1:], true, false},
		{jdk17[4:], true, true},
		{jdk17[8:], true, true},
		{jdk17[12:], false, false},
		{jdk25, false, false},
		{jdk25[5:], false, false},
		{jdk25[6:], true, true},
		{jdk25[10:], true, true},
		{jdk25[11:], false, false},
		{nil, false, false},
	} {
		if inRAX, r13Set := c2iReturn(c.code); inRAX != c.inRAX || inRAX && r13Set != c.r13Set {
			t.Errorf("c2iReturn(% x) = %v, %v, want %v, %v", c.code, inRAX, r13Set, c.inRAX, c.r13Set)
		}
	}
}

// TestPoppedAfterCall counts the arguments popped after a call (C1's "pop rsi; pop rsi" after its slow
// subtype check, JDK 17), never an epilogue's "pop rbp".
func TestPoppedAfterCall(t *testing.T) {
	for _, c := range []struct {
		code []byte
		want int
	}{
		{[]byte{0x5e, 0x5e, 0x85, 0xf6}, 2},
		{[]byte{0x41, 0x58, 0x41, 0x5f, 0x58}, 3},
		{[]byte{0x5d, 0xc3}, 0},
		{[]byte{0x58, 0x5d}, 1},
		{[]byte{0x58, 0x58, 0x58, 0x58, 0x58}, 4},
		{[]byte{0x41}, 0},
		{[]byte{0x48, 0x83, 0xc4, 0x10}, 0},
		{nil, 0},
	} {
		if got := poppedAfterCall(c.code); got != c.want {
			t.Errorf("poppedAfterCall(% x) = %d, want %d", c.code, got, c.want)
		}
	}
}

// TestCallPatterns decodes the instruction before a return address as a call.
func TestCallPatterns(t *testing.T) {
	pad := func(b ...byte) []byte { return append(make([]byte, 8-len(b)), b...) }
	for _, c := range []struct {
		code []byte
		want bool
	}{
		{pad(0xff, 0xd0), true},                   // call rax
		{pad(0x41, 0xff, 0xd3), true},             // call r11
		{pad(0xff, 0x10), true},                   // call [rax]
		{pad(0xff, 0x50, 0x08), true},             // call [rax+8]
		{pad(0xff, 0x54, 0x24, 0x08), true},       // call [rsp+8]
		{pad(0xff, 0x15, 1, 2, 3, 4), true},       // call [rip+disp32]
		{pad(0xff, 0x90, 1, 2, 3, 4), true},       // call [rax+disp32]
		{pad(0xff, 0x94, 0x24, 1, 2, 3, 4), true}, // call [rsp+disp32]
		{pad(0xff, 0xe0), false},                  // jmp rax
		{pad(0x48, 0x89, 0xc7), false},            // mov rdi, rax
		{pad(0xe8, 1, 2, 3, 4), false},            // a direct call is not indirect
		{pad(0xff, 0x25, 1, 2, 3, 4), false},      // jmp [rip+disp32]
		{[]byte{0xff, 0xd0}, false},               // too short
	} {
		if got := indirectCall(c.code); got != c.want {
			t.Errorf("indirectCall(% x) = %v, want %v", c.code, got, c.want)
		}
	}
	if target, ok := directCallTarget([]byte{0xe8, 0xfb, 0xff, 0xff, 0xff}, 0x1005); !ok || target != 0x1000 {
		t.Errorf("call rel32 -5 before 0x1005: %#x, %v", target, ok)
	}
}

// FuzzPatterns: the instruction decoders never panic.
func FuzzPatterns(f *testing.F) {
	f.Add([]byte{0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03, 0, 0, 0x0f, 0x87, 1, 0, 0, 0, 0xc3})
	f.Add([]byte{0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x83, 0xec})
	f.Fuzz(func(t *testing.T, code []byte) {
		epilogue(code)
		prologueState(code)
		isSubRSP(code)
		interpreterReturn(code)
		c2iReturn(code)
		poppedAfterCall(code)
		if len(code) >= 8 {
			indirectCall(code[:8])
			directCallTarget(code[:5], 0x1000)
		}
	})
}

// fakeStack is a thread's live stack for stackMem: bytes at lo.
type fakeStack struct {
	lo   uint64
	data []byte
}

func (f *fakeStack) ReadAt(p []byte, addr uint64) (int, error) {
	if addr < f.lo || addr-f.lo+uint64(len(p)) > uint64(len(f.data)) {
		return 0, errors.New("fault")
	}
	return copy(p, f.data[addr-f.lo:]), nil
}

// TestStackMemBeyondCopy: words beyond the sample's copy are read from the live stack only while the
// copy's end and the bottom of the frame that reaches beyond it are unchanged. A large buffer nobody
// writes (JDK 11's socket natives keep 64 KiB on the stack) leaves the end as it was while the thread
// is in another call: the frame's bottom tells.
func TestStackMemBeyondCopy(t *testing.T) {
	const lo, copied, live = 0x7f0000000000, 4096, 8192
	sample := make([]byte, live)
	for i := range sample {
		sample[i] = byte(i * 7)
	}
	frame := uint64(lo + 1024) // the sp of the frame whose return address is beyond the copy
	for _, c := range []struct {
		name    string
		change  func(b []byte)
		at      uint64
		want    bool // the word beyond the copy is served
		changed bool
	}{
		{"unchanged", func([]byte) {}, frame, true, false},
		{"end changed", func(b []byte) { b[copied-1]++ }, frame, false, true},
		{"frame bottom changed (another call, same buffer)", func(b []byte) { b[1024+8]++ }, frame, false, true},
		{"frame bottom changed, frame in the last 64 bytes", func(b []byte) { b[1024+8]++ }, lo + copied - 32, true, false},
		{"leaf changed below the frame", func(b []byte) { b[16]++ }, frame, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := append([]byte(nil), sample...)
			c.change(now)
			m := stackMem{base: &fakeStack{lo: lo, data: now}, lo: lo, data: sample[:copied], at: c.at}
			_, err := m.u64(lo + copied + 64)
			if got := err == nil; got != c.want || m.changed != c.changed || m.beyond != c.want {
				t.Errorf("served %v (%v), changed %v, beyond %v; want served %v, changed %v", got, err, m.changed, m.beyond, c.want, c.changed)
			}
			if v, err := m.u64(lo + 8); err != nil || v != binary.LittleEndian.Uint64(sample[8:]) {
				t.Errorf("a word of the copy: %#x, %v", v, err)
			}
		})
	}
}
