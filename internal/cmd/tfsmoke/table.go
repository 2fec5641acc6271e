package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/parity"
	"github.com/duradyn/duradyn/tables"
)

// checkTables compares the table Terraform created with a reference table
// created by tables.Create on the same endpoint, and deletes the reference.
func checkTables(ctx context.Context, l *logger, cfg aws.Config, table string) (err error) {
	db := dynamodb.NewFromConfig(cfg)
	// Emulators create tables at once; poll them briskly.
	wait := tables.WaitOptions{MaxWait: 2 * time.Minute, MinDelay: 200 * time.Millisecond, MaxDelay: 2 * time.Second}

	tf, err := tables.Describe(ctx, db, table)
	if err != nil {
		return err
	}
	l.printf("table: Terraform table %s: %s", table, summary(tf))

	ref := table + "-reference"
	if err := tables.Create(ctx, db, ref, func(o *tables.CreateOptions) { o.Wait = wait }); err != nil {
		return err
	}
	l.printf("table: created reference table %s with tables.Create", ref)
	defer func() {
		// Delete even when the context ran out.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if derr := tables.Delete(dctx, db, ref, func(o *tables.DeleteOptions) { o.Wait = wait }); derr != nil {
			err = errors.Join(err, derr)
			return
		}
		l.printf("table: deleted reference table %s", ref)
	}()

	want, err := tables.Describe(ctx, db, ref)
	if err != nil {
		return err
	}
	l.printf("table: reference table %s: %s", ref, summary(want))
	if err := parity.TableParity(tf, want); err != nil {
		return err
	}
	l.printf("table: parity OK: same keys, %d indexes with the same keys and projections, same time-to-live attribute", len(tf.Indexes))
	return nil
}

// summary describes a schema on one line.
func summary(s tables.Schema) string {
	var b strings.Builder
	fmt.Fprintf(&b, "keys %s, %s; ", s.PartitionKey, s.SortKey)
	for _, ix := range s.Indexes {
		fmt.Fprintf(&b, "index %s on %s, %s, %s", ix.Name, ix.PartitionKey, ix.SortKey, ix.Projection)
		if len(ix.NonKeyAttributes) > 0 {
			fmt.Fprintf(&b, " %v", ix.NonKeyAttributes)
		}
		b.WriteString("; ")
	}
	if s.TTLAttribute == "" {
		b.WriteString("time to live off")
	} else {
		fmt.Fprintf(&b, "time to live on %s", s.TTLAttribute)
	}
	return b.String()
}
