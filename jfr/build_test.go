package jfr

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
)

// A writer of small synthetic recordings, for tests of what real ones rarely show (cycles, keys
// repeated across chunks, fixed-width integers, every string encoding) and for fuzz seeds. It writes
// the JDK 14+ layout: header, metadata, events, then the checkpoint the header points to.

type enc struct {
	bytes.Buffer
	fixed bool // fixed-width integers instead of varints
}

func (e *enc) varint(v uint64) {
	for i := 0; i < 8; i++ {
		if v < 0x80 {
			e.WriteByte(byte(v))
			return
		}
		e.WriteByte(byte(v&0x7f) | 0x80)
		v >>= 7
	}
	e.WriteByte(byte(v))
}

func (e *enc) long(v int64) {
	if e.fixed {
		_ = binary.Write(e, binary.BigEndian, v)
		return
	}
	e.varint(uint64(v))
}

func (e *enc) int(v int32) {
	if e.fixed {
		_ = binary.Write(e, binary.BigEndian, v)
		return
	}
	e.varint(uint64(uint32(v)))
}

func (e *enc) short(v int16) {
	if e.fixed {
		_ = binary.Write(e, binary.BigEndian, v)
		return
	}
	e.varint(uint64(uint16(v)))
}

func (e *enc) str(s string) { // UTF-8 encoding
	if s == "" {
		e.WriteByte(strEmpty)
		return
	}
	e.WriteByte(strUTF8)
	e.int(int32(len(s)))
	e.WriteString(s)
}

func (e *enc) f32(v float32) { _ = binary.Write(e, binary.BigEndian, math.Float32bits(v)) }
func (e *enc) f64(v float64) { _ = binary.Write(e, binary.BigEndian, math.Float64bits(v)) }

type tAnn struct {
	class int64
	attrs [][2]string
}

type tField struct {
	name      string
	class     int64
	array, cp bool
	anns      []tAnn
}

type tClass struct {
	id          int64
	name, super string
	simple      bool
	fields      []tField
	anns        []tAnn
}

// Ids of the synthetic metadata's classes.
const (
	tLong = 10 + iota
	tInt
	tBoolean
	tByte
	tChar
	tShort
	tFloat
	tDouble
	tString
	tThread
	tTimestamp
	tTimespan
	tUnsigned
	tLabel
	tNode
	tEvent
	tSymbol
	tCategory
)

func testClasses() []tClass {
	ts := func(v string) []tAnn { return []tAnn{{tTimestamp, [][2]string{{"value", v}}}} }
	tsp := func(v string) []tAnn { return []tAnn{{tTimespan, [][2]string{{"value", v}}}} }
	return []tClass{
		{id: tLong, name: "long"}, {id: tInt, name: "int"}, {id: tBoolean, name: "boolean"},
		{id: tByte, name: "byte"}, {id: tChar, name: "char"}, {id: tShort, name: "short"},
		{id: tFloat, name: "float"}, {id: tDouble, name: "double"}, {id: tString, name: "java.lang.String"},
		{id: tTimestamp, name: "jdk.jfr.Timestamp", super: "java.lang.annotation.Annotation", fields: []tField{{name: "value", class: tString}}},
		{id: tTimespan, name: "jdk.jfr.Timespan", super: "java.lang.annotation.Annotation", fields: []tField{{name: "value", class: tString}}},
		{id: tUnsigned, name: "jdk.jfr.Unsigned", super: "java.lang.annotation.Annotation"},
		{id: tLabel, name: "jdk.jfr.Label", super: "java.lang.annotation.Annotation", fields: []tField{{name: "value", class: tString}}},
		{id: tCategory, name: "jdk.jfr.Category", super: "java.lang.annotation.Annotation", fields: []tField{{name: "value", class: tString, array: true}}},
		{id: tSymbol, name: "jdk.types.Symbol", simple: true, fields: []tField{{name: "string", class: tString}}},
		{id: tThread, name: "java.lang.Thread", fields: []tField{
			{name: "osName", class: tString}, {name: "javaName", class: tString}, {name: "javaThreadId", class: tLong}}},
		// A node of a linked structure in the constant pool: it may refer to itself.
		{id: tNode, name: "test.Node", fields: []tField{{name: "name", class: tSymbol, cp: true}, {name: "next", class: tNode, cp: true}}},
		{id: tEvent, name: "test.Event", super: "jdk.jfr.Event",
			anns: []tAnn{{tLabel, [][2]string{{"value", "Test"}}}, {tCategory, [][2]string{{"value-0", "Java Virtual Machine"}, {"value-1", "Test"}}}},
			fields: []tField{
				{name: "startTime", class: tLong, anns: ts("TICKS")},
				{name: "duration", class: tLong, anns: tsp("TICKS")},
				{name: "eventThread", class: tThread, cp: true},
				{name: "message", class: tString},
				{name: "numbers", class: tInt, array: true},
				{name: "flag", class: tBoolean},
				{name: "letter", class: tChar},
				{name: "small", class: tByte},
				{name: "medium", class: tShort},
				{name: "ratio", class: tFloat},
				{name: "precise", class: tDouble},
				{name: "unsigned", class: tInt, anns: []tAnn{{class: tUnsigned}}},
				{name: "wall", class: tLong, anns: ts("MILLISECONDS_SINCE_EPOCH")},
				{name: "wait", class: tLong, anns: tsp("MILLISECONDS")},
				{name: "node", class: tNode, cp: true},
			}},
	}
}

