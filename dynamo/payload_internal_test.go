package dynamo

import (
	"bytes"
	"compress/flate"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/provider"
)

// hexPayload returns n pseudo-random hex digits drawn from seed: text that
// compresses to about half, as a payload of identifiers and digests does.
func hexPayload(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(len(digits))]
	}
	return string(b)
}

// TestCompressPartsRoundTrip: what compressParts stores, decompressParts
// returns part for part, empty parts included.
func TestCompressPartsRoundTrip(t *testing.T) {
	for _, parts := range [][]string{
		{strings.Repeat(`{"city":"Seattle"}`, 60)},
		{hexPayload(1, 4096)},
		{"", strings.Repeat("a", 600), ""},
		{`{"event_id":7,"kind":"ActivityScheduled","input":"` + hexPayload(2, 1000) + `"}`, `{"event_id":8}`, hexPayload(3, 300)},
	} {
		b, ok := compressParts(parts)
		if !ok {
			t.Fatalf("parts of %d bytes were not compressed", len(strings.Join(parts, "")))
		}
		if b[0] != payloadDeflate {
			t.Fatalf("format byte %d, want %d", b[0], payloadDeflate)
		}
		got, err := decompressParts(b)
		if err != nil {
			t.Fatalf("decompressParts: %v", err)
		}
		if !reflect.DeepEqual(got, parts) {
			t.Fatalf("round trip of %d parts returned %d parts that differ", len(parts), len(got))
		}
	}
}

// TestCompressPartsOnlyWhenWorthIt: small payloads and payloads that do
// not compress by an eighth stay strings.
func TestCompressPartsOnlyWhenWorthIt(t *testing.T) {
	if _, ok := compressParts([]string{strings.Repeat("a", compressMinBytes-1)}); ok {
		t.Errorf("a payload of %d bytes was compressed; the least is %d", compressMinBytes-1, compressMinBytes)
	}
	if _, ok := compressParts([]string{strings.Repeat("a", compressMinBytes)}); !ok {
		t.Errorf("a payload of %d repeated bytes was not compressed", compressMinBytes)
	}
	noise := make([]byte, 4096)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	if _, ok := compressParts([]string{string(noise)}); ok {
		t.Error("4 KB of random bytes were compressed, although that saves nothing")
	}
}

// deflated is a payload in the stored binary form with raw content body.
func deflated(t *testing.T, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(payloadDeflate)
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecompressPartsRejectsBadData: every malformed binary payload is an
// error, never a panic or a payload.
func TestDecompressPartsRejectsBadData(t *testing.T) {
	good, ok := compressParts([]string{strings.Repeat("payload ", 100)})
	if !ok {
		t.Fatal("not compressed")
	}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"unknown format":   append([]byte{9}, good[1:]...),
		"truncated stream": good[:len(good)/2],
		"length past end":  deflated(t, []byte{200, 'a', 'b'}),
		"bad varint":       deflated(t, bytes.Repeat([]byte{0xff}, 11)),
		"bomb":             deflated(t, append([]byte{0x80, 0x80, 0x20}, make([]byte, maxPayloadBytes+10)...)),
	} {
		if parts, err := decompressParts(b); !errors.Is(err, errPayload) {
			t.Errorf("%s: decompressParts returned %d parts and %v, want an error wrapping errPayload", name, len(parts), err)
		}
	}
}

// TestPayloadAttrReadsBothForms: a payload attribute reads the same stored
// as a string or compressed; anything else, or a binary one holding
// several parts, is corrupt data.
func TestPayloadAttrReadsBothForms(t *testing.T) {
	data := strings.Repeat(`{"Hello":"world"}`, 50)
	b, _ := compressParts([]string{data})
	several, _ := compressParts([]string{data, data})
	for name, v := range map[string]types.AttributeValue{
		"string":     s(data),
		"compressed": &types.AttributeValueMemberB{Value: b},
	} {
		got, ok, err := payloadAttr(item{attrItem: v}, attrItem)
		if err != nil || !ok || got != data {
			t.Errorf("%s: payloadAttr returned %d bytes, %v, %v; want the payload", name, len(got), ok, err)
		}
	}
	for name, v := range map[string]types.AttributeValue{
		"number":         n(1),
		"several parts":  &types.AttributeValueMemberB{Value: several},
		"not compressed": &types.AttributeValueMemberB{Value: []byte("plain")},
	} {
		if _, _, err := payloadAttr(item{attrPK: s("pk"), attrSK: s("sk"), attrItem: v}, attrItem); !errors.Is(err, provider.ErrCorruptData) {
			t.Errorf("%s: payloadAttr returned %v, want ErrCorruptData", name, err)
		}
	}
	if _, ok, err := payloadAttr(item{}, attrItem); ok || err != nil {
		t.Errorf("absent: payloadAttr returned %v, %v; want not found", ok, err)
	}
}

