package dynamo

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// Lock tokens are opaque to callers. Each carries a random part, compared
// with the stored lock, and the key of what it locks, so that acks and
// renewals need no lookup. One that does not parse or match is invalid.

const (
	orchTokenPrefix = "lock_o."
	workTokenPrefix = "lock_w."
	tokenRandomLen  = 16
)

var errBadToken = errors.New("malformed lock token")

// orchToken identifies one instance lock.
type orchToken struct {
	instance string
	ver      uint64 // the lock row's version the fetch wrote (for a kept lock, the one its ack expected)
}

// workToken identifies one worker-row lock.
type workToken struct {
	instance    string
	executionID uint64
	activityID  uint64
	session     *string // nil for none
	owner       string  // the session owner the fetch claimed it for
	seq         string  // part of the row's ready-index key
	// slot is set when the row is the instance's activity slot (slot.go);
	// executionID and activityID are then 0.
	slot bool
}

// newOrchToken returns a fresh token for t.
func newOrchToken(t orchToken) string {
	b := randomBytes()
	b = binary.AppendUvarint(b, t.ver)
	b = appendString(b, t.instance)
	return orchTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseOrchToken decodes a token made by newOrchToken.
func parseOrchToken(token string) (orchToken, error) {
	b, err := tokenBytes(token, orchTokenPrefix)
	if err != nil {
		return orchToken{}, err
	}
	var t orchToken
	if t.ver, b, err = readUvarint(b); err != nil {
		return t, err
	}
	if t.instance, b, err = readString(b); err != nil {
		return t, err
	}
	if len(b) != 0 {
		return t, errBadToken
	}
	return t, nil
}

// newWorkToken returns a fresh token for t.
func newWorkToken(t workToken) string {
	b := randomBytes()
	b = binary.AppendUvarint(b, t.executionID)
	b = binary.AppendUvarint(b, t.activityID)
	b = appendString(b, t.instance)
	b = appendString(b, t.seq)
	switch {
	case t.session != nil:
		b = append(b, 1)
		b = appendString(b, *t.session)
		b = appendString(b, t.owner)
	case t.slot:
		b = append(b, 2)
	default:
		b = append(b, 0)
	}
	return workTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseWorkToken decodes a token made by newWorkToken.
func parseWorkToken(token string) (workToken, error) {
	b, err := tokenBytes(token, workTokenPrefix)
	if err != nil {
		return workToken{}, err
	}
	var t workToken
	if t.executionID, b, err = readUvarint(b); err != nil {
		return t, err
	}
	if t.activityID, b, err = readUvarint(b); err != nil {
		return t, err
	}
	if t.instance, b, err = readString(b); err != nil {
		return t, err
	}
	if t.seq, b, err = readString(b); err != nil {
		return t, err
	}
	if len(b) == 0 {
		return t, errBadToken
	}
	form := b[0]
	b = b[1:]
	switch form {
	case 0:
	case 2:
		t.slot = true
	case 1:
		var session string
		if session, b, err = readString(b); err != nil {
			return t, err
		}
		t.session = &session
		if t.owner, b, err = readString(b); err != nil {
			return t, err
		}
	default:
		return t, errBadToken
	}
	if len(b) != 0 {
		return t, errBadToken
	}
	return t, nil
}

func randomBytes() []byte {
	b := make([]byte, tokenRandomLen, 64)
	rand.Read(b) // never fails (crypto/rand)
	return b
}

func tokenBytes(token, prefix string) ([]byte, error) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return nil, errBadToken
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) < tokenRandomLen {
		return nil, errBadToken
	}
	return b[tokenRandomLen:], nil
}

func appendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func readUvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, errBadToken
	}
	return v, b[n:], nil
}

func readString(b []byte) (string, []byte, error) {
	l, b, err := readUvarint(b)
	if err != nil || l > uint64(len(b)) {
		return "", nil, errBadToken
	}
	return string(b[:l]), b[l:], nil
}
