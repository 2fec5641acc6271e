package queues

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// messageVersion is the "v" field of every message body. It changes only
// when a change would make older receivers misread a message; added fields
// keep it.
const messageVersion = 1

// maxBodyBytes bounds one message body and the bodies of one
// SendMessageBatch call together (the classic SQS limit of 256 KiB, which
// every emulator enforces).
const maxBodyBytes = 256 * 1024

// message is the JSON body of one SQS signal. Every byte of it is ASCII: the
// instance id, which may hold any Unicode and even NUL (which SQS refuses in
// bodies), travels base64-encoded.
type message struct {
	Version     int    `json:"v"`
	Kind        string `json:"kind"`
	Shard       int    `json:"shard"`
	InstanceB64 string `json:"instance_b64,omitempty"`
	WorkB64     string `json:"work_b64,omitempty"`
	ClaimB64    string `json:"claim_b64,omitempty"`
	VisibleAtMs int64  `json:"visible_at_ms,omitempty"`
	From        string `json:"from,omitempty"`
	Hops        int    `json:"hops,omitempty"`
	DeclinedBy  string `json:"declined_by,omitempty"`
}

// encodeSignal returns the message body of sig sent by the [Signals] whose
// id is from. A body over the SQS size
// limit (an instance id of about 190 KB) loses its instance: the signal still
// wakes, only the next lookup is less targeted.
func encodeSignal(sig Signal, from string) string {
	m := message{Version: messageVersion, Kind: sig.Kind.String(), Shard: sig.Shard, From: from, Hops: sig.hops, DeclinedBy: sig.declinedBy}
	if sig.Instance != "" {
		m.InstanceB64 = base64.StdEncoding.EncodeToString([]byte(sig.Instance))
	}
	if sig.Work != "" {
		m.WorkB64 = base64.StdEncoding.EncodeToString([]byte(sig.Work))
	}
	if sig.Claim != "" {
		m.ClaimB64 = base64.StdEncoding.EncodeToString([]byte(sig.Claim))
	}
	if !sig.VisibleAt.IsZero() {
		m.VisibleAtMs = visibleAtMs(sig.VisibleAt)
	}
	b, err := json.Marshal(m)
	if err != nil {
		// Unreachable: the struct holds only strings and integers.
		return fmt.Sprintf(`{"v":%d,"kind":%q,"shard":%d}`, messageVersion, sig.Kind.String(), sig.Shard)
	}
	if len(b) > maxBodyBytes {
		m.InstanceB64, m.WorkB64, m.ClaimB64 = "", "", ""
		b, _ = json.Marshal(m)
	}
	return string(b)
}

// decodeSignal parses a message body and returns the signal and the id of
// its sender. The signal's Kind is the one the body names, or 0 if it names
// none this version knows; the receiving queue decides the kind in the end.
func decodeSignal(body string) (sig Signal, from string, err error) {
	var m message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return Signal{}, "", fmt.Errorf("undecodable signal body: %w", err)
	}
	if m.Version != messageVersion {
		return Signal{}, "", fmt.Errorf("signal body version %d, this version reads %d", m.Version, messageVersion)
	}
	if m.Shard < 0 {
		return Signal{}, "", fmt.Errorf("signal body with negative shard %d", m.Shard)
	}
	if m.Hops < 0 {
		return Signal{}, "", fmt.Errorf("signal body with negative hops %d", m.Hops)
	}
	sig = Signal{Kind: parseKind(m.Kind), Shard: m.Shard, hops: m.Hops, declinedBy: m.DeclinedBy}
	if m.InstanceB64 != "" {
		id, err := base64.StdEncoding.DecodeString(m.InstanceB64)
		if err != nil {
			return Signal{}, "", fmt.Errorf("signal body instance: %w", err)
		}
		sig.Instance = string(id)
	}
	if m.WorkB64 != "" {
		work, err := base64.StdEncoding.DecodeString(m.WorkB64)
		if err != nil {
			return Signal{}, "", fmt.Errorf("signal body work: %w", err)
		}
		sig.Work = string(work)
	}
	if m.ClaimB64 != "" {
		claim, err := base64.StdEncoding.DecodeString(m.ClaimB64)
		if err != nil {
			return Signal{}, "", fmt.Errorf("signal body claim: %w", err)
		}
		sig.Claim = string(claim)
	}
	if m.VisibleAtMs != 0 {
		sig.VisibleAt = time.UnixMilli(m.VisibleAtMs)
	}
	return sig, m.From, nil
}
