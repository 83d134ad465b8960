package attach

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Limits of the wire protocol, from HotSpot's attachListener.hpp.
const (
	V1MaxName    = 16     // name_length_max
	V1MaxArg     = 1024   // arg_length_max, bytes without the NUL
	V1MaxArgs    = 3      // arg_count_max
	V2MaxRequest = 262144 // the JVM closes v2 requests whose size field exceeds this
)

// Protocol versions.
const (
	ProtocolAuto = 0
	ProtocolV1   = 1
	ProtocolV2   = 2
)

// StatusBadVersion is ATTACH_ERROR_BADVERSION, the answer of a JVM to a protocol version it does not speak.
const StatusBadVersion = 101

// EncodeV1 encodes an operation in protocol 1: "1\0op\0a0\0a1\0a2\0", exactly three arguments.
func EncodeV1(op string, args ...string) ([]byte, error) {
	if err := checkName(op); err != nil {
		return nil, err
	}
	if len(op) > V1MaxName {
		return nil, fmt.Errorf("%w: operation name %q is longer than %d bytes", ErrBadRequest, op, V1MaxName)
	}
	if len(args) > V1MaxArgs {
		return nil, fmt.Errorf("%w: %s takes at most %d arguments on JVMs before JDK 24, got %d", ErrBadRequest, op, V1MaxArgs, len(args))
	}
	var b bytes.Buffer
	b.WriteString("1\x00")
	b.WriteString(op)
	b.WriteByte(0)
	for i := range V1MaxArgs {
		var a string
		if i < len(args) {
			a = args[i]
		}
		if err := checkArg(a); err != nil {
			return nil, err
		}
		if len(a) > V1MaxArg {
			return nil, fmt.Errorf("%w: argument %d of %s is %d bytes; attach protocol 1 (the only one before JDK 24) allows at most %d bytes per argument", ErrRequestTooLarge, i+1, op, len(a), V1MaxArg)
		}
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.Bytes(), nil
}

// EncodeV2 encodes an operation in protocol 2 (JDK 24+): "2\0<size>\0op[ opts]\0(arg\0)*" where size
// counts the bytes after its own NUL. opts are "name=value" pairs (today only streaming=0|1).
func EncodeV2(op string, opts []string, args ...string) ([]byte, error) {
	if err := checkName(op); err != nil {
		return nil, err
	}
	var body bytes.Buffer
	body.WriteString(op)
	if len(opts) > 0 {
		for _, o := range opts {
			if strings.ContainsAny(o, " ,\x00") {
				return nil, fmt.Errorf("%w: bad option %q", ErrBadRequest, o)
			}
		}
		body.WriteByte(' ')
		body.WriteString(strings.Join(opts, ","))
	}
	body.WriteByte(0)
	for _, a := range args {
		if err := checkArg(a); err != nil {
			return nil, err
		}
		body.WriteString(a)
		body.WriteByte(0)
	}
	if body.Len() > V2MaxRequest {
		return nil, fmt.Errorf("%w: request is %d bytes; the JVM accepts at most %d", ErrRequestTooLarge, body.Len(), V2MaxRequest)
	}
	out := make([]byte, 0, body.Len()+16)
	out = append(out, "2\x00"...)
	out = strconv.AppendInt(out, int64(body.Len()), 10)
	out = append(out, 0)
	return append(out, body.Bytes()...), nil
}

func checkName(op string) error {
	if op == "" || strings.ContainsAny(op, "\x00 ") {
		return fmt.Errorf("%w: bad operation name %q", ErrBadRequest, op)
	}
	return nil
}

func checkArg(a string) error {
	if strings.IndexByte(a, 0) >= 0 {
		return fmt.Errorf("%w: argument contains a NUL byte", ErrBadRequest)
	}
	return nil
}

// maxStatusLine bounds the status line: a decimal int32 and a newline, with generous slack.
const maxStatusLine = 32

// ParseStatusLine parses the head of a reply: the decimal status and the newline after it. It returns
// the status and the number of bytes the line took. With complete=false (more data may come) an
// unfinished line returns n=0 and no error. A reply is "<status>\n<output until EOF>".
func ParseStatusLine(b []byte, complete bool) (status, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	line := b
	switch {
	case i >= 0:
		line = b[:i]
		n = i + 1
	case !complete && len(b) < maxStatusLine:
		return 0, 0, nil
	case len(b) == 0:
		return 0, 0, ErrNoReply
	default:
		// JDK 8 replies to some errors without a newline; accept a bare number at EOF.
		n = len(b)
	}
	s := strings.TrimSpace(string(line))
	v, perr := strconv.ParseInt(s, 10, 32)
	if perr != nil || len(line) > maxStatusLine {
		return 0, 0, fmt.Errorf("attach: malformed reply status %q", truncate(string(line), maxStatusLine))
	}
	return int(v), n, nil
}

// ParseReply splits a complete reply into status and output.
func ParseReply(b []byte) (status int, output []byte, err error) {
	status, n, err := ParseStatusLine(b, true)
	if err != nil {
		return 0, nil, err
	}
	return status, b[n:], nil
}

// LoadResult interprets the reply to a `load` operation, whose shape changed twice:
//   - JDK 8:      status 0, output "<Agent_OnAttach return code>\n";
//   - JDK 9-20:   status 0, output "return code: <rc>\n"; a library that cannot be loaded gives status -1;
//   - JDK 21+:    always status 0; "return code: <rc>" on a completed call, otherwise only an error
//     message (for example "<lib> was not loaded.\n<dlerror text>").
//
// It returns nil when the agent was loaded and returned 0, *AgentError or *JVMError otherwise.
func LoadResult(status int, output []byte) error {
	out := strings.TrimSpace(string(output))
	if status != 0 {
		return &AgentError{ReturnCode: -1, Message: (&JVMError{Code: status, Message: out}).Error()}
	}
	first, rest, _ := strings.Cut(out, "\n")
	first = strings.TrimSpace(first)
	if v, ok := strings.CutPrefix(first, "return code:"); ok {
		first = strings.TrimSpace(v)
	}
	rc, err := strconv.Atoi(first)
	if err != nil {
		return &AgentError{ReturnCode: -1, Message: out}
	}
	if rc != 0 {
		return &AgentError{ReturnCode: rc, Message: strings.TrimSpace(rest)}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
