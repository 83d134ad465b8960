package hotspot

import (
	"testing"

	"github.com/jvmkit/jvmkit/usdt"
)

// TestSizeBuckets: instance classes are sized by their layout helper whatever the probe passes; an array is
// sized by the probe only where the probe's sizes proved right on the instance classes, by its firings'
// weights where those proved right, and otherwise counted as unsized, never guessed (issue 12: JDK 17's C2
// passes no size, and "776338 MiB in 10 s" came of summing what it passed).
func TestSizeBuckets(t *testing.T) {
	const objName, arrName, unknownName = 0x1000, 0x2000, 0x3000
	sizes := map[uint64]classSize{objName: {size: 32}, arrName: {array: true}}
	bucket := func(name uint64, class string, count uint64, sum uint64, outOfRange uint64, weight, unweighted uint64) usdt.Bucket {
		return usdt.Bucket{Key: []uint64{name}, Count: count, Sums: []uint64{sum}, OutOfRange: outOfRange,
			String: usdt.String{Data: []byte(class)}, Weight: weight, Unweighted: unweighted, Site: 0}
	}
	for _, tc := range []struct {
		name              string
		buckets           []usdt.Bucket
		weighted, sampled bool
		wantSizes         string
		wantProbe         bool
		wantWeights       bool
		// bytes and unsized firings of each class
		want map[string][2]uint64
	}{{
		name: "probe sizes garbage, no weights",
		buckets: []usdt.Bucket{
			bucket(objName, "Obj", 10, 7777777, 0, 0, 0), // 10 firings of 32 bytes whose sizes sum to garbage
			bucket(arrName, "[B", 5, 1<<50, 2, 0, 0),
			bucket(unknownName, "Gone", 3, 300, 0, 0, 0), // a class unloaded since: no layout known
		},
		wantSizes: SizesClass,
		want:      map[string][2]uint64{"Obj": {320, 0}, "byte[]": {0, 5}, "Gone": {0, 3}},
	}, {
		name: "probe sizes right",
		buckets: []usdt.Bucket{
			bucket(objName, "Obj", 10, 320, 0, 0, 0),
			bucket(arrName, "[B", 5, 280, 0, 0, 0),
		},
		wantSizes: SizesClass, wantProbe: true,
		want: map[string][2]uint64{"Obj": {320, 0}, "byte[]": {280, 0}},
	}, {
		name: "probe sizes garbage, every firing weighed by its own size",
		buckets: []usdt.Bucket{
			bucket(objName, "Obj", 10, 1, 0, 320, 0),
			bucket(arrName, "[B", 5, 1, 0, 224, 1), // one firing from a thread not seen before: unweighed
		},
		weighted: true, wantSizes: SizesClass, wantWeights: true,
		want: map[string][2]uint64{"Obj": {320, 0}, "byte[]": {224, 1}},
	}, {
		name: "weights wrong (JDK 25's C2), probe garbage",
		buckets: []usdt.Bucket{
			bucket(objName, "Obj", 10, 1, 0, 970, 0),
			bucket(arrName, "[B", 5, 1, 0, 485, 0),
		},
		weighted: true, wantSizes: SizesClass,
		want: map[string][2]uint64{"Obj": {320, 0}, "byte[]": {0, 5}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := &AllocProfile{PerSite: make([]uint64, 1)}
			byName := map[string]*ClassAlloc{}
			sizeBuckets(p, tc.buckets, sizes, tc.weighted, tc.sampled, byName)
			if p.Sizes != tc.wantSizes || p.ProbeSizes != tc.wantProbe || p.WeightSizes != tc.wantWeights {
				t.Errorf("sizes %q, probe sizes %v, weight sizes %v; want %q, %v, %v", p.Sizes, p.ProbeSizes, p.WeightSizes,
					tc.wantSizes, tc.wantProbe, tc.wantWeights)
			}
			for class, want := range tc.want {
				c := byName[map[string]string{"Obj": "Obj", "byte[]": "[B", "Gone": "Gone"}[class]]
				if c == nil {
					t.Errorf("no class %s in %v", class, byName)
					continue
				}
				if c.Class != class || c.Bytes != want[0] || c.Unsized != want[1] {
					t.Errorf("%s: %+v, want %d bytes and %d unsized", class, *c, want[0], want[1])
				}
			}
		})
	}
}
