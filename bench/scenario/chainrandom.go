package scenario

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/duradyn/duradyn/bench/report"
)

// ChainPayloadRandomName is the name of the ChainPayloadRandom scenario of
// n steps with payloads of bytes: "Chain1000PayloadRandom1KB".
func ChainPayloadRandomName(n, bytes int) string {
	return ChainName(n) + strings.Replace(payloadSuffix(bytes), "Payload", "PayloadRandom", 1)
}

// ChainPayloadRandom is ChainPayload with payloads of random bytes in
// base64 (what encrypted blobs, digests and tokens look like), where
// ChainPayload's hex digits compress to about half: DEFLATE finds no
// repeats in them and its Huffman codes take back only the base64
// encoding's overhead, about a fifth of the text (6 bits of information a
// character). It runs on DynamoDBSQS and on DynamoDBSQSUncompressed, as
// ChainPayload does: what such a step costs, and what compression still
// saves on it.
func ChainPayloadRandom(ctx context.Context, env *Env, n, bytes int) ([]report.Result, error) {
	note := fmt.Sprintf("activity inputs and outputs of %d base64 characters of pseudo-random bytes (%d bytes) and a step number", base64Len(bytes), randomBytes(bytes))
	return chainPayloadOn(ctx, env, ChainPayloadRandomName(n, bytes), chainPad{Steps: n, Bytes: bytes, Random: true}, note)
}

// randomFiller is the standard base64 encoding of randomBytes(n)
// pseudo-random bytes drawn from seed: text of about n bytes (exactly n
// when n is a multiple of 4) that no repeat shortens. The same seed gives
// the same text, as replay needs.
func randomFiller(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc908))
	b := make([]byte, randomBytes(n))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

// randomBytes is how many bytes base64 encodes into about n characters.
func randomBytes(n int) int { return n * 3 / 4 }

// base64Len is the length of randomFiller's text for n.
func base64Len(n int) int { return base64.StdEncoding.EncodedLen(randomBytes(n)) }
