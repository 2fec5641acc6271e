package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/duradyn/duradyn/console"
)

// consoleNotes is printed after the console command's flags.
const consoleNotes = `The console listens on 127.0.0.1 unless --addr says otherwise; any other
address needs a token (--token or ` + console.TokenEnv + `), which every request must
then carry: open the printed address and sign in with it, or pass it as
"Authorization: Bearer <token>". It runs until interrupted (Ctrl-C), or for
--timeout when given. Actions (raise, cancel, delete) need --allow-actions.
`

func cmdConsole(a *app, fs *flag.FlagSet) func([]string) error {
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on")
	token := fs.String("token", "", "`token` every request must carry ["+console.TokenEnv+"]")
	allow := fs.Bool("allow-actions", false, "allow raising events, cancelling and deleting (default: read-only)")
	refresh := fs.Duration("refresh", 5*time.Second, "auto-refresh `interval` of the pages; 0 turns it off")
	pageSize := fs.Int("page-size", 50, "instances per list `page`")
	return func(args []string) error {
		if err := wantArgs("console", args, 0, 0, "no arguments"); err != nil {
			return err
		}
		if *token == "" {
			*token = a.getenv(console.TokenEnv)
		}
		if err := console.CheckAddress(*addr, *token); err != nil {
			return usageError("console: %v", err)
		}
		if *pageSize < 1 || *pageSize > 1000 {
			return usageError("console: --page-size %d: want 1 to 1000", *pageSize)
		}
		var err error
		if *allow {
			err = a.openForEnqueue()
		} else {
			err = a.open(false)
		}
		if err != nil {
			return err
		}
		con, err := console.New(a.client, func(o *console.Options) {
			o.AllowActions, o.Token, o.PageSize, o.Logger = *allow, *token, *pageSize, a.logger()
			o.Refresh = *refresh
			if *refresh == 0 {
				o.Refresh = -1
			}
		})
		if err != nil {
			return err
		}
		return a.serveConsole(con, *addr, *allow, *token != "")
	}
}

// serveConsole listens on addr and serves con until the command is
// interrupted, or its --timeout passes.
func (a *app) serveConsole(con *console.Console, addr string, allow, token bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	mode := "read-only"
	if allow {
		mode = "actions allowed"
	}
	how := ""
	if token {
		how = "; sign in with the token"
	}
	fmt.Fprintf(a.stdout, "duradyn console on table %s: http://%s/ (%s%s)\n", a.g.table, ln.Addr(), mode, how)
	// Commands end after a minute by default; the console runs until
	// interrupted unless --timeout was given.
	ctx := a.base
	if a.g.timeout > 0 {
		ctx = a.ctx
	}
	err = con.Serve(ctx, ln)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return err
}