// TestPackHistoryCompressesRowsAndKeepsThemPlainForTheCache: a row whose
// events compress is stored compressed, with its count; its plain form
// holds the same events as strings; rowEvents reads both alike.
func TestPackHistoryCompressesRowsAndKeepsThemPlainForTheCache(t *testing.T) {
	events := []encodedEvent{
		{id: 1, data: `{"event_id":1,"input":"` + hexPayload(5, 800) + `"}`},
		{id: 2, data: `{"event_id":2,"input":"` + hexPayload(6, 800) + `"}`},
		{id: 4, data: `{"event_id":4,"input":"` + hexPayload(7, 800) + `"}`},
		{id: 6, data: `{"event_id":6}`},
	}
	runs := packHistory("i", 1, events, true)
	if len(runs) != 3 {
		t.Fatalf("%d rows, want 3 (ids 1-2, 4, 6)", len(runs))
	}
	if _, ok := runs[0].row[attrEvents].(*types.AttributeValueMemberB); !ok {
		t.Errorf("row of events 1-2 stores %T, want compressed", runs[0].row[attrEvents])
	}
	if _, ok := runs[1].row[attrEvent].(*types.AttributeValueMemberB); !ok {
		t.Errorf("row of event 4 stores %T, want compressed", runs[1].row[attrEvent])
	}
	if _, ok := runs[2].row[attrEvent].(*types.AttributeValueMemberS); !ok {
		t.Errorf("row of the small event 6 stores %T, want a string", runs[2].row[attrEvent])
	}
	want := [][]string{{events[0].data, events[1].data}, {events[2].data}, {events[3].data}}
	for i, run := range runs {
		for _, row := range []item{run.row, run.plain} {
			got, err := rowEvents(row)
			if err != nil || !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("row %d: rowEvents returned %d events, %v; want the events packed", i, len(got), err)
			}
		}
		if _, ok := run.plain[attrEvents].(*types.AttributeValueMemberB); ok {
			t.Errorf("plain row %d is compressed", i)
		}
	}
	if got := rowEventCount(runs[0].row); got != 2 {
		t.Errorf("compressed row counts %d events, want 2", got)
	}
	for _, run := range packHistory("i", 1, events, false) {
		for name, v := range run.row {
			if _, ok := v.(*types.AttributeValueMemberB); ok {
				t.Errorf("without compression, attribute %q is compressed", name)
			}
		}
	}
}

// FuzzDecompressParts: no input makes decompressParts panic or return
// more than maxPayloadBytes.
func FuzzDecompressParts(f *testing.F) {
	good, _ := compressParts([]string{strings.Repeat("event ", 200), "x"})
	f.Add(good)
	f.Add([]byte{payloadDeflate})
	f.Add([]byte{payloadDeflate, 0x01, 0x00, 0x00, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, err := decompressParts(b)
		if err != nil {
			return
		}
		total := 0
		for _, p := range parts {
			total += len(p)
		}
		if total > maxPayloadBytes {
			t.Fatalf("accepted %d bytes of parts, more than %d", total, maxPayloadBytes)
		}
	})
}

// BenchmarkCompressParts measures compressing and decompressing a 1 KB
// payload of hex digits (bytes/s is of the uncompressed payload).
func BenchmarkCompressParts(b *testing.B) {
	parts := []string{`{"input":"` + hexPayload(9, 1024) + `"}`}
	b.Run("compress", func(b *testing.B) {
		b.SetBytes(int64(len(parts[0])))
		for b.Loop() {
			if _, ok := compressParts(parts); !ok {
				b.Fatal("not compressed")
			}
		}
	})
	packed, _ := compressParts(parts)
	b.Run("decompress", func(b *testing.B) {
		b.SetBytes(int64(len(parts[0])))
		for b.Loop() {
			if _, err := decompressParts(packed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
