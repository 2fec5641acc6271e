package dynamo

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
)

// Payloads (attrItem, attrEvent, attrEvents) are stored as a string or,
// when that saves enough, as a format byte and a DEFLATE stream of
// varint-length-prefixed parts (docs/design.md §3, payloads). Every copy of
// a payload is billed by its stored size. Readers accept both forms.
const (
	payloadDeflate = 1 // the format byte of a compressed payload
	// compressMinBytes: smaller payloads rarely cross a billing unit.
	compressMinBytes = 512
	// maxPayloadBytes: only payloads that fit an item are compressed, so
	// one expanding beyond this is corrupt.
	maxPayloadBytes = 400 * 1024
)

var (
	deflaters = sync.Pool{New: func() any {
		w, err := flate.NewWriter(nil, flate.BestSpeed)
		if err != nil {
			panic(err) // BestSpeed is a valid level
		}
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// compressParts returns the binary form of parts, and false when it is
// not worth storing (under compressMinBytes, or saving under an eighth).
func compressParts(parts []string) ([]byte, bool) {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total < compressMinBytes {
		return nil, false
	}
	var buf bytes.Buffer
	buf.Grow(total/2 + 16)
	buf.WriteByte(payloadDeflate)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&buf)
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		// Writes to a bytes.Buffer do not fail.
		_, _ = w.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		_, _ = io.WriteString(w, p)
	}
	_ = w.Close()
	if buf.Len() > total-total/8 {
		return nil, false
	}
	return buf.Bytes(), true
}

// errPayload is wrapped by the errors of decompressParts.
var errPayload = errors.New("bad compressed payload")

// decompressParts returns the parts of the binary form b.
func decompressParts(b []byte) ([]string, error) {
	if len(b) == 0 || b[0] != payloadDeflate {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: empty", errPayload)
		}
		return nil, fmt.Errorf("%w: unknown format %d", errPayload, b[0])
	}
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(b[1:]), nil); err != nil {
		return nil, fmt.Errorf("%w: %v", errPayload, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPayloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPayload, err)
	}
	if len(data) > maxPayloadBytes {
		return nil, fmt.Errorf("%w: expands beyond %d bytes", errPayload, maxPayloadBytes)
	}
	var parts []string
	for len(data) > 0 {
		size, n := binary.Uvarint(data)
		if n <= 0 || size > uint64(len(data)-n) {
			return nil, fmt.Errorf("%w: part %d: bad length", errPayload, len(parts))
		}
		data = data[n:]
		parts = append(parts, string(data[:size]))
		data = data[size:]
	}
	return parts, nil
}

// payload returns the stored form of data: compressed if worth it and
// enabled, else a string.
func (p *Provider) payload(data string) types.AttributeValue {
	if !p.o.DisablePayloadCompression {
		if b, ok := compressParts([]string{data}); ok {
			return &types.AttributeValueMemberB{Value: b}
		}
	}
	return s(data)
}

// setPayload stores data as row's attrItem and returns the row's size
// uncompressed, to which limits apply: what fits must not depend on how
// well a payload compresses.
func (p *Provider) setPayload(row item, data []byte) int {
	row[attrItem] = s(string(data))
	size := itemsize.ItemSize(row)
	row[attrItem] = p.payload(string(data))
	return size
}

// payloadParts returns the parts of payload attribute v of it.
func payloadParts(it item, name string, v types.AttributeValue) ([]string, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return []string{v.Value}, nil
	case *types.AttributeValueMemberB:
		parts, err := decompressParts(v.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %q of %s: %v", provider.ErrCorruptData, name, describeKey(it), err)
		}
		return parts, nil
	default:
		return nil, fmt.Errorf("%w: attribute %q of %s is %T, not a payload", provider.ErrCorruptData, name, describeKey(it), v)
	}
}

// payloadAttr returns the single-part payload attribute name of it; ok is
// false when it is absent.
func payloadAttr(it item, name string) (string, bool, error) {
	v, present := it[name]
	if !present {
		return "", false, nil
	}
	parts, err := payloadParts(it, name, v)
	if err != nil {
		return "", false, err
	}
	if len(parts) != 1 {
		return "", false, fmt.Errorf("%w: attribute %q of %s holds %d parts, not one", provider.ErrCorruptData, name, describeKey(it), len(parts))
	}
	return parts[0], true, nil
}

// payload decodes payload attribute name of it; "" when absent.
func (d *decoder) payload(it item, name string) string {
	v, _, err := payloadAttr(it, name)
	d.keep(err)
	return v
}

// optPayload is payload, nil when the attribute is absent.
func (d *decoder) optPayload(it item, name string) *string {
	v, ok, err := payloadAttr(it, name)
	d.keep(err)
	if !ok {
		return nil
	}
	return &v
}