type tElem struct {
	name     string
	attrs    [][2]string
	children []*tElem
}

// metadataEvent encodes the classes as a metadata event (size and type included).
func metadataEvent(fixed bool, classes []tClass, gmtOffsetMillis int64) []byte {
	root := &tElem{name: "root"}
	md := &tElem{name: "metadata"}
	root.children = append(root.children, md, &tElem{name: "region", attrs: [][2]string{{"gmtOffset", strconv.FormatInt(gmtOffsetMillis, 10)}, {"locale", "en_US"}}})
	annElems := func(anns []tAnn) []*tElem {
		var out []*tElem
		for _, a := range anns {
			out = append(out, &tElem{name: "annotation", attrs: append([][2]string{{"class", strconv.FormatInt(a.class, 10)}}, a.attrs...)})
		}
		return out
	}
	for _, c := range classes {
		ce := &tElem{name: "class", attrs: [][2]string{{"id", strconv.FormatInt(c.id, 10)}, {"name", c.name}}}
		if c.super != "" {
			ce.attrs = append(ce.attrs, [2]string{"superType", c.super})
		}
		if c.simple {
			ce.attrs = append(ce.attrs, [2]string{"simpleType", "true"})
		}
		ce.children = annElems(c.anns)
		for _, f := range c.fields {
			fe := &tElem{name: "field", attrs: [][2]string{{"name", f.name}, {"class", strconv.FormatInt(f.class, 10)}}}
			if f.array {
				fe.attrs = append(fe.attrs, [2]string{"dimension", "1"})
			}
			if f.cp {
				fe.attrs = append(fe.attrs, [2]string{"constantPool", "true"})
			}
			fe.children = annElems(f.anns)
			ce.children = append(ce.children, fe)
		}
		md.children = append(md.children, ce)
	}
	var strs []string
	index := map[string]int{}
	id := func(s string) int32 {
		if i, ok := index[s]; ok {
			return int32(i)
		}
		index[s] = len(strs)
		strs = append(strs, s)
		return int32(len(strs) - 1)
	}
	var walk func(*tElem)
	walk = func(e *tElem) {
		id(e.name)
		for _, a := range e.attrs {
			id(a[0])
			id(a[1])
		}
		for _, c := range e.children {
			walk(c)
		}
	}
	walk(root)
	body := &enc{fixed: fixed}
	body.long(metadataTypeID)
	body.long(0) // start
	body.long(0) // duration
	body.long(1) // metadata id
	body.int(int32(len(strs)))
	for _, s := range strs {
		body.str(s)
	}
	var write func(*tElem)
	write = func(e *tElem) {
		body.int(id(e.name))
		body.int(int32(len(e.attrs)))
		for _, a := range e.attrs {
			body.int(id(a[0]))
			body.int(id(a[1]))
		}
		body.int(int32(len(e.children)))
		for _, c := range e.children {
			write(c)
		}
	}
	write(root)
	return sized(fixed, body.Bytes())
}

// sized prefixes an event body (type id first) with its size, the size counting itself.
func sized(fixed bool, body []byte) []byte {
	if fixed {
		out := &enc{fixed: true}
		out.int(int32(len(body) + 4))
		out.Write(body)
		return out.Bytes()
	}
	// A padded four-byte varint, as the JVM writes sizes it patches afterwards.
	n := len(body) + 4
	out := []byte{byte(n&0x7f) | 0x80, byte(n>>7&0x7f) | 0x80, byte(n>>14&0x7f) | 0x80, byte(n >> 21 & 0x7f)}
	return append(out, body...)
}

type tPool struct {
	class   int64
	entries []func(e *enc) // key and value
}

func checkpointEvent(fixed bool, delta int64, pools []tPool) []byte {
	body := &enc{fixed: fixed}
	body.long(checkpointTypeID)
	body.long(0)
	body.long(0)
	body.long(delta)
	body.WriteByte(1) // flush
	body.int(int32(len(pools)))
	for _, p := range pools {
		body.long(p.class)
		body.int(int32(len(p.entries)))
		for _, w := range p.entries {
			w(body)
		}
	}
	return sized(fixed, body.Bytes())
}

