package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

func cmdTable(a *app, fs *flag.FlagSet) func([]string) error {
	return func(args []string) error {
		if err := wantArgs("table", args, 1, 1, "create or ensure"); err != nil {
			return err
		}
		op := args[0]
		if op != "create" && op != "ensure" {
			return usageError("table: unknown operation %q: want create or ensure", op)
		}
		if a.g.table == "" {
			return usageError("no table: set --table or DURADYN_TABLE")
		}
		cfg, err := a.awsConfig()
		if err != nil {
			return err
		}
		a.db = a.dynamoClient(cfg)
		if op == "create" {
			err = tables.Create(a.ctx, a.db, a.g.table)
		} else {
			err = a.ensureTable()
		}
		var inUse *types.ResourceInUseException
		var mismatch *tables.MismatchError
		switch {
		case errors.As(err, &inUse):
			return fmt.Errorf("table %s already exists (\"duradyn table ensure\" checks it)", a.g.table)
		case errors.As(err, &mismatch):
			return fmt.Errorf("table %s does not match duradyn's schema and was left unchanged: %s", a.g.table, strings.Join(mismatch.Differences, "; "))
		case err != nil:
			return a.awsError(err)
		}
		// The table's layout: the stored one, else the shard count given
		// (or the default), recorded now.
		if err := a.newProvider(cfg); err != nil {
			return err
		}
		if err := a.p.CheckLayout(a.ctx); err != nil {
			return a.tableError(err)
		}
		l := a.p.Layout()
		if a.jsonOut() {
			return a.printJSON(map[string]any{"table": a.g.table, "shards": l.Shards, "layout_version": l.Version, "created": op == "create"})
		}
		verb := map[string]string{"create": "created", "ensure": "ready"}[op]
		fmt.Fprintf(a.stdout, "table %s %s: %d shards, layout version %d\n", a.g.table, verb, l.Shards, l.Version)
		return nil
	}
}

// ensureTable checks the table as tables.Ensure does, but never creates
// it: a mistyped name must not make a real table.
func (a *app) ensureTable() error {
	_, err := a.db.DescribeTable(a.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(a.g.table)})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return notFoundError("table %s does not exist; \"duradyn table create\" (or the Terraform module) creates it", a.g.table)
	}
	if err != nil {
		return err
	}
	return tables.Ensure(a.ctx, a.db, a.g.table)
}
