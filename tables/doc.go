// Package tables is the single source of truth for the shape of duradyn's
// DynamoDB table, and creates, checks and deletes tables of that shape.
//
// The provider, the emulator-backed tests, the command-line tool and the
// Terraform module all take the table's shape from here: attribute and index
// names are the constants of this package ([AttrPK], [IndexReady], …),
// [Default] returns the whole [Schema], and testdata/schema.golden.json holds
// its JSON encoding, against which the Terraform module is checked.
//
// # Physical schema
//
// Everything lives in one table. Every key attribute, of the table and of its
// indexes, is a string (S).
//
//   - Table key: partition key [AttrPK] ("pk"), sort key [AttrSK] ("sk").
//     Every item has both; the provider decides how they are formed.
//
//   - Index [IndexReady] ("ready"): partition key [AttrReadyPK] ("rq_pk"),
//     sort key [AttrReadySK] ("rq_sk"), projection INCLUDE of [AttrVis],
//     [AttrLockUntil], [AttrTag] and [AttrSession]. It is sparse: only queue
//     rows that may be fetched carry rq_pk and rq_sk, so DynamoDB indexes
//     nothing else, and a row leaves the index as soon as the provider removes
//     those two attributes. The projected attributes are the ones a dispatcher
//     filters on, so it can discard candidates without reading the base table.
//
//   - Index [IndexInstances] ("instances"): partition key [AttrInstancesPK]
//     ("li_pk"), sort key [AttrInstancesSK] ("li_sk"), projection INCLUDE of
//     [AttrStatus], [AttrParent] and [AttrCompletedAt]. It is sparse: only
//     instance metadata rows carry li_pk and li_sk, so listing instances reads
//     none of the other rows. The projected attributes let a listing filter
//     and display instances without reading the base table.
//
//   - Time to live on [AttrExpiresAt] ("expires_at"), a number of epoch
//     seconds. Only housekeeping rows the provider writes carry it; DynamoDB
//     deletes them some time after that instant (typically within days, not
//     at the second), so readers must still check the value.
//
// Billing is not part of the shape: a table is on demand (PAY_PER_REQUEST) by
// default, or provisioned with capacity for the table and each index (see
// [CreateOptions]).
//
// # Managing tables
//
// [Create] creates a table, waits until it is ACTIVE with the SDK's
// waiter and enables time to live. [Ensure] creates the table if it is
// missing and otherwise checks the live table against [Default], failing with
// [ErrSchemaMismatch] if they differ. [Delete] deletes a table and waits until
// it is gone. [Describe] and [FromDescription] read a live table's [Schema]
// back, and [Schema.Diff] lists how two schemas differ. [Schema.CreateTableInput]
// builds the CreateTable request without sending it.
//
// These functions take the narrow [API] interface, which *dynamodb.Client
// satisfies. Every error they return starts with "tables: " and the operation
// and table name, and wraps the underlying error, so the SDK's typed errors
// (such as *types.ResourceInUseException) can be matched with errors.As.
package tables
