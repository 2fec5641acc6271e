package dynamo

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/provider"
)

// item is one stored row.
type item = map[string]types.AttributeValue

// Attribute names. Keys and index keys come from package tables; the rest
// are the provider's (docs/design.md §3).
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrReadyPK   = "rq_pk"
	attrReadySK   = "rq_sk"
	attrListPK    = "li_pk"
	attrListSK    = "li_sk"
	attrExpiresAt = "expires_at"

	// #META
	attrName        = "name"
	attrVersion     = "version"
	attrCurrent     = "cur"
	attrParent      = "parent"
	attrCStatus     = "cstat"
	attrCStatusVer  = "cstat_ver"
	attrStatus      = "status"
	attrCompletedAt = "completed_at"
	attrCreatedAt   = "created_at"
	attrUpdatedAt   = "updated_at"
	// Copied from the current execution's record, so fetches need not read it.
	attrExecStartedAt = "xsa"
	attrExecPinned    = "xpin"
	// How the current execution ended (endedResult).
	attrResultOutput  = "xout"
	attrResultFailure = "xfail"

	// #EXEC#
	attrOutput    = "output"
	attrStartedAt = "started_at"
	attrPinned    = "pin"
	attrPruning   = "pruning" // set while a prune removes the execution

	// #LOCK
	attrToken     = "tok"
	attrLockUntil = "lock_until"
	attrLockVer   = "ver"
	attrAttempts  = "att"
	attrBatch     = "batch"
	attrTurn      = "turn"
	attrTurnExec  = "texec"
	attrTurnDone  = "tdone"
	attrSmallDone = "sdone"
	attrSmallPast = "spast"

	// queue rows, history, KV, staging, sessions
	attrItem    = "item"
	attrKind    = "kind"
	attrVisible = "vis"
	attrSeq     = "seq"
	attrSession = "session"
	attrTag     = "tag"
	attrEvent   = "ev"
	attrTurnID  = "tid" // the large turn a turn mark names
	attrValue   = "val"
	attrKVKey   = "k"
	// The activity slot (slot.go): its state, the token whose ack filled
	// it, and the execution and id of the activity it runs.
	attrSlot     = "slot"
	attrAckToken = "atok"
	attrSlotExec = "sx"
	attrSlotAct  = "sa"
	// attrSlotWaits marks an unclaimed slot that kept the ready entry of
	// the activity before it (waitingEntry): its first claim counts no
	// attempt, the entry already holding one.
	attrSlotWaits = "sw"
	// A KV row's current-execution write: a value and its time, or a clear.
	attrDeltaValue   = "dval"
	attrDeltaTS      = "dts"
	attrDeltaCleared = "dclr"
	attrChild        = "child"
	attrTS           = "ts"
	attrActions      = "acts"
	attrOwner        = "owner"
	attrLastSeen     = "last_activity"
)

// s, n and nu are string and number attributes.
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func nu(v uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(v, 10)}
}

// key is the primary key of a row.
func key(pk, sk string) item { return item{attrPK: s(pk), attrSK: s(sk)} }

// strAttr returns a string attribute; ok is false when it is absent.
func strAttr(it item, name string) (string, bool, error) {
	v, present := it[name]
	if !present {
		return "", false, nil
	}
	sv, isS := v.(*types.AttributeValueMemberS)
	if !isS {
		return "", false, fmt.Errorf("%w: attribute %q of %s is %T, not a string", provider.ErrCorruptData, name, describeKey(it), v)
	}
	return sv.Value, true, nil
}

// intAttr returns a number attribute as int64; 0 when absent.
func intAttr(it item, name string) (int64, error) {
	v, present := it[name]
	if !present {
		return 0, nil
	}
	nv, isN := v.(*types.AttributeValueMemberN)
	if !isN {
		return 0, fmt.Errorf("%w: attribute %q of %s is %T, not a number", provider.ErrCorruptData, name, describeKey(it), v)
	}
	i, err := strconv.ParseInt(nv.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: attribute %q of %s: %v", provider.ErrCorruptData, name, describeKey(it), err)
	}
	return i, nil
}

// uintAttr returns a number attribute as uint64; 0 when absent.
func uintAttr(it item, name string) (uint64, error) {
	i, err := intAttr(it, name)
	if err != nil {
		return 0, err
	}
	if i < 0 {
		return 0, fmt.Errorf("%w: attribute %q of %s is negative", provider.ErrCorruptData, name, describeKey(it))
	}
	return uint64(i), nil
}

// describeKey names a row in error messages.
func describeKey(it item) string {
	pk, _ := it[attrPK].(*types.AttributeValueMemberS)
	sk, _ := it[attrSK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return "a row"
	}
	return strconv.Quote(pk.Value) + "/" + strconv.Quote(sk.Value)
}

// decoder reads attributes, keeping the first failure for one check.
type decoder struct{ err error }

func (d *decoder) str(it item, name string) string {
	v, _, err := strAttr(it, name)
	d.keep(err)
	return v
}

func (d *decoder) optStr(it item, name string) *string {
	v, ok, err := strAttr(it, name)
	d.keep(err)
	if !ok {
		return nil
	}
	return &v
}

func (d *decoder) int(it item, name string) int64 {
	v, err := intAttr(it, name)
	d.keep(err)
	return v
}

func (d *decoder) uint(it item, name string) uint64 {
	v, err := uintAttr(it, name)
	d.keep(err)
	return v
}

func (d *decoder) keep(err error) {
	if d.err == nil && err != nil {
		d.err = err
	}
}
