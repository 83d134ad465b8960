package attach

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeV1(t *testing.T) {
	got, err := EncodeV1("jcmd", "VM.version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "1\x00jcmd\x00VM.version\x00\x00\x00"; string(got) != want {
		t.Errorf("EncodeV1 = %q, want %q", got, want)
	}
	got, err = EncodeV1("load", "/x/lib.so", "true", "a=b c")
	if err != nil {
		t.Fatal(err)
	}
	if want := "1\x00load\x00/x/lib.so\x00true\x00a=b c\x00"; string(got) != want {
		t.Errorf("EncodeV1 = %q, want %q", got, want)
	}
	// The limit is on the bytes without the NUL: 1024 passes, 1025 fails (verified on JDK 17 and 25).
	if _, err := EncodeV1("jcmd", strings.Repeat("x", V1MaxArg)); err != nil {
		t.Errorf("1024-byte argument: %v", err)
	}
	for _, tc := range []struct {
		op   string
		args []string
		want error
	}{
		{"jcmd", []string{strings.Repeat("x", V1MaxArg+1)}, ErrRequestTooLarge},
		{"jcmd", []string{"a", "b", "c", "d"}, ErrBadRequest},
		{"averyveryverylongname", nil, ErrBadRequest},
		{"jcmd", []string{"a\x00b"}, ErrBadRequest},
		{"", nil, ErrBadRequest},
		{"two words", nil, ErrBadRequest},
	} {
		if _, err := EncodeV1(tc.op, tc.args...); !errors.Is(err, tc.want) {
			t.Errorf("EncodeV1(%q, %q) error = %v, want %v", tc.op, tc.args, err, tc.want)
		}
	}
}

func TestEncodeV2(t *testing.T) {
	got, err := EncodeV2("jcmd", []string{"streaming=0"}, "VM.version")
	if err != nil {
		t.Fatal(err)
	}
	// The size counts everything after its own NUL: "jcmd streaming=0\0" (17) + "VM.version\0" (11).
	if want := "2\x0028\x00jcmd streaming=0\x00VM.version\x00"; string(got) != want {
		t.Errorf("EncodeV2 = %q, want %q", got, want)
	}
	got, err = EncodeV2("properties", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2\x0011\x00properties\x00"; string(got) != want {
		t.Errorf("EncodeV2 = %q, want %q", got, want)
	}
	// No per-argument limit in protocol 2, only the total.
	if _, err := EncodeV2("jcmd", nil, strings.Repeat("x", 10000)); err != nil {
		t.Errorf("10000-byte argument: %v", err)
	}
	if _, err := EncodeV2("jcmd", nil, strings.Repeat("x", V2MaxRequest)); !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("oversized request: error = %v, want ErrRequestTooLarge", err)
	}
	if _, err := EncodeV2("jcmd", []string{"a b"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("option with a space: error = %v", err)
	}
}

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		in      string
		status  int
		out     string
		wantErr error
	}{
		{"0\nOpenJDK\n", 0, "OpenJDK\n", nil},
		{"-1\nOperation foo not recognized!", -1, "Operation foo not recognized!", nil},
		{"101\n", 101, "", nil},
		{"0\n", 0, "", nil},
		{"7", 7, "", nil}, // bare status at EOF
		{"", 0, "", ErrNoReply},
	} {
		st, out, err := ParseReply([]byte(tc.in))
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("ParseReply(%q) error = %v, want %v", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || st != tc.status || string(out) != tc.out {
			t.Errorf("ParseReply(%q) = %d, %q, %v; want %d, %q", tc.in, st, out, err, tc.status, tc.out)
		}
	}
	for _, bad := range []string{"abc\n", "1 2\n", "99999999999999\n", "\n"} {
		if _, _, err := ParseReply([]byte(bad)); err == nil {
			t.Errorf("ParseReply(%q): no error", bad)
		}
	}
	// An unfinished status line is not an error while more may come.
	if st, n, err := ParseStatusLine([]byte("-"), false); err != nil || n != 0 || st != 0 {
		t.Errorf("partial line: %d %d %v", st, n, err)
	}
}

func TestLoadResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		out    string
		rc     int // -2: success
		msg    string
	}{
		{"jdk8 ok", 0, "0\n", -2, ""},
		{"jdk8 agent failed", 0, "3\n", 3, ""},
		{"jdk17 ok", 0, "return code: 0\n", -2, ""},
		{"jdk17 agent failed", 0, "return code: 100\n", 100, ""},
		{"jdk17 not found", -1, "Failed to load agent library", -1, "Failed to load agent library"},
		{"jdk21 not found", 0, "libnone.so was not loaded.\nlibnone.so: cannot open shared object file", -1, "libnone.so was not loaded.\nlibnone.so: cannot open shared object file"},
		{"jdk21 agent failed with text", 0, "return code: 102\nagentmain failed", 102, "agentmain failed"},
		{"empty", 0, "", -1, ""},
	} {
		err := LoadResult(tc.status, []byte(tc.out))
		if tc.rc == -2 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ae *AgentError
		if !errors.As(err, &ae) {
			t.Errorf("%s: error %v is not an AgentError", tc.name, err)
			continue
		}
		if ae.ReturnCode != tc.rc || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: got %+v, want rc %d message containing %q", tc.name, ae, tc.rc, tc.msg)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"0\nOpenJDK 64-Bit Server VM\n", "-1\nerr", "101\n", "", "7", "\n\n", "0\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, out, err := ParseReply(b)
		if err != nil {
			return
		}
		if len(out) > len(b) {
			t.Fatalf("output longer than input")
		}
		// Status and output must reassemble to a suffix of the input.
		if !strings.HasSuffix(string(b), string(out)) {
			t.Fatalf("output %q is not the tail of %q", out, b)
		}
		_ = LoadResult(st, out)
	})
}

func FuzzEncode(f *testing.F) {
	f.Add("jcmd", "VM.version", "", "")
	f.Add("load", "/lib.so", "true", "opts")
	f.Fuzz(func(t *testing.T, op, a0, a1, a2 string) {
		v1, err := EncodeV1(op, a0, a1, a2)
		if err == nil {
			parts := strings.Split(string(v1), "\x00")
			if diff := cmp.Diff([]string{"1", op, a0, a1, a2, ""}, parts); diff != "" {
				t.Fatalf("v1 round trip (-want +got):\n%s", diff)
			}
		}
		v2, err := EncodeV2(op, nil, a0, a1, a2)
		if err == nil {
			parts := strings.SplitN(string(v2), "\x00", 3)
			if len(parts) != 3 || parts[0] != "2" {
				t.Fatalf("v2 header %q", v2)
			}
			if parts[1] != strconvItoa(len(parts[2])) {
				t.Fatalf("v2 size %s, body %d bytes", parts[1], len(parts[2]))
			}
		}
	})
}

// TestAttachDisabledSentinel: ErrAttachDisabled, built without fmt (for gjcmd's start-up), reads and
// wraps as the fmt.Errorf it replaces.
func TestAttachDisabledSentinel(t *testing.T) {
	want := fmt.Errorf("%w: attach mechanism disabled in the target JVM (started with -XX:+DisableAttachMechanism)", ErrNoListener)
	if ErrAttachDisabled.Error() != want.Error() || !errors.Is(errors.Unwrap(ErrAttachDisabled), ErrNoListener) {
		t.Errorf("ErrAttachDisabled = %q wrapping %v, want %q wrapping ErrNoListener", ErrAttachDisabled, errors.Unwrap(ErrAttachDisabled), want)
	}
}
