package console_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/duradyn/duradyn/console"
	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/provider/memprovider"
)

// Serve the console of a store on loopback, read-only, and fetch its list
// of instances. With dynamo.NewFromEnv instead of memprovider.New it shows
// a deployment's table; the duradyn command's "console" does that.
func Example() {
	client := durable.NewClient(memprovider.New())
	con, err := console.New(client, func(o *console.Options) {
		o.AllowActions = false // read-only: no raise, cancel or delete
	})
	if err != nil {
		log.Fatal(err)
	}
	addr := "127.0.0.1:0" // any port; anything beyond loopback needs a token
	if err := console.CheckAddress(addr, ""); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- con.Serve(ctx, ln) }()

	res, err := http.Get("http://" + ln.Addr().String() + "/instances")
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status, res.Header.Get("X-Frame-Options"))
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output: 200 OK DENY
}