// chunkBytes lays out a chunk: header, metadata, events, checkpoints (each pointing to the previous
// one); the header points at the last checkpoint.
func chunkBytes(fixed bool, startNanos, startTicks, ticksPerSecond int64, meta []byte, events [][]byte, checkpoints [][]tPool) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, HeaderSize))
	metaOff := int64(b.Len())
	b.Write(meta)
	for _, e := range events {
		b.Write(e)
	}
	var cpOff, prev int64
	for i, pools := range checkpoints {
		cpOff = int64(b.Len())
		delta := int64(0)
		if i > 0 {
			delta = prev - cpOff
		}
		b.Write(checkpointEvent(fixed, delta, pools))
		prev = cpOff
	}
	out := b.Bytes()
	be := binary.BigEndian
	copy(out, magic)
	be.PutUint16(out[4:], 2)
	be.PutUint16(out[6:], 1)
	be.PutUint64(out[8:], uint64(len(out)))
	be.PutUint64(out[16:], uint64(cpOff))
	be.PutUint64(out[24:], uint64(metaOff))
	be.PutUint64(out[32:], uint64(startNanos))
	be.PutUint64(out[40:], 1_000_000_000)
	be.PutUint64(out[48:], uint64(startTicks))
	be.PutUint64(out[56:], uint64(ticksPerSecond))
	if !fixed {
		out[67] = 1
	}
	return out
}

// testEvent encodes a test.Event.
type testEventValues struct {
	start, dur int64
	thread     int64
	message    string
	numbers    []int32
	flag       bool
	letter     uint16
	small      int8
	medium     int16
	ratio      float32
	precise    float64
	unsigned   int32
	wall, wait int64
	node       int64
}

func testEvent(fixed bool, v testEventValues) []byte {
	e := &enc{fixed: fixed}
	e.long(tEvent)
	e.long(v.start)
	e.long(v.dur)
	e.long(v.thread)
	e.str(v.message)
	e.int(int32(len(v.numbers)))
	for _, n := range v.numbers {
		e.int(n)
	}
	if v.flag {
		e.WriteByte(1)
	} else {
		e.WriteByte(0)
	}
	if fixed {
		_ = binary.Write(e, binary.BigEndian, v.letter)
	} else {
		e.varint(uint64(v.letter))
	}
	e.WriteByte(byte(v.small))
	e.short(v.medium)
	e.f32(v.ratio)
	e.f64(v.precise)
	e.int(v.unsigned)
	e.long(v.wall)
	e.long(v.wait)
	e.long(v.node)
	return sized(fixed, e.Bytes())
}

func threadEntry(key int64, os, java string, id int64) func(*enc) {
	return func(e *enc) {
		e.long(key)
		e.str(os)
		e.str(java)
		e.long(id)
	}
}

func nodeEntry(key, symbol, next int64) func(*enc) {
	return func(e *enc) {
		e.long(key)
		e.long(symbol)
		e.long(next)
	}
}

func symbolEntry(key int64, s string) func(*enc) {
	return func(e *enc) {
		e.long(key)
		e.str(s)
	}
}

// syntheticRecording is two chunks of one JVM: the second repeats thread 1 with another name (which
// the reader must ignore, as the JDK's does) and has a node that refers to itself.
func syntheticRecording(fixed bool) []byte {
	meta := metadataEvent(fixed, testClasses(), 3_600_000)
	const tps = 2_000_000_000 // two ticks a nanosecond
	c1 := chunkBytes(fixed, 1_700_000_000_000_000_000, 1000, tps, meta, [][]byte{
		testEvent(fixed, testEventValues{start: 3000, dur: 500, thread: 1, message: "héllo \"wörld\"\n", numbers: []int32{1, -2, 3},
			flag: true, letter: 'x', small: -5, medium: -300, ratio: 0.1, precise: 1e-7, unsigned: -1, wall: 1_700_000_000_123, wait: 1500, node: 7}),
		testEvent(fixed, testEventValues{start: 2000, thread: 2, ratio: float32(math.NaN()), precise: math.Inf(1), unsigned: 7, wait: math.MaxInt64, node: 8}),
	}, [][]tPool{
		{{class: tThread, entries: []func(*enc){threadEntry(1, "main", "main", 1)}}},
		{{class: tThread, entries: []func(*enc){threadEntry(2, "worker-os", "", 22)}},
			{class: tSymbol, entries: []func(*enc){symbolEntry(100, "seven"), symbolEntry(101, "eight")}},
			{class: tNode, entries: []func(*enc){nodeEntry(7, 100, 8), nodeEntry(8, 101, 7)}}},
	})
	c2 := chunkBytes(fixed, 1_700_000_001_000_000_000, 2_000_001_000, tps, meta, [][]byte{
		testEvent(fixed, testEventValues{start: 2_000_002_000, dur: 2, thread: 1, message: "second", node: 9, wait: math.MinInt64}),
	}, [][]tPool{
		{{class: tThread, entries: []func(*enc){threadEntry(1, "renamed", "renamed", 1)}},
			{class: tSymbol, entries: []func(*enc){symbolEntry(102, "nine")}},
			{class: tNode, entries: []func(*enc){nodeEntry(9, 102, 9)}}},
	})
	return append(c1, c2...)
}
